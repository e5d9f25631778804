/**
 * The SDK's Tensor: a name, a datatype, a shape and the row-major bytes, with typed-array views for
 * model code. The bytes are a Uint8Array that may sit anywhere in an ArrayBuffer or a SharedArrayBuffer;
 * BYTES tensors keep Triton's wire form (each element a 4-byte little-endian length and its bytes) so
 * they cross threads as one buffer. Views are free when the bytes are aligned for the element type (model
 * inputs always are); otherwise a method says where it copies.
 */
import { byteSizeOf, isDataType, type DataType } from '../common/datatype.js';
import { invalidArg } from '../common/errors.js';
import { elementCount } from '../common/tensor.js';
import {
  TYPED_ARRAY_OF,
  type FixedDataType,
  type TypedArray,
  type TypedArrayOf,
} from '../common/typed-arrays.js';
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from '../common/half.js';

export type { DataType };

/** The typed array that views each fixed-size datatype (FP16/BF16 as raw 16-bit patterns). */
export type TypedArrayByDataType = TypedArrayOf;
export type { FixedDataType, TypedArray };

/** One element as plain JavaScript: numbers, bigints for 64-bit integers, booleans, strings for BYTES. */
export type ElementValue = number | bigint | boolean | string;

/** The datatype a typed array stands for when none is given (Uint16Array: UINT16, Uint8Array: UINT8). */
export function dataTypeOfTypedArray(a: TypedArray): FixedDataType {
  if (a instanceof Float32Array) return 'FP32';
  if (a instanceof Float64Array) return 'FP64';
  if (a instanceof Int32Array) return 'INT32';
  if (a instanceof Int16Array) return 'INT16';
  if (a instanceof Int8Array) return 'INT8';
  if (a instanceof Uint32Array) return 'UINT32';
  if (a instanceof Uint16Array) return 'UINT16';
  if (a instanceof BigInt64Array) return 'INT64';
  if (a instanceof BigUint64Array) return 'UINT64';
  return 'UINT8';
}

function isTypedArray(v: unknown): v is TypedArray {
  return ArrayBuffer.isView(v) && !(v instanceof DataView);
}

const MOVED =
  'its buffer was already sent in a response (outputs are moved, not copied; build a new array for each response)';

function bytesOf(a: ArrayBufferView, name = 'tensor'): Uint8Array {
  try {
    return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  } catch (err) {
    // The only way a typed array's own buffer cannot be viewed: it was moved to another thread.
    if (err instanceof TypeError) throw invalidArg(`tensor '${name}': ${MOVED}`);
    throw err;
  }
}

const utf8 = new TextEncoder();
// ignoreBOM: an element that starts with U+FEFF keeps it (TextDecoder drops it as a byte order mark).
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** Length-prefixed BYTES form of `elements` in one fresh buffer. */
export function encodeBytesElements(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const parts = elements.map((e) => (typeof e === 'string' ? utf8.encode(e) : e));
  let total = 0;
  for (const p of parts) total += 4 + p.byteLength;
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  let off = 0;
  for (const p of parts) {
    dv.setUint32(off, p.byteLength, true);
    off += 4;
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}

/** Views of each element of a length-prefixed BYTES buffer (no copies); throws on broken framing. */
export function decodeBytesElements(data: Uint8Array): Uint8Array[] {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out: Uint8Array[] = [];
  let off = 0;
  while (off < data.byteLength) {
    if (off + 4 > data.byteLength) throw invalidArg('malformed BYTES tensor: truncated element length');
    const len = dv.getUint32(off, true);
    off += 4;
    if (off + len > data.byteLength)
      throw invalidArg('malformed BYTES tensor: element length exceeds the data');
    out.push(data.subarray(off, off + len));
    off += len;
  }
  return out;
}

export interface TensorOptions {
  /** Defaults to [number of elements]. */
  readonly shape?: readonly number[];
  /** Defaults to the typed array's own type, BYTES for strings, FP32 for plain numbers, BOOL for booleans. */
  readonly datatype?: DataType;
}

export type TensorSource =
  | TypedArray
  | readonly number[]
  | readonly bigint[]
  | readonly boolean[]
  | readonly string[]
  | readonly Uint8Array[];

function checkShape(shape: readonly number[]): number[] {
  if (!Array.isArray(shape)) throw invalidArg('a tensor shape must be an array of integers');
  for (const d of shape as readonly unknown[]) {
    if (!Number.isSafeInteger(d) || (d as number) < 0) {
      throw invalidArg(`invalid tensor shape [${shape.join(',')}]: dimensions must be integers >= 0`);
    }
  }
  return [...(shape as readonly number[])];
}

/** Fixed-size values written into a new buffer of `datatype`. */
function encodeValues(datatype: FixedDataType, values: readonly (number | bigint | boolean)[]): Uint8Array {
  const out = new TYPED_ARRAY_OF[datatype](
    new ArrayBuffer(values.length * byteSizeOf(datatype)),
    0,
    values.length,
  );
  const half = datatype === 'FP16' ? toFloat16Bits : datatype === 'BF16' ? toBFloat16Bits : undefined;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
      out[i] = typeof v === 'bigint' ? v : BigInt(typeof v === 'boolean' ? Number(v) : Math.trunc(v));
    } else if (half) {
      out[i] = half(Number(v));
    } else {
      out[i] = Number(v);
    }
  }
  return bytesOf(out);
}

