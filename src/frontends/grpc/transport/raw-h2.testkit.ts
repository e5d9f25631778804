/**
 * A hand-built HTTP/2 client over a plain TCP socket, for the tests that must send what no HTTP/2 library
 * sends (DATA on stream 0, streams past SETTINGS_MAX_CONCURRENT_STREAMS, PINGs left unanswered) and read
 * the server's frames as they are. Headers are written as HPACK literals without indexing; the server's
 * headers are not decoded (tests that need gRPC statuses use a real client).
 */
import { readdirSync } from 'node:fs';
import net from 'node:net';

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
} as const;

export const Flag = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;

export interface H2Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId, 5);
  return Buffer.concat([h, payload]);
}

function hpackInt(value: number, prefixBits: number, first: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([first | value]);
  const out = [first | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

/** A header block of literals without indexing (new names). */
export function headerBlock(pairs: readonly (readonly [string, string])[]): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of pairs) {
    parts.push(
      Buffer.from([0]),
      hpackInt(k.length, 7, 0),
      Buffer.from(k),
      hpackInt(v.length, 7, 0),
      Buffer.from(v),
    );
  }
  return Buffer.concat(parts);
}

/** A HEADERS frame opening a gRPC call on `streamId`. */
export function grpcHeaders(
  streamId: number,
  path: string,
  extra: readonly (readonly [string, string])[] = [],
  endStream = false,
): Buffer {
  const block = headerBlock([
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
  ]);
  return frame(FrameType.HEADERS, Flag.END_HEADERS | (endStream ? Flag.END_STREAM : 0), streamId, block);
}

export function rstStream(streamId: number, code = 8): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code);
  return frame(FrameType.RST_STREAM, 0, streamId, p);
}

export function windowUpdate(streamId: number, increment: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment);
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, p);
}

export function settings(pairs: readonly (readonly [number, number])[] = []): Buffer {
  const p = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([id, value], i) => {
    p.writeUInt16BE(id, i * 6);
    p.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, p);
}

/** One TCP connection speaking raw HTTP/2 frames. */
export class RawConnection {
  readonly frames: H2Frame[] = [];
  /** Resolves when the server closed the socket (end or reset). */
  readonly closed: Promise<void>;
  private pending = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private isClosed = false;

  /** Answer the server's PINGs (a live client); off: leave them unanswered. */
  ackPings = false;
  /** Acknowledge the server's SETTINGS. */
  ackSettings = false;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.pending = Buffer.concat([this.pending, d]);
      while (this.pending.length >= 9) {
        const len = this.pending.readUIntBE(0, 3);
        if (this.pending.length < 9 + len) break;
        const f: H2Frame = {
          type: this.pending[3],
          flags: this.pending[4],
          streamId: this.pending.readUInt32BE(5) & 0x7fffffff,
          payload: this.pending.subarray(9, 9 + len),
        };
        this.frames.push(f);
        if ((f.flags & Flag.ACK) === 0) {
          if (f.type === FrameType.PING && this.ackPings)
            this.write(frame(FrameType.PING, Flag.ACK, 0, f.payload));
          if (f.type === FrameType.SETTINGS && this.ackSettings)
            this.write(frame(FrameType.SETTINGS, Flag.ACK, 0));
        }
        this.pending = this.pending.subarray(9 + len);
      }
      this.wake();
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        this.wake();
        resolve();
      }),
    );
  }

  /** Connects and sends the preface and an empty SETTINGS frame. */
  /** `localAddress`: the client's address (another loopback address, 127.0.0.2, is another client). */
  static async open(
    port: number,
    initialSettings = settings(),
    localAddress?: string,
  ): Promise<RawConnection> {
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      ...(localAddress !== undefined && { localAddress }),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const c = new RawConnection(socket);
    c.write(PREFACE, initialSettings);
    return c;
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  write(...chunks: Buffer[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(chunks));
  }

  /** The first received frame that matches, waiting up to `timeoutMs`; undefined if none came. */
  async waitFor(match: (f: H2Frame) => boolean, timeoutMs = 20_000): Promise<H2Frame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.frames.find(match);
      if (f !== undefined || this.isClosed || Date.now() >= deadline) return f;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves true once the server closed the socket, false after `timeoutMs`. */
  async waitClosed(timeoutMs = 20_000): Promise<boolean> {
    if (this.isClosed) return true;
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      this.closed.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return closed;
  }

  /** The GOAWAY frames received: error code and debug text. */
  goaways(): { code: number; lastStreamId: number; debug: string }[] {
    return this.frames
      .filter((f) => f.type === FrameType.GOAWAY)
      .map((f) => ({
        lastStreamId: f.payload.readUInt32BE(0) & 0x7fffffff,
        code: f.payload.readUInt32BE(4),
        debug: f.payload.subarray(8).toString(),
      }));
  }

  /** PING frames the server sent (not acknowledgements). */
  pingsReceived(): number {
    return this.frames.filter((f) => f.type === FrameType.PING && (f.flags & Flag.ACK) === 0).length;
  }

  /** The server's SETTINGS (the first non-ACK frame) as id → value. */
  serverSettings(): Map<number, number> {
    const f = this.frames.find((x) => x.type === FrameType.SETTINGS && (x.flags & Flag.ACK) === 0);
    const out = new Map<number, number>();
    if (f === undefined) return out;
    for (let i = 0; i + 6 <= f.payload.length; i += 6)
      out.set(f.payload.readUInt16BE(i), f.payload.readUInt32BE(i + 2));
    return out;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }
}

/** Open file descriptors of this process (Linux). */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}
