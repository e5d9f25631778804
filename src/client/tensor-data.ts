/**
 * Tensor values ↔ the wire bytes of the binary tensor data extension (row-major, little-endian; BOOL one
 * byte; BYTES u32-LE length-prefixed elements). InferInput keeps every tensor in this wire form whatever
 * the protocol, and InferResult reads every output from it, so JSON data, gRPC typed contents and raw
 * bytes all meet here. Typed arrays of the tensor's own type are used as views, without a copy.
 */
import { isUtf8 } from 'node:buffer';
import { endianness } from 'node:os';
import { byteSizeOf, type DataType } from '../common/datatype.js';
import { joinBytesElements, splitBytesElements } from '../common/tensor.js';
import {
  TYPED_ARRAY_OF,
  type FixedDataType,
  type TypedArray,
  type TypedArrayOf,
} from '../common/typed-arrays.js';
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from '../common/half.js';

// Typed arrays are views in host byte order while the wire is little-endian.
if (endianness() !== 'LE') throw new Error('nereid-server/client needs a little-endian host');

export type { FixedDataType, TypedArray, TypedArrayOf } from '../common/typed-arrays.js';

/** The plain array a datatype is read into (FP16/BF16 as numbers, BYTES as UTF-8 strings). */
export interface ArrayOf {
  BOOL: boolean[];
  UINT8: number[];
  UINT16: number[];
  UINT32: number[];
  UINT64: bigint[];
  INT8: number[];
  INT16: number[];
  INT32: number[];
  INT64: bigint[];
  FP16: number[];
  FP32: number[];
  FP64: number[];
  BF16: number[];
  BYTES: string[];
}

export type TensorArray = ArrayOf[DataType];

/**
 * What InferInput.setData accepts: a typed array (of the tensor's own type it is sent without a copy;
 * Uint16Array for FP16/BF16 means bit patterns), or a flat row-major array of numbers, bigints, booleans,
 * or, for BYTES, strings and byte arrays.
 */
export type TensorValues =
  TypedArray | readonly number[] | readonly bigint[] | readonly boolean[] | readonly (string | Uint8Array)[];

const INT_RANGE: Readonly<Partial<Record<DataType, readonly [number, number]>>> = {
  UINT8: [0, 0xff],
  UINT16: [0, 0xffff],
  UINT32: [0, 0xffffffff],
  INT8: [-0x80, 0x7f],
  INT16: [-0x8000, 0x7fff],
  INT32: [-0x80000000, 0x7fffffff],
};

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

export const isFixedDataType = (d: DataType): d is FixedDataType => d !== 'BYTES';

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 20 ? v.slice(0, 20) + '…' : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `a ${v.length}-byte array`;
  return String(v);
}

function badElement(datatype: DataType, index: number, v: unknown, what: string): never {
  throw new TypeError(`${what}: element ${index} (${describe(v)}) is not a valid ${datatype} value`);
}

function bufferOf(ta: TypedArray | Uint8Array): Buffer {
  return Buffer.from(ta.buffer, ta.byteOffset, ta.byteLength);
}

function toBigInt(datatype: DataType, index: number, v: unknown, what: string): bigint {
  let b: bigint;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
  else return badElement(datatype, index, v, what);
  const [lo, hi] = datatype === 'INT64' ? [INT64_MIN, INT64_MAX] : [0n, UINT64_MAX];
  if (b < lo || b > hi) badElement(datatype, index, v, what);
  return b;
}

function toNumber(datatype: DataType, index: number, v: unknown, what: string): number {
  const range = INT_RANGE[datatype];
  if (range) {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < range[0] || n > range[1]) {
      badElement(datatype, index, v, what);
    }
    return n;
  }
  if (typeof v !== 'number') badElement(datatype, index, v, what);
  return v;
}

function bytesElement(index: number, v: unknown, what: string): Uint8Array | string {
  if (typeof v === 'string' || v instanceof Uint8Array) return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return badElement('BYTES', index, v, what);
}

/**
 * Encodes values into the wire form of `datatype`. `what` names the tensor in error messages. A typed
 * array of the datatype's own type becomes a view of the same memory (no copy); anything else is
 * converted element by element with range checks (no silent wrapping or truncation).
 */
