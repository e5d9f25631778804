/**
 * A minimal HTTP/1.1 client connection over node:net, for the overload tests and the overload benchmark
 * (bench/overload): one request at a time, responses framed by Content-Length (all Nereid answers are). node:http's Agent would cost more CPU per
 * request than the server under test at 2,000 connections, and hides what happened to a connection; here
 * every outcome is seen: the answer's status, a reset or close with the request in flight, a timeout.
 */
import net from 'node:net';

export type Outcome =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly ms: number;
      /** The answer said `Connection: close`. */
      readonly closes: boolean;
      /** The status line and headers (latin1), without the blank line. */
      readonly head: string;
      readonly body: Buffer;
    }
  | { readonly kind: 'lost'; readonly ms: number; readonly reason: string };

const HEADER_END = Buffer.from('\r\n\r\n');

/** Reads the status and Content-Length of a response head (latin1 text without the blank line). */
function parseHead(head: string): { status: number; length: number; closes: boolean } {
  const status = Number(head.slice(9, 12));
  const m = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
  const closes = /\r\nconnection:[ \t]*close/i.test(head);
  return { status, length: m === null ? 0 : Number(m[1]), closes };
}

export class RawConnection {
  private readonly socket: net.Socket;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: ((o: Outcome) => void) | undefined;
  private sentAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private connected = false;
  closed = false;
  private readonly closedPromise: Promise<void>;

  /** `onConnect` gets null when connected, or the error's code. */
  constructor(
    port: number,
    host: string,
    private readonly timeoutMs: number,
    onConnect: (err: string | null) => void,
  ) {
    this.socket = net.connect({ port, host, noDelay: true });
    this.closedPromise = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.once('connect', () => {
      this.connected = true;
      onConnect(null);
    });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!this.connected) onConnect(err.code ?? err.message);
      this.fail(err.code ?? err.message);
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.fail('closed by the server');
    });
  }

  /**
   * Sends one request (head + body already encoded) and resolves with what became of it. `onWritten` runs
   * once the kernel has taken the last byte.
   */
  send(request: Buffer | readonly Buffer[], onWritten?: () => void): Promise<Outcome> {
    return new Promise((resolve) => {
      if (this.closed) {
        resolve({ kind: 'lost', ms: 0, reason: 'connection already closed' });
        return;
      }
      this.pending = resolve;
      this.sentAt = performance.now();
      const parts = Buffer.isBuffer(request) ? [request] : request;
      this.socket.cork();
      parts.forEach((part, i) =>
        this.socket.write(part, i === parts.length - 1 ? () => onWritten?.() : undefined),
      );
      this.socket.uncork();
      this.timer = setTimeout(() => {
        this.fail(`no answer within ${this.timeoutMs} ms`);
        this.socket.destroy();
      }, this.timeoutMs);
    });
  }

  /** Resolves once the socket has closed (either side). */
  whenClosed(): Promise<void> {
    return this.closedPromise;
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private settle(o: Outcome): void {
    const resolve = this.pending;
    this.pending = undefined;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    resolve?.(o);
  }

  private fail(reason: string): void {
    if (this.pending === undefined) return;
    this.settle({ kind: 'lost', ms: performance.now() - this.sentAt, reason });
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const end = this.buffer.indexOf(HEADER_END);
    if (end === -1) return;
    const text = this.buffer.subarray(0, end).toString('latin1');
    const head = parseHead(text);
    const total = end + 4 + head.length;
    if (this.buffer.length < total) return;
    const body = this.buffer.subarray(end + 4, total);
    this.buffer = this.buffer.subarray(total);
    if (this.pending === undefined) return; // an answer nobody asked for: ignore
    this.settle({
      kind: 'response',
      status: head.status,
      ms: performance.now() - this.sentAt,
      closes: head.closes,
      head: text,
      body,
    });
    if (head.closes) this.close();
  }
}

/** Opens a connection; resolves with it, or with the connect error's code. */
export function connect(port: number, host: string, timeoutMs: number): Promise<RawConnection | string> {
  return new Promise((resolve) => {
    const c: RawConnection = new RawConnection(port, host, timeoutMs, (err) => resolve(err ?? c));
  });
}

/** The head of a request, with Content-Length. */
export function requestHead(
  method: string,
  path: string,
  bodyLength: number,
  extra: Readonly<Record<string, string | number>> = {},
): Buffer {
  let head = `${method} ${path} HTTP/1.1\r\nHost: bench\r\n`;
  if (bodyLength > 0 || method === 'POST') head += `Content-Length: ${bodyLength}\r\n`;
  for (const [k, v] of Object.entries(extra)) head += `${k}: ${v}\r\n`;
  return Buffer.from(head + '\r\n', 'latin1');
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function summarize(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (x: number): number => Math.round(x * 10) / 10;
  return {
    n: sorted.length,
    p50: r(percentile(sorted, 50)),
    p99: r(percentile(sorted, 99)),
    max: r(sorted[sorted.length - 1] ?? Number.NaN),
  };
}
