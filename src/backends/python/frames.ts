/**
 * Length-prefixed binary frames on a stub's control socket (the format python/nereid_stub/frames.py
 * speaks): `u32 LE body length | u8 type | u32 LE header length | header | blob`. The header is JSON, but
 * for the hot message types given to the decoder as `binary` (EXECUTE_DONE: protocol.ts), whose header is a
 * fixed layout their own decoder reads. The decoder accepts
 * socket chunks of any size and yields whole frames; a frame that fits in one chunk is a view of it (no
 * copy), one that spans chunks is joined once.
 */
import { internal } from '../../common/errors.js';

/** A decoded JSON object: a frame's header, and what nested objects in one are checked to be. */
export type RawJsonObject = Readonly<Record<string, unknown>>;

export function isJsonObject(v: unknown): v is RawJsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON array's elements; anything else is an empty list. */
export function listOf(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

export interface Frame {
  readonly type: number;
  /** The header's JSON object (empty for a binary type); its fields are read through protocol.ts's decoders. */
  readonly header: RawJsonObject;
  /** The header's bytes as they came (what a binary type's decoder reads). */
  readonly head: Buffer;
  /** Inline tensor bytes that follow the header. */
  readonly blob: Buffer;
}

/** The largest body the format can express; the decoder refuses more than `maxBody` anyway. */
const FORMAT_MAX_BODY = 0xffffffff;

/** Encodes one frame as buffers to write in order (the blobs are not copied). */
export function encodeFrame(type: number, header: unknown, blobs: readonly Buffer[] = []): Buffer[] {
  return encodeRawFrame(type, Buffer.from(JSON.stringify(header), 'utf8'), blobs);
}

/** Encodes one frame whose header is already bytes (a binary layout). */
export function encodeRawFrame(type: number, head: Buffer, blobs: readonly Buffer[] = []): Buffer[] {
  let blobLength = 0;
  for (const b of blobs) blobLength += b.length;
  const bodyLength = 5 + head.length + blobLength;
  if (bodyLength > FORMAT_MAX_BODY) {
    throw internal(`a control frame of ${bodyLength} bytes exceeds the stub channel's limit`);
  }
  const prefix = Buffer.allocUnsafe(9);
  prefix.writeUInt32LE(bodyLength, 0);
  prefix.writeUInt8(type, 4);
  prefix.writeUInt32LE(head.length, 5);
  return [prefix, head, ...blobs];
}

export class FrameDecoder {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;

  /**
   * `maxBody` bounds what a confused or hostile peer can make us allocate; frames of the `binary` types
   * keep their header as bytes (not parsed as JSON).
   */
  constructor(
    private readonly maxBody: number,
    private readonly binary: ReadonlySet<number> = new Set(),
  ) {}

  /** Adds a chunk; returns the frames it completed. Throws on a malformed stream. */
  push(chunk: Buffer): Frame[] {
    this.append(chunk);
    const frames: Frame[] = [];
    for (let f = this.next(); f !== undefined; f = this.next()) frames.push(f);
    return frames;
  }

  /** Adds a chunk without decoding it (take its frames with next(), one at a time). */
  append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /**
   * The next whole buffered frame, or undefined until more bytes arrive. Throws on a malformed stream.
   * One at a time, so a reader that must stop (back-pressure) leaves the rest undecoded.
   */
  next(): Frame | undefined {
    if (this.buffered < 4) return undefined;
    const bodyLength = this.peekLength();
    if (bodyLength < 5) throw internal(`malformed frame from the Python stub: body of ${bodyLength} bytes`);
    if (bodyLength > this.maxBody) {
      throw internal(`the Python stub sent a frame of ${bodyLength} bytes, over the ${this.maxBody} limit`);
    }
    if (this.buffered < 4 + bodyLength) return undefined;
    return parseBody(this.take(4 + bodyLength).subarray(4), this.binary);
  }

  private peekLength(): number {
    const first = this.chunks[0];
    if (first.length >= 4) return first.readUInt32LE(0);
    const head = Buffer.alloc(4);
    let off = 0;
    for (const c of this.chunks) {
      const n = Math.min(4 - off, c.length);
      c.copy(head, off, 0, n);
      off += n;
      if (off === 4) break;
    }
    return head.readUInt32LE(0);
  }

  /** Removes and returns the next `n` buffered bytes (a view when they lie in one chunk). */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let off = 0;
      while (off < n) {
        const c = this.chunks[0];
        const k = Math.min(n - off, c.length);
        c.copy(out, off, 0, k);
        off += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return out;
  }
}

const NO_HEADER: RawJsonObject = {};

function parseBody(body: Buffer, binary: ReadonlySet<number>): Frame {
  const type = body.readUInt8(0);
  const headerLength = body.readUInt32LE(1);
  if (5 + headerLength > body.length) throw internal('malformed frame from the Python stub: header overflow');
  const head = body.subarray(5, 5 + headerLength);
  const blob = body.subarray(5 + headerLength);
  if (binary.has(type)) return { type, header: NO_HEADER, head, blob };
  let header: unknown = NO_HEADER;
  if (headerLength > 0) {
    try {
      header = JSON.parse(body.toString('utf8', 5, 5 + headerLength));
    } catch {
      throw internal('malformed frame from the Python stub: header is not JSON');
    }
  }
  if (!isJsonObject(header)) {
    throw internal('malformed frame from the Python stub: header is not an object');
  }
  return { type, header, head, blob };
}
