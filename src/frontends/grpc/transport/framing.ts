/**
 * gRPC over HTTP/2 framing (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): the 5-byte
 * length prefix of every message, `grpc-timeout`, and the percent-encoding of `grpc-message`.
 *
 * The reader never trusts a declared length: memory follows the bytes that really arrived. A message
 * inside one DATA chunk is returned as a view of it. A larger one is gathered piece by piece: chunks of
 * at least SMALL_PIECE bytes are kept as views (their backing read buffer counted once on the budget),
 * smaller ones are copied into a staging buffer so a client sending tiny frames cannot pin a buffer object
 * per byte. Once half of the declared length has arrived, the client has proven it is sending the message:
 * one buffer of the declared size is allocated, the pieces are copied into it and the rest of the message
 * is copied straight in. Every byte is copied once (as with an up-front allocation) and the peak is 1.5
 * times the message. Everything held is counted on the connection's ByteBudget and given back when the
 * message is handed on or the call ends.
 */
import type { ByteBudget } from './budget.js';
import { Reservation } from './budget.js';
import { GrpcStatusError, Status } from './status.js';

export interface GrpcMessage {
  readonly compressed: boolean;
  readonly data: Buffer;
}

/** Pieces shorter than this are copied into staging instead of being kept as views. */
const SMALL_PIECE = 1024;
/** Size of a staging buffer for small pieces. */
const STAGING_SIZE = 16 * 1024;

/** Incremental parser of length-prefixed messages from a stream's DATA chunks. */
export class MessageReader {
  /** Only needed when a prefix straddles two chunks. */
  private header: Buffer | undefined;
  private headerFill = 0;
  /** Declared length of the message being assembled; -1 between messages. */
  private declared = -1;
  private compressed = false;
  private received = 0;
  /** Before half the message arrived: its pieces, in order. */
  private parts: Buffer[] = [];
  private staging: Buffer | undefined;
  private stagingFill = 0;
  /** The backing store of the last piece kept as a view (counted on the budget once). */
  private lastStore: ArrayBufferLike | undefined;
  /** From half the message on: the message's own buffer. */
  private body: Buffer | undefined;
  private readonly held: Reservation;

  constructor(
    private readonly maxMessageSize: number,
    budget?: ByteBudget,
  ) {
    this.held = new Reservation(budget);
  }

  /** True while a message has started but not completed. */
  get partial(): boolean {
    return this.headerFill > 0 || this.declared >= 0;
  }

  /** Bytes counted on the budget for the message in progress. */
  get heldBytes(): number {
    return this.held.held;
  }

