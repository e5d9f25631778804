/**
 * Tensor data in JSON, both ways: a (nested or flat) JSON `data` array → the row-major little-endian bytes
 * the core expects, and an output tensor's bytes → a flat JSON array text. Every element is checked
 * (type, integer range): a value that does not fit its datatype is rejected, never wrapped or rounded.
 * FP16/BF16 have no JSON form (Triton's rule); they travel only as binary data.
 */
import { isUtf8 } from 'node:buffer';
import { endianness } from 'node:os';
import type { DataType } from '../../common/datatype.js';
import { byteSizeOf } from '../../common/datatype.js';
import { internal, invalidArg, type NereidError } from '../../common/errors.js';
import { splitBytesElements } from '../../common/tensor.js';
import {
  describeJson,
  isOverflowedNumber,
  isRoundedInteger,
  roundedIntegerError,
  type JsonIn,
} from './json.js';

/** Triton's HTTP_MAX_JSON_NESTING_DEPTH: the `data` array is depth 0; nothing may sit at depth 100. */
export const MAX_JSON_NESTING_DEPTH = 100;

// Typed arrays use the host byte order; the wire format is little-endian.
if (endianness() !== 'LE') throw new Error('the HTTP tensor codec requires a little-endian host');

const TWO32 = 4294967296;

interface IntRange {
  readonly min: number;
  readonly max: number;
}
const INT_RANGES: Partial<Record<DataType, IntRange>> = {
  UINT8: { min: 0, max: 0xff },
  UINT16: { min: 0, max: 0xffff },
  UINT32: { min: 0, max: 0xffffffff },
  INT8: { min: -0x80, max: 0x7f },
  INT16: { min: -0x8000, max: 0x7fff },
  INT32: { min: -0x80000000, max: 0x7fffffff },
};
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

function nestingError(): never {
  throw invalidArg(
    `Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_NESTING_DEPTH})`,
  );
}

/** Calls `visit` for every scalar of a nested data array in row-major order; enforces the depth limit. */
function forEachScalar(arr: readonly JsonIn[], depth: number, visit: (v: JsonIn) => void): void {
  if (depth >= MAX_JSON_NESTING_DEPTH) nestingError();
  const childDepth = depth + 1;
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i];
    if (Array.isArray(v)) forEachScalar(v, childDepth, visit);
    else if (childDepth >= MAX_JSON_NESTING_DEPTH) nestingError();
    else visit(v);
  }
}

function countMismatch(input: string, shape: readonly number[], expected: number, got: number): never {
  throw invalidArg(
    `unexpected number of elements in 'data' for input '${input}': shape [${shape.join(',')}] has ` +
      `${expected} elements, 'data' has ${got}`,
  );
}

