/**
 * The core's request and response types: what frontends build from the wire and read back. No HTTP or
 * gRPC here. Shapes are plain numbers (int64 dims beyond 2^53 are rejected at the edge).
 */
import type { DataType } from '../common/datatype.js';
import type { Tensor } from '../common/tensor.js';
import type { ParameterValue } from '../backend-api/backend.js';

export type { ParameterValue };
export type Parameters = Record<string, ParameterValue>;

export interface InferInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** Row-major bytes (BYTES: length-prefixed elements). */
  readonly data: Buffer;
  readonly parameters?: Readonly<Parameters>;
}

export interface RequestedOutput {
  readonly name: string;
  /** e.g. `classification` (top-N count), `binary_data` (frontend-only, ignored by the core). */
  readonly parameters?: Readonly<Parameters>;
}

export interface InferenceRequest {
  readonly modelName: string;
  /** '' or undefined selects the version policy's default (highest ready version). */
  readonly modelVersion?: string;
  readonly id?: string;
  readonly inputs: readonly InferInput[];
  /** Omitted → every output of the model. */
  readonly outputs?: readonly RequestedOutput[];
  /** Request parameters: sequence_id, sequence_start, sequence_end, priority, timeout, custom keys. */
  readonly parameters?: Readonly<Parameters>;
  /** Aborted when the client disconnects or cancels. */
  readonly signal?: AbortSignal;
}

export interface InferenceResponse {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly outputs: readonly Tensor[];
  readonly parameters: Readonly<Parameters>;
  /** Last response of the request. A non-decoupled model sends exactly one, final. */
  readonly final: boolean;
}

export interface TensorMetadata {
  name: string;
  datatype: DataType;
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

export type ModelVersionState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface RepositoryIndexEntry {
  name: string;
  /** Absent for a model with no version loaded or attempted. */
  version?: string;
  state: ModelVersionState;
  reason: string;
}

export interface LoadOptions {
  /** ModelConfig JSON that replaces config.pbtxt for this load. */
  readonly config?: string;
  /** `file:<version>/<path>` overrides: relative path → content. Require `config`. */
  readonly files?: ReadonlyMap<string, Buffer>;
}

export interface StatisticDuration {
  count: number;
  ns: number;
}

export interface InferStatistics {
  success: StatisticDuration;
  fail: StatisticDuration;
  queue: StatisticDuration;
  compute_input: StatisticDuration;
  compute_infer: StatisticDuration;
  compute_output: StatisticDuration;
  cache_hit: StatisticDuration;
  cache_miss: StatisticDuration;
}

export interface InferBatchStatistics {
  batch_size: number;
  compute_input: StatisticDuration;
  compute_infer: StatisticDuration;
  compute_output: StatisticDuration;
}

/** Field names as in Triton's statistics JSON (A.9 of TRITON-FACTS). */
export interface ModelStatistics {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: InferStatistics;
  batch_stats: InferBatchStatistics[];
  memory_usage: { type: string; id: number; byte_size: number }[];
  response_stats: Record<string, unknown>;
}