export function encodeValues(datatype: DataType, values: ArrayLike<unknown>, what: string): Buffer {
  if (datatype === 'BYTES') {
    const elements: (Uint8Array | string)[] = new Array<Uint8Array | string>(values.length);
    for (let i = 0; i < values.length; i++) elements[i] = bytesElement(i, values[i], what);
    return joinBytesElements(elements);
  }
  const Ctor = TYPED_ARRAY_OF[datatype];
  if (values instanceof Ctor) return bufferOf(values);
  const n = values.length;
  switch (datatype) {
    case 'BOOL': {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (v === true || v === 1) out[i] = 1;
        else if (v !== false && v !== 0) badElement(datatype, i, v, what);
      }
      return bufferOf(out);
    }
    case 'INT64':
    case 'UINT64': {
      const out = datatype === 'INT64' ? new BigInt64Array(n) : new BigUint64Array(n);
      for (let i = 0; i < n; i++) out[i] = toBigInt(datatype, i, values[i], what);
      return bufferOf(out);
    }
    case 'FP16':
    case 'BF16': {
      const conv = datatype === 'FP16' ? toFloat16Bits : toBFloat16Bits;
      const out = new Uint16Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== 'number') badElement(datatype, i, v, what);
        out[i] = conv(v);
      }
      return bufferOf(out);
    }
    default: {
      const out = new Ctor(n) as Exclude<TypedArray, BigInt64Array | BigUint64Array>;
      for (let i = 0; i < n; i++) out[i] = toNumber(datatype, i, values[i], what);
      return bufferOf(out);
    }
  }
}

/** Number of elements in wire-form data; throws on a size that is not a whole number of elements. */
export function countElements(datatype: DataType, data: Buffer): number {
  if (datatype === 'BYTES') return splitBytesElements(data).length;
  const size = byteSizeOf(datatype);
  if (data.length % size !== 0) {
    throw new RangeError(`${data.length} bytes is not a whole number of ${datatype} elements`);
  }
  return data.length / size;
}

/** A typed array over wire-form data: a view when the bytes are aligned, otherwise an aligned copy. */
export function decodeTypedArray<D extends FixedDataType>(datatype: D, data: Buffer): TypedArrayOf[D] {
  const Ctor = TYPED_ARRAY_OF[datatype];
  const size = Ctor.BYTES_PER_ELEMENT;
  const n = countElements(datatype, data);
  if (data.byteOffset % size === 0) return new Ctor(data.buffer, data.byteOffset, n) as TypedArrayOf[D];
  // Misaligned (binary blobs follow a JSON header of any length): copy once into aligned memory.
  const out = new Ctor(n);
  new Uint8Array(out.buffer).set(data);
  return out as TypedArrayOf[D];
}

/** BYTES elements as views into `data` (no copies). */
export function decodeBytesElements(data: Buffer): Buffer[] {
  return splitBytesElements(data);
}

/** Wire-form data as a plain array (see ArrayOf). */
export function decodeArray<D extends DataType>(datatype: D, data: Buffer): ArrayOf[D];
export function decodeArray(datatype: DataType, data: Buffer): TensorArray {
  if (datatype === 'BYTES') return splitBytesElements(data).map((b) => b.toString('utf8'));
  const ta = decodeTypedArray(datatype, data);
  switch (datatype) {
    case 'BOOL':
      return Array.from(ta as Uint8Array, (x) => x !== 0);
    case 'FP16':
      return Array.from(ta as Uint16Array, fromFloat16Bits);
    case 'BF16':
      return Array.from(ta as Uint16Array, fromBFloat16Bits);
    case 'INT64':
    case 'UINT64':
      return Array.from(ta as BigInt64Array | BigUint64Array);
    default:
      return Array.from(ta as Exclude<TypedArray, BigInt64Array | BigUint64Array>);
  }
}

/**
 * Wire-form data as JSON tensor `data` (numbers, bigints kept exact, booleans, strings). FP16/BF16 have
 * no JSON form and BYTES elements must be UTF-8 text: callers send those as binary instead.
 */
export function jsonValues(
  datatype: DataType,
  data: Buffer,
  what: string,
): (number | bigint | boolean | string)[] {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw new TypeError(`${what}: ${datatype} data cannot be sent as JSON; send it as binary data`);
  }
  if (datatype === 'BYTES') {
    return splitBytesElements(data).map((b, i) => {
      if (!isUtf8(b)) {
        throw new TypeError(
          `${what}: BYTES element ${i} is not UTF-8 text and cannot be sent as JSON; send it as binary data`,
        );
      }
      return b.toString('utf8');
    });
  }
  return decodeArray(datatype, data);
}

/** Flattens nested JSON tensor data (row-major), bounded in depth. */
export function flattenJsonData(data: unknown, what: string): unknown[] {
  if (!Array.isArray(data)) return [data];
  if (!data.some(Array.isArray)) return data;
  const out: unknown[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 100) throw new RangeError(`${what}: tensor data nested too deeply`);
    if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else out.push(v);
  };
  walk(data, 0);
  return out;
}