function tooLarge(input: string, byteSize: number, maxInputSize: number): never {
  throw invalidArg(
    `JSON input '${input}' has a byte_size (${byteSize} bytes) that exceeds the maximum allowed value of ` +
      `${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
  );
}

function elementError(input: string, index: number, v: JsonIn, expected: string): NereidError {
  return invalidArg(
    `Unable to parse 'data' for input '${input}': element ${index} is ${describeJson(v)}, expected ${expected}`,
  );
}

function badElement(input: string, index: number, v: JsonIn, expected: string): never {
  throw elementError(input, index, v, expected);
}

export interface JsonTensorSpec {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** Element count of `shape` (already validated). */
  readonly elementCount: number;
}

/**
 * Converts JSON tensor data to its wire bytes (BYTES: length-prefixed UTF-8 elements). The element count
 * must equal the shape's; the byte size must not exceed `maxInputSize`. Unless `exact` (the data came from
 * the exact parser), an INT64/UINT64 element beyond 2^53, or an FP32/FP64 one JSON.parse made Infinity,
 * throws a roundedIntegerError.
 */
export function jsonToTensorData(
  spec: JsonTensorSpec,
  data: readonly JsonIn[],
  maxInputSize: number,
  exact = false,
): Buffer {
  const { name, datatype, elementCount } = spec;
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw invalidArg(
      `receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${name}`,
    );
  }
  if (datatype === 'BYTES') return jsonToBytes(spec, data, maxInputSize);

  const byteSize = elementCount * byteSizeOf(datatype);
  if (byteSize > maxInputSize) tooLarge(name, byteSize, maxInputSize);
  const ab = new ArrayBuffer(byteSize);
  let i = 0;
  let visit: (v: JsonIn) => void;

  switch (datatype) {
    case 'BOOL': {
      const out = new Uint8Array(ab);
      visit = (v) => {
        if (v !== true && v !== false) badElement(name, i, v, 'true or false');
        if (i < elementCount) out[i] = v ? 1 : 0;
        i++;
      };
      break;
    }
    case 'FP32':
    case 'FP64': {
      const out = datatype === 'FP32' ? new Float32Array(ab) : new Float64Array(ab);
      visit = (v) => {
        let x: number;
        if (typeof v === 'number') {
          // Infinity from JSON.parse was a number too big for a double, which Triton refuses.
          if (!exact && isOverflowedNumber(v))
            throw roundedIntegerError(elementError(name, i, v, 'a number'));
          x = v;
        } else if (typeof v === 'bigint') x = Number(v);
        else badElement(name, i, v, 'a number');
        if (i < elementCount) out[i] = x;
        i++;
      };
      break;
    }
    case 'INT64':
    case 'UINT64': {
      const words = new Uint32Array(ab);
      const big = new BigInt64Array(ab);
      const unsigned = datatype === 'UINT64';
      const what = unsigned ? 'an integer in [0, 18446744073709551615]' : 'an integer in [-2^63, 2^63-1]';
      visit = (v) => {
        if (typeof v === 'number') {
          if (!exact && isRoundedInteger(v)) throw roundedIntegerError(elementError(name, i, v, what));
          if (!Number.isSafeInteger(v) || (unsigned && v < 0)) badElement(name, i, v, what);
          if (i < elementCount) {
            const hi = Math.floor(v / TWO32);
            words[2 * i] = v - hi * TWO32;
            words[2 * i + 1] = hi >>> 0;
          }
        } else if (typeof v === 'bigint') {
          if (unsigned ? v < 0n || v > UINT64_MAX : v < INT64_MIN || v > INT64_MAX)
            badElement(name, i, v, what);
          if (i < elementCount) big[i] = BigInt.asIntN(64, v);
        } else {
          badElement(name, i, v, what);
        }
        i++;
      };
      break;
    }
    default: {
      const range = INT_RANGES[datatype]!;
      const out = typedArrayFor(datatype, ab);
      const what = `an integer in [${range.min}, ${range.max}]`;
      visit = (v) => {
        if (typeof v !== 'number' || !Number.isInteger(v) || v < range.min || v > range.max) {
          badElement(name, i, v, what);
        }
        if (i < elementCount) out[i] = v;
        i++;
      };
    }
  }
  forEachScalar(data, 0, visit);
  if (i !== elementCount) countMismatch(name, spec.shape, elementCount, i);
  return Buffer.from(ab);
}

function typedArrayFor(datatype: DataType, ab: ArrayBuffer): { [i: number]: number } {
  switch (datatype) {
    case 'UINT8':
      return new Uint8Array(ab);
    case 'UINT16':
      return new Uint16Array(ab);
    case 'UINT32':
      return new Uint32Array(ab);
    case 'INT8':
      return new Int8Array(ab);
    case 'INT16':
      return new Int16Array(ab);
    case 'INT32':
      return new Int32Array(ab);
    default:
      throw internal(`no integer view for ${datatype}`);
  }
}

function jsonToBytes(spec: JsonTensorSpec, data: readonly JsonIn[], maxInputSize: number): Buffer {
  const { name, elementCount } = spec;
  const strings: string[] = [];
  let byteSize = 0;
  forEachScalar(data, 0, (v) => {
    if (typeof v !== 'string') badElement(name, strings.length, v, 'a string');
    byteSize += 4 + Buffer.byteLength(v, 'utf8');
    strings.push(v);
  });
  if (strings.length !== elementCount) countMismatch(name, spec.shape, elementCount, strings.length);
  if (byteSize > maxInputSize) tooLarge(name, byteSize, maxInputSize);
  const out = Buffer.allocUnsafe(byteSize);
  let off = 0;
  for (const s of strings) {
    const len = out.write(s, off + 4, 'utf8');
    out.writeUInt32LE(len, off);
    off += 4 + len;
  }
  return out;
}

export function shapeMismatch(output: string): never {
  throw internal(
    `Failed to write 'data' field: output tensor shape does not match size of output for '${output}'`,
  );
}

/** The bytes as an ArrayBuffer + offset typed arrays can use; copies only when the view is misaligned. */
function alignedView(data: Buffer, elementSize: number): { ab: ArrayBuffer; off: number } {
  if (data.byteOffset % elementSize === 0 && data.buffer instanceof ArrayBuffer) {
    return { ab: data.buffer, off: data.byteOffset };
  }
  return { ab: new Uint8Array(data).buffer, off: 0 }; // misaligned: one copy so a typed array can read it
}

/**
 * Floats as JSON numbers (shortest text that reads back as the same double, like Triton's writer).
 * JSON.stringify on a plain array is the fastest native formatter, but it writes non-finite values as
 * null; those arrays take the slower join, which prints NaN / Infinity / -Infinity as Triton does.
 */
function floatsJson(values: Float32Array | Float64Array): string {
  let plain = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v) || (v === 0 && 1 / v < 0)) {
      plain = false;
      break;
    }
  }
  if (plain) return JSON.stringify(Array.from(values));
  // NaN/Infinity as Triton writes them, and -0 keeps its sign (JSON.stringify and join print it as 0).
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    parts[i] = v === 0 && 1 / v < 0 ? '-0.0' : String(v);
  }
  return '[' + parts.join(',') + ']';
}

/**
 * An output tensor's data as JSON array text (flat, row-major), or undefined when the tensor has no JSON
 * form (FP16, BF16, or BYTES elements that are not valid UTF-8) and must be sent as binary data.
 * Throws INTERNAL when the data does not match the shape.
 */
export function tensorDataToJson(
  name: string,
  datatype: DataType,
  data: Buffer,
  elementCount: number,
): string | undefined {
  if (datatype === 'FP16' || datatype === 'BF16') return undefined;
  if (datatype === 'BYTES') {
    let elements: Buffer[];
    try {
      elements = splitBytesElements(data);
    } catch {
      shapeMismatch(name);
    }
    if (elements.length !== elementCount) shapeMismatch(name);
    const parts = new Array<string>(elements.length);
    for (let i = 0; i < elements.length; i++) {
      const e = elements[i];
      if (!isUtf8(e)) return undefined;
      parts[i] = JSON.stringify(e.toString('utf8'));
    }
    return '[' + parts.join(',') + ']';
  }
  const size = byteSizeOf(datatype);
  if (data.length !== elementCount * size) shapeMismatch(name);
  if (elementCount === 0) return '[]';
  const { ab, off } = alignedView(data, size);
  switch (datatype) {
    case 'BOOL': {
      const parts = new Array<string>(elementCount);
      for (let i = 0; i < elementCount; i++) parts[i] = data[i] === 0 ? 'false' : 'true';
      return '[' + parts.join(',') + ']';
    }
    case 'UINT8':
      return '[' + new Uint8Array(ab, off, elementCount).join(',') + ']';
    case 'UINT16':
      return '[' + new Uint16Array(ab, off, elementCount).join(',') + ']';
    case 'UINT32':
      return '[' + new Uint32Array(ab, off, elementCount).join(',') + ']';
    case 'UINT64':
      return '[' + new BigUint64Array(ab, off, elementCount).join(',') + ']';
    case 'INT8':
      return '[' + new Int8Array(ab, off, elementCount).join(',') + ']';
    case 'INT16':
      return '[' + new Int16Array(ab, off, elementCount).join(',') + ']';
    case 'INT32':
      return '[' + new Int32Array(ab, off, elementCount).join(',') + ']';
    case 'INT64':
      return '[' + new BigInt64Array(ab, off, elementCount).join(',') + ']';
    case 'FP32':
      return floatsJson(new Float32Array(ab, off, elementCount));
    case 'FP64':
      return floatsJson(new Float64Array(ab, off, elementCount));
    default:
      throw internal(`no JSON form for datatype ${datatype as string}`);
  }
}
