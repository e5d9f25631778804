/**
 * Which typed array holds each fixed-size datatype (FP16 and BF16 as their 16-bit patterns, BOOL as 0/1
 * bytes): the one table the client and the model SDK read tensors through.
 */
import type { DataType } from './datatype.js';

export type TypedArray =
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

/** Every datatype except BYTES has a fixed element size and a typed array. */
export type FixedDataType = Exclude<DataType, 'BYTES'>;

/** The typed array a datatype is read into. FP16 and BF16 are their bit patterns; BOOL is 0/1 bytes. */
export interface TypedArrayOf {
  BOOL: Uint8Array;
  UINT8: Uint8Array;
  UINT16: Uint16Array;
  UINT32: Uint32Array;
  UINT64: BigUint64Array;
  INT8: Int8Array;
  INT16: Int16Array;
  INT32: Int32Array;
  INT64: BigInt64Array;
  FP16: Uint16Array;
  FP32: Float32Array;
  FP64: Float64Array;
  BF16: Uint16Array;
}

export interface TypedArrayConstructor {
  new (length: number): TypedArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
}

/** The constructor of each datatype's typed array. */
export const TYPED_ARRAY_OF: Readonly<Record<FixedDataType, TypedArrayConstructor>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};
