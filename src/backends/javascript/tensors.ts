/**
 * How tensor bytes cross between the main thread and a model's worker, and the checks on what comes
 * back. Two policies, chosen by who owns the bytes:
 *
 * - `copy` (bytes someone else owns: the core's request inputs, BLS results, a model's BLS inputs): a
 *   SharedArrayBuffer view is passed as it is (both threads see the same memory, nothing is copied);
 *   anything else is copied once into a buffer of its own, which is then moved. The core's Buffers are
 *   never moved: the backend contract leaves them to the core (an ensemble or a cache may hold the same
 *   tensor), and most are slices of a larger body, which could not move without the rest of it.
 * - `move` (a model's outputs, which become the core's on send): a view covering its whole ArrayBuffer
 *   moves with no copy (the model's array is detached afterwards); a view into part of a larger buffer
 *   is copied out (moving it would take the rest along); SharedArrayBuffer views are shared.
 *
 * A structured clone of a view would copy its whole underlying buffer, so nothing is ever sent that way.
 */
import { byteSizeOf, isDataType } from '../../common/datatype.js';
import { internal } from '../../common/errors.js';
import { countBytesElements, elementCount, type Tensor } from '../../common/tensor.js';
import type { TransferCounters, JsWireTensor } from './protocol.js';

export interface TensorLike {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

export function newCounters(): TransferCounters {
  return {
    inputBytesCopied: 0,
    inputBytesShared: 0,
    outputBytesMoved: 0,
    outputBytesCopied: 0,
    outputBytesShared: 0,
  };
}

const isShared = (b: ArrayBufferLike): boolean =>
  typeof SharedArrayBuffer !== 'undefined' && b instanceof SharedArrayBuffer;

/** A fresh copy of the bytes in an ArrayBuffer of exactly their size. */
function ownCopy(data: Uint8Array): Uint8Array {
  // allocUnsafeSlow: outside Node's pool, so the ArrayBuffer is exactly these bytes; all of them are written.
  const copy = Buffer.allocUnsafeSlow(data.byteLength);
  copy.set(data);
  return new Uint8Array(copy.buffer, 0, data.byteLength);
}

/** Wire form under the `copy` policy (inputs, BLS traffic); adds what moves to `transfer`. */
export function copyToWire(
  t: TensorLike,
  transfer: ArrayBuffer[],
  counters?: TransferCounters,
): JsWireTensor {
  const d = t.data;
  let data: Uint8Array;
  if (isShared(d.buffer)) {
    data = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    if (counters) counters.inputBytesShared += d.byteLength;
  } else {
    data = ownCopy(d);
    transfer.push(data.buffer as ArrayBuffer);
    if (counters) counters.inputBytesCopied += d.byteLength;
  }
  return { name: t.name, datatype: t.datatype as JsWireTensor['datatype'], shape: [...t.shape], data };
}

/** Wire form under the `move` policy (a model's outputs); `transfer` collects each buffer once. */
export function moveToWire(
  t: TensorLike,
  transfer: Set<ArrayBuffer>,
  counters?: TransferCounters,
): JsWireTensor {
  const d = t.data;
  const buf = d.buffer;
  let data: Uint8Array;
  if (isShared(buf)) {
    data = d;
    if (counters) counters.outputBytesShared += d.byteLength;
  } else if (d.byteOffset === 0 && d.byteLength === buf.byteLength && d.byteLength > 0) {
    data = d.constructor === Uint8Array ? d : new Uint8Array(buf, 0, d.byteLength);
    transfer.add(buf as ArrayBuffer);
    if (counters) counters.outputBytesMoved += d.byteLength;
  } else {
    data = ownCopy(d);
    transfer.add(data.buffer as ArrayBuffer);
    if (counters) counters.outputBytesCopied += d.byteLength;
  }
  return { name: t.name, datatype: t.datatype as JsWireTensor['datatype'], shape: [...t.shape], data };
}

/**
 * Checks a tensor that came from model code (another thread: nothing is trusted) and returns it as a
 * core tensor over the same bytes (no copy). `what` names it in errors.
 */
export function checkedCoreTensor(w: unknown, what: string): Tensor {
  const t = w as Partial<JsWireTensor> | null;
  if (typeof t !== 'object' || t === null) throw internal(`${what} is not a tensor`);
  const name = t.name;
  if (typeof name !== 'string' || name === '') throw internal(`${what} has no name`);
  const where = `${what} '${name}'`;
  if (typeof t.datatype !== 'string' || !isDataType(t.datatype)) {
    throw internal(`${where} has an unknown datatype '${String(t.datatype)}'`);
  }
  const shape: unknown = t.shape;
  if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || (d as number) < 0)) {
    throw internal(`${where} has an invalid shape`);
  }
  const data = t.data;
  if (!(data instanceof Uint8Array)) throw internal(`${where} has no bytes`);
  const dims = shape as number[];
  const count = elementCount(dims);
  const size = byteSizeOf(t.datatype);
  if (size > 0 && data.byteLength !== count * size) {
    throw internal(
      `${where}: ${data.byteLength} bytes do not fit ${t.datatype} [${dims.join(',')}] (${count * size} expected)`,
    );
  }
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (size === 0) {
    let n: number;
    try {
      n = countBytesElements(buffer);
    } catch (err) {
      throw internal(`${where}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (n !== count)
      throw internal(`${where} holds ${n} BYTES elements, its shape [${dims.join(',')}] ${count}`);
  }
  return { name, datatype: t.datatype, shape: [...dims], data: buffer };
}