export class Tensor {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** Row-major element bytes; for BYTES, length-prefixed elements. */
  readonly data: Uint8Array;

  /** Wraps bytes as they are (no copy); checks that their size fits the datatype and shape. */
  constructor(name: string, datatype: DataType, shape: readonly number[], data: Uint8Array) {
    if (typeof name !== 'string' || name === '') throw invalidArg('a tensor needs a non-empty name');
    if (!isDataType(datatype)) throw invalidArg(`tensor '${name}': unknown datatype '${String(datatype)}'`);
    if (!(data instanceof Uint8Array)) throw invalidArg(`tensor '${name}': data must be a Uint8Array`);
    this.name = name;
    this.datatype = datatype;
    this.shape = Object.freeze(checkShape(shape));
    this.data = data;
    const count = elementCount(this.shape);
    const size = byteSizeOf(datatype);
    if (size > 0 && data.byteLength !== count * size) {
      const detached = data.buffer.byteLength === 0 && count > 0;
      throw invalidArg(
        detached
          ? `tensor '${name}': ${MOVED}`
          : `tensor '${name}': ${data.byteLength} bytes do not fit ${datatype} [${this.shape.join(',')}] (${count * size} expected)`,
      );
    }
  }

  /**
   * A tensor from a typed array (a view: no copy), or from plain values (encoded into a new buffer).
   * Strings and Uint8Arrays make a BYTES tensor.
   */
  static from(name: string, values: TensorSource, options: TensorOptions = {}): Tensor {
    const length = (values as ArrayLike<unknown>).length;
    const shape = options.shape ?? [length];
    if (isTypedArray(values)) {
      const natural = dataTypeOfTypedArray(values);
      const datatype = options.datatype ?? natural;
      if (datatype === 'BYTES') throw invalidArg(`tensor '${name}': BYTES tensors are made from strings`);
      const compatible =
        datatype === natural ||
        (values instanceof Uint8Array && datatype === 'BOOL') ||
        (values instanceof Uint16Array && (datatype === 'FP16' || datatype === 'BF16'));
      if (!compatible) {
        throw invalidArg(`tensor '${name}': a ${values.constructor.name} cannot hold ${datatype} values`);
      }
      return new Tensor(name, datatype, shape, bytesOf(values, name));
    }
    const list = values as readonly unknown[];
    const first = list[0];
    const datatype =
      options.datatype ??
      (typeof first === 'string' || first instanceof Uint8Array
        ? 'BYTES'
        : typeof first === 'boolean'
          ? 'BOOL'
          : typeof first === 'bigint'
            ? 'INT64'
            : 'FP32');
    if (datatype === 'BYTES') {
      for (const v of list) {
        if (typeof v !== 'string' && !(v instanceof Uint8Array))
          throw invalidArg(`tensor '${name}': BYTES elements must be strings or Uint8Arrays`);
      }
      return new Tensor(name, datatype, shape, encodeBytesElements(list as (string | Uint8Array)[]));
    }
    for (const v of list) {
      if (typeof v !== 'number' && typeof v !== 'bigint' && typeof v !== 'boolean')
        throw invalidArg(`tensor '${name}': ${datatype} elements must be numbers, bigints or booleans`);
    }
    return new Tensor(name, datatype, shape, encodeValues(datatype, list as (number | bigint | boolean)[]));
  }

