/**
 * Protocol-buffers wire primitives for the hand-written codecs of the hot messages (ModelInferRequest,
 * ModelInferResponse, ModelStreamInferResponse). The reader works over one received Buffer and hands out
 * `bytes` fields as views into it (no copies); every length is checked against what is left, so hostile
 * input ends in one INVALID_ARG error, never an exception from deeper down or a huge allocation. The
 * writer fills a Buffer whose size was computed beforehand.
 */
import { invalidArg, type NereidError } from '../../common/errors.js';

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_FIXED32 = 5;

const TWO_32 = 4294967296;

export function malformed(detail: string): NereidError {
  return invalidArg(`malformed protobuf message: ${detail}`);
}

export class ProtoReader {
  pos: number;
  end: number;
  /** Low and high 32 bits (unsigned) of the last varint read by varint64(). */
  lo = 0;
  hi = 0;

  constructor(
    readonly buf: Buffer,
    start = 0,
    end = buf.length,
  ) {
    this.pos = start;
    this.end = end;
  }

  more(): boolean {
    return this.pos < this.end;
  }

  /** A field key; returns `(field << 3) | wireType`. */
  tag(): number {
    const t = this.uint32();
    if (t >>> 3 === 0) throw malformed('field number 0');
    return t;
  }

  /** A varint of up to 64 bits, keeping the low 32 (unsigned). */
  uint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    // Fast path: one or two bytes (tags, small lengths).
    if (pos < this.end) {
      const b0 = buf[pos];
      if (b0 < 0x80) {
        this.pos = pos + 1;
        return b0;
      }
    }
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (pos >= this.end) throw malformed('truncated varint');
      const b = buf[pos++];
      if (shift < 32) result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (b < 0x80) {
        this.pos = pos;
        return result >>> 0;
      }
    }
    throw malformed('varint longer than 10 bytes');
  }

  /** Reads a varint into `lo`/`hi`. */
  varint64(): void {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (pos >= this.end) throw malformed('truncated varint');
      const b = buf[pos++];
      const bits = b & 0x7f;
      if (i < 4) lo |= bits << (7 * i);
      else if (i === 4) {
        lo |= (bits & 0x0f) << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (7 * i - 32);
      if (b < 0x80) {
        this.pos = pos;
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return;
      }
    }
    throw malformed('varint longer than 10 bytes');
  }

  /** A length prefix, checked against the bytes left. */
  length(): number {
    const start = this.pos;
    this.varint64();
    const n = this.hi * TWO_32 + this.lo;
    const left = this.end - this.pos;
    if (n > left) {
      this.pos = start;
      throw malformed(`length ${n} exceeds the ${left} bytes left`);
    }
    return n;
  }

  /** int64 as a number; undefined when it does not fit a safe integer. */
  int64Number(): number | undefined {
    this.varint64();
    return int64ToNumber(this.lo, this.hi);
  }

  /** int64 as a number when safe, else a bigint (the core's ParameterValue rule). */
  int64Value(): number | bigint {
    this.varint64();
    const n = int64ToNumber(this.lo, this.hi);
    return n ?? BigInt.asIntN(64, (BigInt(this.hi) << 32n) | BigInt(this.lo));
  }

  /** uint64 as a number when safe, else a bigint. */
  uint64Value(): number | bigint {
    this.varint64();
    if (this.hi < 0x200000) return this.hi * TWO_32 + this.lo;
    return (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  bool(): boolean {
    this.varint64();
    return this.lo !== 0 || this.hi !== 0;
  }

  double(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** A length-delimited field as a view into the message (no copy). */
  bytes(): Buffer {
    const n = this.length();
    const start = this.pos;
    this.pos += n;
    return this.buf.subarray(start, start + n);
  }

  string(): string {
    const n = this.length();
    const start = this.pos;
    this.pos += n;
    if (n <= SHORT_STRING) {
      const s = shortAscii(this.buf, start, start + n);
      if (s !== undefined) return s;
    }
    return this.buf.toString('utf8', start, start + n);
  }

  /** Narrows the reader to a length-delimited sub-message; returns the outer end to restore. */
  enter(): number {
    const n = this.length();
    const outer = this.end;
    this.end = this.pos + n;
    return outer;
  }

  /** Leaves a sub-message entered with enter(). */
  leave(outerEnd: number): void {
    this.pos = this.end;
    this.end = outerEnd;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint64();
        return;
      case WIRE_FIXED64:
        this.need(8);
        this.pos += 8;
        return;
      case WIRE_LEN: {
        const n = this.length(); // read before this.pos, which length() advances
        this.pos += n;
        return;
      }
      case WIRE_FIXED32:
        this.need(4);
        this.pos += 4;
        return;
      default:
        throw malformed(`unsupported wire type ${wireType}`);
    }
  }

  need(n: number): void {
    if (this.end - this.pos < n) throw malformed('truncated fixed-width field');
  }
}

// ---- short strings ----
// Model, tensor and datatype names repeat on every request. Decoding or encoding a short string through
// Buffer's C++ calls costs several times the JavaScript loops below (measured ~650 vs ~170 ns to decode,
// ~540 vs ~90 ns to encode), so short ASCII strings take those loops; anything else, and every longer
// string, goes through Buffer as before.

/** Strings up to this many bytes take the JavaScript paths. */
export const SHORT_STRING = 64;
/** Recently decoded short ASCII strings, by a hash of their bytes (a miss only costs a decode). */
const decoded: (string | undefined)[] = new Array<string | undefined>(512).fill(undefined);

/** The bytes `buf[start, end)` as a string when they are all ASCII (a cached equal string if any). */
export function shortAscii(buf: Buffer, start: number, end: number): string | undefined {
  let h = end - start;
  for (let i = start; i < end; i++) {
    const c = buf[i];
    if (c >= 0x80) return undefined;
    h = (h * 31 + c) & 511;
  }
  const hit = decoded[h];
  if (hit !== undefined && hit.length === end - start) {
    let i = 0;
    while (i < hit.length && hit.charCodeAt(i) === buf[start + i]) i++;
    if (i === hit.length) return hit;
  }
  const s = buf.toString('latin1', start, end); // ASCII: latin1 and UTF-8 read the same
  decoded[h] = s;
  return s;
}

/** Signed 64-bit (two's complement lo/hi) → number, or undefined beyond ±(2^53 - 1). */
export function int64ToNumber(lo: number, hi: number): number | undefined {
  if (hi < 0x200000) return hi * TWO_32 + lo; // non-negative, < 2^53
  if (hi >= 0xffe00000) {
    // negative, magnitude ≤ 2^53: value = (hi - 2^32) * 2^32 + lo
    const v = (hi - TWO_32) * TWO_32 + lo;
    return Number.isSafeInteger(v) ? v : undefined;
  }
  return undefined;
}

// ---- sizes ----

/** Bytes of a varint holding a non-negative safe integer. */
export function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let size = 4;
  let v = Math.floor(n / 0x10000000);
  while (v > 0) {
    size++;
    v = Math.floor(v / 128);
  }
  return size;
}

