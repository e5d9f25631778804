/**
 * Tensors are views over Buffers: a name, a datatype, a shape and the raw row-major bytes. BYTES tensors
 * keep Triton's wire form — each element a 4-byte little-endian length followed by its bytes — so a tensor
 * read from a binary HTTP body or a gRPC raw_input_contents entry is used without a copy. A copy is a
 * decision, written where it happens.
 */
import { byteSizeOf, type DataType } from './datatype.js';
import { invalidArg } from './errors.js';

export interface Tensor {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** Row-major element bytes; for BYTES, length-prefixed elements. */
  readonly data: Buffer;
}

/** Product of the dims; 1 for a scalar shape []. Throws on overflow past Number.MAX_SAFE_INTEGER. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    n *= d;
    if (!Number.isSafeInteger(n)) {
      throw invalidArg(
        `shape [${shape.join(',')}] causes total element count to exceed maximum size of ${Number.MAX_SAFE_INTEGER}`,
      );
    }
  }
  return n;
}

/** Expected byte size of a fixed-size tensor; undefined for BYTES. */
export function expectedByteSize(datatype: DataType, shape: readonly number[]): number | undefined {
  const size = byteSizeOf(datatype);
  if (size === 0) return undefined;
  return elementCount(shape) * size;
}

/** Splits a length-prefixed BYTES buffer into element views (no copies). Throws on malformed data. */
export function splitBytesElements(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  while (off < data.length) {
    if (off + 4 > data.length) throw invalidArg('malformed BYTES tensor: truncated element length');
    const len = data.readUInt32LE(off);
    off += 4;
    if (off + len > data.length) throw invalidArg('malformed BYTES tensor: element length exceeds the data');
    out.push(data.subarray(off, off + len));
    off += len;
  }
  return out;
}

/** Counts the elements of a length-prefixed BYTES buffer, validating the framing. */
export function countBytesElements(data: Buffer): number {
  let off = 0;
  let n = 0;
  while (off < data.length) {
    if (off + 4 > data.length) throw invalidArg('malformed BYTES tensor: truncated element length');
    const len = data.readUInt32LE(off);
    off += 4 + len;
    if (off > data.length) throw invalidArg('malformed BYTES tensor: element length exceeds the data');
    n++;
  }
  return n;
}

/** Serialises elements into the length-prefixed BYTES form (one allocation). */
export function joinBytesElements(elements: readonly (Uint8Array | string)[]): Buffer {
  const parts = elements.map((e) => (typeof e === 'string' ? Buffer.from(e, 'utf8') : e));
  let total = 0;
  for (const p of parts) total += 4 + p.length;
  const out = Buffer.allocUnsafe(total);
  let off = 0;
  for (const p of parts) {
    out.writeUInt32LE(p.length, off);
    off += 4;
    out.set(p, off);
    off += p.length;
  }
  return out;
}
