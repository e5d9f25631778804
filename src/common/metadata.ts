/**
 * The server and model metadata records (KServe v2 `GET /v2`, `GET /v2/models/<m>`; the gRPC ServerMetadata
 * and ModelMetadata answers in the same field names): the core answers them, the client returns them.
 * Written once here.
 */
import type { DataType } from './datatype.js';

export interface TensorMetadata {
  name: string;
  datatype: DataType;
  /** -1 for variable dimensions. */
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}