  /** A BYTES tensor of UTF-8 strings or raw byte strings. */
  static fromStrings(
    name: string,
    elements: readonly (string | Uint8Array)[],
    shape: readonly number[] = [elements.length],
  ): Tensor {
    return new Tensor(name, 'BYTES', shape, encodeBytesElements(elements));
  }

  /**
   * A zero-filled tensor over a SharedArrayBuffer: handed to a JavaScript model (in-process, or as a model
   * output) its bytes are shared between threads instead of copied or moved.
   */
  static allocShared(name: string, datatype: FixedDataType, shape: readonly number[]): Tensor {
    const size = elementCount(checkShape(shape)) * byteSizeOf(datatype);
    return new Tensor(name, datatype, shape, new Uint8Array(new SharedArrayBuffer(size)));
  }

  /** A zero-filled tensor in a buffer of its own. */
  static zeros(name: string, datatype: FixedDataType, shape: readonly number[]): Tensor {
    const size = elementCount(checkShape(shape)) * byteSizeOf(datatype);
    return new Tensor(name, datatype, shape, new Uint8Array(size));
  }

  get elementCount(): number {
    return elementCount(this.shape);
  }

  /** The same bytes under another name or shape (no copy). */
  withName(name: string): Tensor {
    return new Tensor(name, this.datatype, this.shape, this.data);
  }

  reshape(shape: readonly number[]): Tensor {
    return new Tensor(this.name, this.datatype, shape, this.data);
  }

  /** A copy in a buffer of its own (e.g. to keep a tensor past execute(), or to send it twice). */
  clone(name = this.name): Tensor {
    return new Tensor(name, this.datatype, this.shape, this.data.slice());
  }

  /**
   * The elements as their typed array: a view when the bytes are aligned for the element size (always for
   * model inputs), a copy otherwise. FP16/BF16 come as raw 16-bit patterns (see toArray()).
   */
  typed<D extends FixedDataType>(expected?: D): TypedArrayByDataType[D] {
    const dt = this.datatype;
    if (dt === 'BYTES') throw invalidArg(`tensor '${this.name}' is BYTES; use strings() or bytes()`);
    if (expected !== undefined && expected !== dt) {
      throw invalidArg(`tensor '${this.name}' is ${dt}, not ${expected}`);
    }
    const size = byteSizeOf(dt);
    const d = this.data;
    // The copy: unaligned bytes cannot be viewed. Not d.slice(): on a Node Buffer (what the in-process API
    // hands out for a Python model's outputs) slice() is a view, unaligned as before.
    const bytes = d.byteOffset % size === 0 ? d : new Uint8Array(d);
    return new TYPED_ARRAY_OF[dt](
      bytes.buffer,
      bytes.byteOffset,
      bytes.byteLength / size,
    ) as TypedArrayByDataType[D];
  }

  /** Shorthands for typed() with a datatype check. */
  float32(): Float32Array {
    return this.typed('FP32');
  }
  float64(): Float64Array {
    return this.typed('FP64');
  }
  int32(): Int32Array {
    return this.typed('INT32');
  }
  int64(): BigInt64Array {
    return this.typed('INT64');
  }
  uint8(): Uint8Array {
    return this.typed('UINT8');
  }

  /** BYTES elements as views of the tensor's bytes (no copies). */
  bytes(): Uint8Array[] {
    if (this.datatype !== 'BYTES') throw invalidArg(`tensor '${this.name}' is ${this.datatype}, not BYTES`);
    return decodeBytesElements(this.data);
  }

  /** BYTES elements decoded as UTF-8. */
  strings(): string[] {
    return this.bytes().map((b) => utf8Decoder.decode(b));
  }

  /** Every element as plain JavaScript (numbers; bigints for 64-bit integers; booleans; strings). */
  toArray(): ElementValue[] {
    const dt = this.datatype;
    if (dt === 'BYTES') return this.strings();
    const t = this.typed();
    if (dt === 'BOOL') return Array.from(t as Uint8Array, (v) => v !== 0);
    if (dt === 'FP16') return Array.from(t as Uint16Array, fromFloat16Bits);
    if (dt === 'BF16') return Array.from(t as Uint16Array, fromBFloat16Bits);
    if (t instanceof BigInt64Array || t instanceof BigUint64Array) return Array.from(t);
    return Array.from(t as ArrayLike<number>);
  }
}
