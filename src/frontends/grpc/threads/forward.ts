/**
 * The way a gRPC protocol thread hands a call it does not serve (every rpc but ModelInfer, streams, all
 * calls when the access log is on) to the main thread's own gRPC server on 127.0.0.1: the HTTP/2 stream as
 * it came — its headers, every DATA byte in both directions, the response headers, trailers or reset — so
 * the client sees what it would have seen without threads. Each client connection gets a connection of its
 * own to the main thread (opened at its first forwarded call, closed with it), so the main thread's
 * per-connection limits (concurrent streams, buffered bytes) apply to it as to the client's.
 */
import http2, {
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';

export interface ForwardWindows {
  /** The HTTP/2 stream window (SETTINGS_INITIAL_WINDOW_SIZE) of the connection to the main thread. */
  readonly stream: number;
  readonly connection: number;
}

/** Headers without the HTTP/2 pseudo-headers (those are set anew on each side). */
function plain(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (name[0] !== ':') out[name] = value;
  return out;
}

function ignore(): void {}

export class StreamForwarder {
  private readonly sessions = new Map<ServerHttp2Session, ClientHttp2Session>();
  /** Client connections whose close closes their connection to the main thread. */
  private readonly watched = new WeakSet<ServerHttp2Session>();

  constructor(
    private readonly internalPort: number,
    private readonly windows: ForwardWindows,
  ) {}

  /** Relays `stream` (as it arrived, nothing of it read) to the main thread and its answer back. */
  forward(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    const session = stream.session as ServerHttp2Session | undefined;
    if (session === undefined) return;
    let out: ClientHttp2Stream;
    try {
      out = this.sessionFor(session).request({
        ...plain(headers),
        ':method': headers[':method'] ?? 'POST',
        ':path': headers[':path'] ?? '/',
        ':scheme': 'http',
        ':authority': headers[':authority'] ?? `127.0.0.1:${this.internalPort}`,
      });
    } catch {
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    out.on('error', ignore);
    let trailers: IncomingHttpHeaders | undefined;
    out.on('response', (h, flags: number) => {
      if (stream.destroyed) return;
      const { ':status': status, ...rest } = h;
      const reply: OutgoingHttpHeaders = { ':status': status ?? 200, ...plain(rest) };
      if ((flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0 || out.endAfterHeaders) {
        // Trailers-only (an error before any message): sent as it came.
        stream.respond(reply, { endStream: true });
        return;
      }
      stream.respond(reply, { waitForTrailers: true });
      out.pipe(stream);
    });
    out.on('trailers', (t: IncomingHttpHeaders) => {
      trailers = t;
    });
    stream.on('wantTrailers', () => stream.sendTrailers(plain(trailers ?? {})));
    out.on('close', () => {
      if (stream.closed || stream.destroyed) return;
      // A reset by the main thread (or its connection gone before an answer) ends the client's stream too.
      if (out.rstCode !== constants.NGHTTP2_NO_ERROR || !stream.headersSent) {
        stream.close(stream.headersSent ? out.rstCode : constants.NGHTTP2_REFUSED_STREAM);
      }
    });
    stream.on('close', () => {
      if (!out.closed) out.close(constants.NGHTTP2_CANCEL);
    });
    stream.pipe(out);
  }

  /** Closes every connection to the main thread. */
  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }

  private sessionFor(client: ServerHttp2Session): ClientHttp2Session {
    const open = this.sessions.get(client);
    if (open !== undefined && !open.closed && !open.destroyed) return open;
    const session = http2.connect(`http://127.0.0.1:${this.internalPort}`, {
      settings: { initialWindowSize: this.windows.stream, enablePush: false },
    });
    session.on('error', ignore);
    session.once('connect', () => session.setLocalWindowSize(this.windows.connection));
    const forget = (): void => {
      if (this.sessions.get(client) === session) this.sessions.delete(client);
    };
    session.once('close', forget);
    session.once('goaway', forget);
    if (!this.watched.has(client)) {
      this.watched.add(client);
      client.once('close', () => this.sessions.get(client)?.close());
    }
    this.sessions.set(client, session);
    return session;
  }
}