  /** Feeds one chunk; returns the messages it completed. */
  push(chunk: Buffer): GrpcMessage[] {
    const out: GrpcMessage[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.declared < 0) {
        let len: number;
        if (this.headerFill === 0 && chunk.length - pos >= 5) {
          len = this.begin(chunk[pos], chunk.readUInt32BE(pos + 1));
          pos += 5;
          // Whole message inside this chunk: hand out a view.
          if (chunk.length - pos >= len) {
            out.push({ compressed: this.compressed, data: chunk.subarray(pos, pos + len) });
            pos += len;
            continue;
          }
        } else {
          const take = Math.min(5 - this.headerFill, chunk.length - pos);
          const header = (this.header ??= Buffer.alloc(5));
          chunk.copy(header, this.headerFill, pos, pos + take);
          this.headerFill += take;
          pos += take;
          if (this.headerFill < 5) break;
          this.headerFill = 0;
          len = this.begin(header[0], header.readUInt32BE(1));
          if (len === 0) {
            out.push({ compressed: this.compressed, data: Buffer.alloc(0) });
            continue;
          }
        }
        this.declared = len;
        this.received = 0;
      }
      const take = Math.min(this.declared - this.received, chunk.length - pos);
      this.append(chunk, pos, take);
      pos += take;
      if (this.received === this.declared) out.push(this.complete());
    }
    return out;
  }

  /** Drops the message in progress and gives its bytes back to the budget (the call ended). */
  dispose(): void {
    this.parts = [];
    this.staging = undefined;
    this.body = undefined;
    this.lastStore = undefined;
    this.declared = -1;
    this.headerFill = 0;
    this.held.releaseAll();
  }

  private begin(flag: number, len: number): number {
    if (flag > 1) throw new GrpcStatusError(Status.INTERNAL, `invalid gRPC message compression flag ${flag}`);
    if (len > this.maxMessageSize) {
      throw new GrpcStatusError(
        Status.RESOURCE_EXHAUSTED,
        `Received message larger than max (${len} vs. ${this.maxMessageSize})`,
      );
    }
    this.compressed = flag === 1;
    return len;
  }

  private reserve(n: number): void {
    const refused = this.held.take(n);
    if (refused !== undefined)
      throw new GrpcStatusError(Status.RESOURCE_EXHAUSTED, refused.exhaustedMessage());
  }

  private append(chunk: Buffer, pos: number, n: number): void {
    if (this.body !== undefined) {
      chunk.copy(this.body, this.received, pos, pos + n);
      this.received += n;
      return;
    }
    if (n < SMALL_PIECE) {
      while (n > 0) {
        if (this.staging === undefined) {
          const size = Math.min(STAGING_SIZE, this.declared - this.received);
          this.reserve(size);
          this.staging = Buffer.allocUnsafe(size);
          this.stagingFill = 0;
        }
        const t = Math.min(n, this.staging.length - this.stagingFill);
        chunk.copy(this.staging, this.stagingFill, pos, pos + t);
        this.stagingFill += t;
        this.received += t;
        pos += t;
        n -= t;
        if (this.stagingFill === this.staging.length) this.flushStaging();
      }
    } else {
      this.flushStaging(); // keeps the pieces in order
      if (chunk.buffer !== this.lastStore) {
        this.reserve(chunk.buffer.byteLength);
        this.lastStore = chunk.buffer;
      }
      this.parts.push(chunk.subarray(pos, pos + n));
      this.received += n;
    }
    if (this.received * 2 >= this.declared && this.received < this.declared) this.allocateBody();
  }

  private flushStaging(): void {
    if (this.staging === undefined) return;
    this.parts.push(this.staging.subarray(0, this.stagingFill));
    this.staging = undefined;
  }

  /** Half the message is here: one buffer of its declared size takes the pieces and the rest. */
  private allocateBody(): void {
    // From here the message counts at its declared size (the pieces go once they are copied), so one
    // message as large as the budget passes.
    this.held.release(this.held.held);
    this.reserve(this.declared);
    let body: Buffer;
    try {
      body = Buffer.allocUnsafe(this.declared);
    } catch {
      throw new GrpcStatusError(
        Status.RESOURCE_EXHAUSTED,
        `cannot allocate ${this.declared} bytes for a message`,
      );
    }
    this.flushStaging();
    let at = 0;
    for (const p of this.parts) at += p.copy(body, at);
    this.parts = [];
    this.lastStore = undefined;
    this.body = body;
  }

  private complete(): GrpcMessage {
    let data: Buffer;
    if (this.body !== undefined) data = this.body;
    else {
      this.flushStaging();
      data = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.declared);
    }
    const message = { compressed: this.compressed, data };
    this.dispose();
    return message;
  }
}

/** The 5-byte prefix of an uncompressed message of `length` bytes. */
export function messagePrefix(length: number): Buffer {
  const p = Buffer.allocUnsafe(5);
  p[0] = 0;
  p.writeUInt32BE(length, 1);
  return p;
}

/** A framed message from a whole serialised protobuf. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

const TIMEOUT_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000001,
};

/** `grpc-timeout` (1–8 digits and a unit) in milliseconds; undefined when absent or malformed. */
export function parseTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  return Number(m[1]) * TIMEOUT_UNITS[m[2]];
}

/** `grpc-message` is percent-encoded: bytes outside printable ASCII, and '%' itself. */
export function encodeGrpcMessage(message: string): string {
  if (!/[^\x20-\x24\x26-\x7e]/.test(message)) return capGrpcMessage(message);
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return capGrpcMessage(out);
}

/**
 * Longest `grpc-message` sent (encoded). grpcio refuses a header over 16 KiB, and an error that echoes a
 * 10,000-dim shape was 16.5 KB: the message is cut (never inside a %XX escape) and ends with "...".
 */
export const MAX_GRPC_MESSAGE_LENGTH = 4096;

function capGrpcMessage(encoded: string): string {
  if (encoded.length <= MAX_GRPC_MESSAGE_LENGTH) return encoded;
  let cut = MAX_GRPC_MESSAGE_LENGTH - 3;
  if (encoded[cut - 1] === '%') cut -= 1;
  else if (encoded[cut - 2] === '%') cut -= 2;
  return encoded.slice(0, cut) + '...';
}

/** Decodes a percent-encoded `grpc-message` (for tests and clients). */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes('%')) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(c);
  }
  return Buffer.from(bytes).toString('utf8');
}
