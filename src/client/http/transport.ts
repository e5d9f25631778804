/**
 * One HTTP/1.1 request over a keep-alive agent (node:http or node:https), bodies sent as a list of
 * chunks (corked into one write) and read into one Buffer sized from Content-Length, or (stream()) handed
 * over as it arrives. Connection failures become NereidClientError without a status; an aborted call
 * rejects with the signal's reason.
 */
import http, { type RequestOptions } from 'node:http';
import https from 'node:https';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { NereidClientError } from '../errors.js';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

export interface HttpTransportOptions {
  /** Most sockets open to the server at once (default: unlimited; one per concurrent call). */
  readonly maxSockets?: number;
  /** Headers sent with every call. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TransportResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A response whose body is read as it arrives (server-sent events). */
export interface StreamingResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The body's chunks as they arrive; ends with the body, throws on a broken connection or an abort. */
  readonly body: AsyncIterable<Buffer>;
  /** Stops reading: closes the connection (the server sees its client go away). */
  destroy(): void;
}

export interface TransportRequest {
  readonly method: 'GET' | 'POST';
  /** Path below the base URL, starting with '/'. */
  readonly path: string;
  readonly body?: readonly Buffer[];
  readonly byteLength?: number;
  readonly headers?: Readonly<Record<string, string | number>>;
  readonly signal?: AbortSignal;
}

/** Accepts `host:port[/base]` (as Triton's clients do) or a full http(s) URL. */
export function parseBaseUrl(url: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new TypeError(`invalid server URL '${url}'`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new TypeError(`server URL '${url}' must be http or https`);
  }
  return u;
}

export class HttpTransport {
  readonly #base: URL;
  readonly #basePath: string;
  readonly #module: typeof http | typeof https;
  readonly #agent: http.Agent;
  readonly #headers: Readonly<Record<string, string>>;
  #closed = false;

  constructor(url: string, options: HttpTransportOptions = {}) {
    this.#base = parseBaseUrl(url);
    this.#basePath = this.#base.pathname.replace(/\/+$/, '');
    const secure = this.#base.protocol === 'https:';
    this.#module = secure ? https : http;
    const agentOptions: http.AgentOptions & { noDelay: boolean } = {
      keepAlive: true,
      maxSockets: options.maxSockets ?? Infinity,
      // Reuse the most recently used socket: fewer sockets stay warm under light load.
      scheduling: 'lifo',
      noDelay: true,
    };
    this.#agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.#headers = options.headers ?? {};
  }

  /** The server's base URL (for messages). */
  get url(): string {
    return this.#base.href;
  }

  request(req: TransportRequest): Promise<TransportResponse> {
    if (this.#closed) return Promise.reject(new NereidClientError('the client is closed'));
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const headers: Record<string, string | number> = { ...this.#headers, ...req.headers };
    if (req.body !== undefined) headers['Content-Length'] = req.byteLength ?? sum(req.body);
    return this.#attempt(req, headers, true);
  }

  /**
   * Sends the request and resolves once the response head arrived; the body is read by the caller. Not
   * retried: a streaming request may have started work on the server.
   */
  stream(req: TransportRequest): Promise<StreamingResponse> {
    if (this.#closed) return Promise.reject(new NereidClientError('the client is closed'));
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const headers: Record<string, string | number> = { ...this.#headers, ...req.headers };
    if (req.body !== undefined) headers['Content-Length'] = req.byteLength ?? sum(req.body);
    return new Promise<StreamingResponse>((resolve, reject) => {
      const r = this.#module.request(this.#options(req, headers, signal), (res) => {
        const connectionError = (err: Error): Error => this.#connectionError(err, signal);
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          headers: res.headers,
          body: (async function* () {
            try {
              for await (const chunk of res) yield chunk as Buffer;
            } catch (err) {
              throw connectionError(err as Error);
            }
            if (!res.complete) throw new NereidClientError('the connection closed before the response ended');
          })(),
          destroy: () => r.destroy(),
        });
      });
      r.on('error', (err) => reject(this.#connectionError(err, signal)));
      r.end(req.body === undefined ? undefined : Buffer.concat(req.body));
    });
  }

  close(): void {
    this.#closed = true;
    this.#agent.destroy();
  }

  /**
   * One try. A kept-alive socket that the server closed while it sat idle fails with ECONNRESET before
   * any answer; such a request was normally never read, so it is sent once more on a fresh socket (the
   * retry Node's documentation recommends for reused sockets). Fresh sockets are never retried.
   */
  #attempt(
    req: TransportRequest,
    headers: Record<string, string | number>,
    mayRetry: boolean,
  ): Promise<TransportResponse> {
    const signal = req.signal;
    return new Promise<TransportResponse>((resolve, reject) => {
      let answered = false;
      const r = this.#module.request(this.#options(req, headers, signal), (res) => {
        answered = true;
        const length = Number(res.headers['content-length']);
        const known = Number.isSafeInteger(length) && length >= 0;
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          received += c.length;
        });
        res.on('error', (err) => reject(this.#connectionError(err, signal)));
        res.on('end', () => {
          if (known && received !== length) {
            reject(new NereidClientError(`connection closed after ${received} of ${length} response bytes`));
            return;
          }
          const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
          const respond = (decoded: Buffer): void =>
            resolve({
              status: res.statusCode ?? 0,
              statusText: res.statusMessage ?? '',
              headers: res.headers,
              body: decoded,
            });
          const coding = res.headers['content-encoding'];
          if (coding === undefined || coding === 'identity' || body.length === 0) {
            respond(body);
            return;
          }
          decompress(body, coding).then(respond, (err: unknown) =>
            reject(
              new NereidClientError(`cannot decompress the response: ${(err as Error).message}`, {
                cause: err,
              }),
            ),
          );
        });
      });
      r.on('error', (err: NodeJS.ErrnoException) => {
        if (mayRetry && !answered && r.reusedSocket && err.code === 'ECONNRESET' && !signal?.aborted) {
          resolve(this.#attempt(req, headers, false));
          return;
        }
        reject(this.#connectionError(err, signal));
      });
      if (req.body === undefined || req.body.length === 0) {
        r.end();
      } else if (req.body.length === 1) {
        r.end(req.body[0]);
      } else {
        r.cork();
        for (const chunk of req.body) r.write(chunk);
        r.end();
      }
    });
  }

  /** The node:http request options for `req` on this client's base URL, agent and signal. */
  #options(
    req: { readonly path: string; readonly method: string },
    headers: Record<string, string | number>,
    signal: AbortSignal | undefined,
  ): RequestOptions {
    return {
      protocol: this.#base.protocol,
      hostname: this.#base.hostname,
      port: this.#base.port,
      path: this.#basePath + req.path,
      method: req.method,
      headers,
      agent: this.#agent,
      signal,
    };
  }

  #connectionError(err: Error, signal: AbortSignal | undefined): Error {
    if (signal?.aborted) return abortReason(signal);
    return new NereidClientError(`request to ${this.#base.href} failed: ${err.message}`, { cause: err });
  }
}

function sum(chunks: readonly Buffer[]): number {
  let n = 0;
  for (const c of chunks) n += c.length;
  return n;
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

async function decompress(body: Buffer, coding: string): Promise<Buffer> {
  if (coding === 'gzip') return gunzip(body);
  if (coding === 'deflate') return inflate(body);
  throw new Error(`unsupported Content-Encoding '${coding}'`);
}