/** Bytes of an int64 varint (negative numbers take 10). */
export function int64Size(n: number | bigint): number {
  if (typeof n === 'bigint') {
    if (n < 0n) return 10;
    let size = 1;
    while (n >= 0x80n) {
      n >>= 7n;
      size++;
    }
    return size;
  }
  return n < 0 ? 10 : varintSize(n);
}

export function tagSize(field: number): number {
  return varintSize(field << 3);
}

/** Tag + length prefix + payload of a length-delimited field. */
export function lenFieldSize(field: number, payload: number): number {
  return tagSize(field) + varintSize(payload) + payload;
}

// ---- writer ----

export class ProtoWriter {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
  ) {
    this.pos = start;
  }

  varint(n: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (n >= 0x80) {
      buf[pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[pos++] = n;
    this.pos = pos;
  }

  int64(n: number | bigint): void {
    if (typeof n === 'number' && n >= 0) {
      this.varint(n);
      return;
    }
    let v = BigInt.asUintN(64, BigInt(n));
    const buf = this.buf;
    while (v >= 0x80n) {
      buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    buf[this.pos++] = Number(v);
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  string(field: number, s: string, byteLength: number): void {
    this.tag(field, WIRE_LEN);
    this.varint(byteLength);
    // As many UTF-8 bytes as UTF-16 units: the string is ASCII (see SHORT_STRING).
    if (byteLength === s.length && byteLength <= SHORT_STRING) {
      const buf = this.buf;
      const pos = this.pos;
      for (let i = 0; i < byteLength; i++) buf[pos + i] = s.charCodeAt(i);
      this.pos = pos + byteLength;
      return;
    }
    this.pos += this.buf.write(s, this.pos, byteLength, 'utf8');
  }

  bytes(field: number, b: Uint8Array): void {
    this.tag(field, WIRE_LEN);
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** Tag and length of a length-delimited field whose payload the caller writes next. */
  lenPrefix(field: number, payload: number): void {
    this.tag(field, WIRE_LEN);
    this.varint(payload);
  }

  double(field: number, v: number): void {
    this.tag(field, WIRE_FIXED64);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }
}
