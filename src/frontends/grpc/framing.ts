/**
 * gRPC over HTTP/2 framing (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): the 5-byte
 * length prefix of every message, request decompression (gzip / deflate), `grpc-timeout`, and the
 * percent-encoding of `grpc-message`. The reader assembles each message exactly once: a message that
 * arrived inside one DATA chunk is returned as a view of it, a larger one is copied once into a buffer
 * of its declared size (allocated uninitialised, so a hostile declared length costs address space, not
 * memory, until bytes really arrive).
 */
import { promisify } from 'node:util';
import { gunzip, inflate } from 'node:zlib';
import { GrpcStatusError, Status } from './status.js';

export interface GrpcMessage {
  readonly compressed: boolean;
  readonly data: Buffer;
}

/** Incremental parser of length-prefixed messages from a stream's DATA chunks. */
export class MessageReader {
  /** Only needed when a prefix straddles two chunks. */
  private header: Buffer | undefined;
  private headerFill = 0;
  private body: Buffer | undefined;
  private bodyFill = 0;
  private compressed = false;

  constructor(private readonly maxMessageSize: number) {}

  /** True while a message has started but not completed. */
  get partial(): boolean {
    return this.headerFill > 0 || this.body !== undefined;
  }

  /** Feeds one chunk; returns the messages it completed. */
  push(chunk: Buffer): GrpcMessage[] {
    const out: GrpcMessage[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.body === undefined) {
        // Whole message inside this chunk: hand out a view.
        if (this.headerFill === 0 && chunk.length - pos >= 5) {
          const len = this.begin(chunk[pos], chunk.readUInt32BE(pos + 1));
          if (chunk.length - pos - 5 >= len) {
            out.push({ compressed: this.compressed, data: chunk.subarray(pos + 5, pos + 5 + len) });
            pos += 5 + len;
            continue;
          }
          pos += 5;
          this.allocate(len);
        } else {
          const take = Math.min(5 - this.headerFill, chunk.length - pos);
          const header = (this.header ??= Buffer.alloc(5));
          chunk.copy(header, this.headerFill, pos, pos + take);
          this.headerFill += take;
          pos += take;
          if (this.headerFill < 5) break;
          this.headerFill = 0;
          const len = this.begin(header[0], header.readUInt32BE(1));
          if (len === 0) {
            out.push({ compressed: this.compressed, data: Buffer.alloc(0) });
            continue;
          }
          this.allocate(len);
        }
      }
      const body = this.body!;
      const take = Math.min(body.length - this.bodyFill, chunk.length - pos);
      chunk.copy(body, this.bodyFill, pos, pos + take);
      this.bodyFill += take;
      pos += take;
      if (this.bodyFill === body.length) {
        out.push({ compressed: this.compressed, data: body });
        this.body = undefined;
        this.bodyFill = 0;
      }
    }
    return out;
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

  private allocate(len: number): void {
    try {
      this.body = Buffer.allocUnsafe(len);
    } catch {
      throw new GrpcStatusError(Status.RESOURCE_EXHAUSTED, `cannot allocate ${len} bytes for a message`);
    }
    this.bodyFill = 0;
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

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

/** Request encodings we accept (`grpc-encoding`), advertised in `grpc-accept-encoding`. */
export const ACCEPT_ENCODING = 'identity,deflate,gzip';

export function isSupportedEncoding(encoding: string): boolean {
  return encoding === 'identity' || encoding === 'gzip' || encoding === 'deflate';
}

/** Decompresses one message sent with the compressed flag under `grpc-encoding`. */
export async function decompress(data: Buffer, encoding: string, maxMessageSize: number): Promise<Buffer> {
  const options = { maxOutputLength: maxMessageSize };
  try {
    if (encoding === 'gzip') return await gunzipAsync(data, options);
    if (encoding === 'deflate') return await inflateAsync(data, options);
  } catch (err) {
    const tooLarge = (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
    throw new GrpcStatusError(
      tooLarge ? Status.RESOURCE_EXHAUSTED : Status.INTERNAL,
      tooLarge
        ? `Received message larger than max (decompressed beyond ${maxMessageSize})`
        : `failed to decompress a '${encoding}' message: ${(err as Error).message}`,
    );
  }
  throw new GrpcStatusError(Status.INTERNAL, 'compressed message without a grpc-encoding');
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
  if (!/[^\x20-\x24\x26-\x7e]/.test(message)) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
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
