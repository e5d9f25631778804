/**
 * The gRPC endpoint (`inference.GRPCInferenceService` + `grpc.health.v1.Health`) implemented directly on
 * node:http2: measured here, @grpc/grpc-js moves 600 KB messages at roughly half the rate (it keeps the
 * default 64 KiB flow-control windows and copies each message several times), see docs/grpc.md. Streams
 * get large flow-control windows, messages are framed by framing.ts, ModelInfer / ModelStreamInfer use
 * the hand-written codecs and the cold rpcs protobufjs. Every error goes through status.ts. Each
 * connection's lifecycle (idle, age, keepalive, abuse, budget) is connection.ts's. close() refuses new
 * calls, lets running ones finish and ends idle inference streams.
 */
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from '../connection-share.js';
import { MODEL_VARIANT_HEADER } from '../model-variant.js';
import {
  constants,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import { productToken } from '../../common/product.js';
import type { Logger } from '../../common/logger.js';
import { hostAndPort, type InferenceServerApi, traceCarrier, type TraceEdge } from '../../core/index.js';
import { ByteBudget } from './transport/budget.js';
import { GrpcConnections } from './transport/connection-cap.js';
import { ServerCall, responseHeaders, type CallLimits, type ResponseHeaders } from './transport/call.js';
import {
  ACCEPT_ENCODING,
  DEFAULT_MAX_DECOMPRESSED_SIZE,
  isSupportedEncoding,
  responseEncoding,
  type CompressionLevel,
} from './transport/compression.js';
import { DEFAULT_CONNECTION_SETTINGS, tagSocket, type ConnectionSettings } from './transport/connection.js';
import { frame } from './transport/framing.js';
import { HeaderForwarder } from '../header-forward.js';
import { listen } from '../listen.js';
import {
  GRPC_METHOD_CATEGORY,
  isAllowed,
  restrictionTable,
  type RestrictionCheck,
  type Restrictions,
} from '../restricted.js';
import { COLD_RPCS } from './handlers.js';
import type { AccessLog } from '../access-log.js';
import { modelInfer, type InferContext } from './infer.js';
import { MAX_MESSAGE_SIZE } from './infer-response.js';
import { codec, protoRoot } from './messages.js';
import { Status, toGrpcError } from './transport/status.js';
import type { RequestCounter } from '../request-counts.js';
import { SHUTTING_DOWN_MESSAGE, StreamInfer } from './stream-infer.js';
import type { TlsCredentials } from '../tls.js';
import { createGrpcHttp2Server } from './transport/tls.js';

export interface GrpcFrontendOptions {
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly log: Logger;
  /** `--access-log`: one line per ModelInfer call and per request on a ModelStreamInfer stream. */
  readonly accessLog?: AccessLog;
  /** Largest request message; default and upper bound INT32_MAX, as Triton. */
  readonly maxMessageSize?: number;
  /** HTTP/2 flow-control window of each stream (SETTINGS_INITIAL_WINDOW_SIZE); default 16 MiB. */
  readonly streamWindowSize?: number;
  /** HTTP/2 flow-control window of each connection; default 64 MiB. */
  readonly connectionWindowSize?: number;
  /** Largest request message after decompression; default 64 MiB. */
  readonly maxDecompressedSize?: number;
  /** --grpc-max-connections: connections over it get GOAWAY ENHANCE_YOUR_CALM and close; 0 = no cap. */
  readonly maxConnections?: number;
  /**
   * --grpc-max-connections-per-address: connections one client address (IPv4, or IPv6 /64) may hold;
   * over it, GOAWAY ENHANCE_YOUR_CALM and close. Default 2048; 0 = no limit (../connection-share.ts).
   */
  readonly maxConnectionsPerAddress?: number;
  /** --grpc-request-read-timeout (ms): see CallLimits.requestReadTimeoutMs; default 60,000, 0 = none. */
  readonly requestReadTimeoutMs?: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS: calls one connection may have open at once; default 1000. */
  readonly maxConcurrentStreams?: number;
  /** Bytes of request messages still arriving that the whole server may hold; default 1 GiB. */
  readonly maxBufferedBytes?: number;
  /** Keepalive, age, idle and per-connection limits; defaults DEFAULT_CONNECTION_SETTINGS (Triton's). */
  readonly connection?: Partial<ConnectionSettings>;
  /** Compression of ModelInfer / ModelStreamInfer responses; default none. */
  readonly responseCompression?: CompressionLevel;
  /** A ModelStreamInfer with nothing in flight that receives nothing this long is ended; 0 = never. */
  readonly streamIdleTimeoutMs?: number;
  /** `--grpc-restricted-protocol`: categories that need a metadata key (restricted.ts). */
  readonly restrictedProtocols?: Restrictions;
  /** `--grpc-header-forward-pattern`: metadata forwarded to models as parameters (header-forward.ts). */
  readonly headerForwardPattern?: string;
  /** Serve over TLS with these credentials (their owner reloads and closes them); default clear text. */
  readonly tls?: TlsCredentials;
  /** Counts each finished call by rpc and status (the metrics' nereid_grpc_requests_total). */
  readonly requestCounts?: RequestCounter;
  /** A protocol thread's port: the caps above are its shares, refusals quote these (the whole port's). */
  readonly quotedCaps?: { readonly maxConnections: number; readonly maxConnectionsPerAddress: number };
}

/** A call's rpc label: `service/method` for an rpc this server has, `unknown` for any other path. */
function rpcLabel(path: string): string {
  const known = path === MODEL_INFER_PATH || path === MODEL_STREAM_INFER_PATH || COLD_RPCS.has(path);
  return known ? path.slice(1) : 'unknown';
}

export interface GrpcFrontend {
  /** Starts listening; resolves with the bound address and port. */
  listen(): Promise<{ address: string; port: number }>;
  /** Refuses new calls, lets running ones finish, ends idle inference streams, closes connections. */
  close(): Promise<void>;
}

export const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';
export const MODEL_STREAM_INFER_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';

const DEFAULT_STREAM_WINDOW = 16 * 1024 * 1024;
const DEFAULT_CONNECTION_WINDOW = 64 * 1024 * 1024;
const MAX_WINDOW = 0x7fffffff;
/**
 * SETTINGS_MAX_FRAME_SIZE the server accepts. At HTTP/2's default (16 KiB) a 600 KB message reaches
 * JavaScript as ~47 DATA chunks, each a trip through node's stream machinery and the message reader; with
 * larger frames the chunks follow the socket reads (64 KiB), ~10 per such message. Memory is still bounded
 * by the flow-control windows and the byte budgets, not by the frame size.
 */
export const MAX_FRAME_SIZE = 1024 * 1024;
export const DEFAULT_MAX_CONCURRENT_STREAMS = 1000;

/**
 * SETTINGS_MAX_CONCURRENT_STREAMS as advertised (and enforced by nghttp2) for a limit of `limit` streams:
 * above the limit, which the server enforces itself. nghttp2 answers a stream past its own acknowledged
 * setting with a GOAWAY that ends every call of the connection (issue 33); a stream past the server's limit
 * but within this headroom is refused alone with REFUSED_STREAM, which gRPC clients retry.
 */
export function advertisedMaxStreams(limit: number): number {
  return Math.min(2 ** 31 - 1, limit + Math.max(8, Math.ceil(limit / 4)));
}
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 3_600_000;
/** Default --grpc-max-connections: the HTTP port's cap (well below common fd limits). */
export const DEFAULT_GRPC_MAX_CONNECTIONS = 8192;
/** Default --grpc-request-read-timeout: a unary request, or a started message, must arrive within 60 s. */
export const DEFAULT_REQUEST_READ_TIMEOUT_MS = 60_000;

/** A reset or protocol error on one stream ends that call only (ServerCall sees 'close'). */
function ignoreStreamError(): void {}

/** Node passes the raw header list with each stream; this rebuilds one from the parsed headers otherwise. */
function flatten(headers: IncomingHttpHeaders): string[] {
  const raw: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value ?? '']) raw.push(name, v);
  }
  return raw;
}

/** Where a traced call arrived (its SERVER span's attributes): the rpc and the :authority's host and port. */
export function grpcTraceEdge(method: string, headers: IncomingHttpHeaders): TraceEdge {
  const { address, port } = hostAndPort(headers[':authority']);
  return {
    protocol: 'grpc',
    method,
    ...(address !== undefined && { serverAddress: address }),
    ...(port !== undefined && { serverPort: port }),
  };
}

/** A traced call's read and response timestamps (Triton writes them once the reply goes out), then GRPC_SEND_START. */
function traceSendStart(ctx: InferContext, readStart: bigint, readEnd: bigint, responded: bigint): void {
  const trace = ctx.trace;
  if (!trace) return;
  trace.capture('GRPC_WAITREAD_START', readStart);
  trace.capture('GRPC_WAITREAD_END', readEnd);
  if (responded !== 0n) trace.capture('INFER_RESPONSE_COMPLETE', responded);
  trace.capture('GRPC_SEND_START');
}

/** Runs a unary rpc: exactly one request message, one response message. */
export function runUnary(
  call: ServerCall,
  handle: (message: Buffer, ctx: InferContext) => Promise<Buffer[]>,
  observed: boolean,
  log: Logger,
  accessLog: AccessLog | undefined,
): void {
  let message: Buffer | undefined;
  // Only an inference call that may be traced or logged reads the clock.
  const readStart = observed ? process.hrtime.bigint() : 0n;
  call.start({
    onMessage: (m) => {
      if (message !== undefined) {
        call.fail(Status.UNIMPLEMENTED, `Received a second request message for unary method ${call.method}`);
        return;
      }
      message = m;
    },
    onEnd: () => {
      if (message === undefined) {
        call.finish({
          code: Status.UNIMPLEMENTED,
          details: `Received no request message for unary method ${call.method}`,
        });
        return;
      }
      const ctx: InferContext = {};
      const readEnd = observed ? process.hrtime.bigint() : 0n;
      if (observed && accessLog) ctx.timings = { queueNs: 0, computeNs: 0 };
      const request = message;
      void (async () => {
        let pieces: Buffer[] | undefined;
        let code: number = Status.OK;
        let responded = 0n;
        try {
          pieces = await handle(request, ctx);
          if (ctx.trace) responded = process.hrtime.bigint();
        } catch (err) {
          const e = toGrpcError(err, { log, method: call.method, requestId: ctx.requestId });
          code = e.code;
          if (!call.finished) {
            traceSendStart(ctx, readStart, readEnd, 0n);
            call.finish(e);
          }
        }
        if (pieces !== undefined) {
          traceSendStart(ctx, readStart, readEnd, responded);
          call.send(pieces);
          call.finishOk();
        }
        if (ctx.trace) {
          ctx.trace.capture('GRPC_SEND_END');
          ctx.trace.end(code);
        }
        if (observed && accessLog) {
          const t = ctx.timings;
          const computed = t !== undefined && (t.queueNs > 0 || t.computeNs > 0);
          accessLog.write({
            protocol: 'grpc',
            model: ctx.model ?? '',
            version: ctx.version ?? '',
            status: code,
            bytesIn: request.length,
            bytesOut: pieces === undefined ? 0 : pieces.reduce((n, p) => n + p.length, 0),
            durationNs: Number(process.hrtime.bigint() - readStart),
            ...(computed && { queueNs: t.queueNs, computeNs: t.computeNs }),
            client: call.stream.session?.socket?.remoteAddress ?? '',
            requestId: ctx.requestId ?? '',
            traceId: ctx.trace?.traceId ?? '',
          });
        }
      })();
    },
  });
}

/** What every call and connection of one frontend shares, worked out once from its options. */
export interface GrpcSettings {
  readonly limits: CallLimits;
  readonly streamWindow: number;
  readonly connectionWindow: number;
  readonly maxConcurrentStreams: number;
  readonly connectionSettings: ConnectionSettings;
  /** --grpc-max-connections; 0 = no cap. */
  readonly maxConnections: number;
  /** --grpc-max-connections-per-address; 0 = no limit. */
  readonly maxConnectionsPerAddress: number;
  /** Request bytes still arriving, over all connections (--grpc-max-buffered-bytes). */
  readonly serverBudget: ByteBudget;
  readonly compression: CompressionLevel;
  readonly streamIdleTimeoutMs: number;
  readonly replyHeaders: ResponseHeaders;
  readonly restricted: ReadonlyMap<string, RestrictionCheck>;
  readonly forwardHeaders: HeaderForwarder | undefined;
  readonly quotedCaps?: { readonly maxConnections: number; readonly maxConnectionsPerAddress: number };
}

/**
 * Options → settings: defaults, upper bounds, the restriction table; fails at startup on a bad option.
 * `serverToken` is the Server metadata's product token (common/product.ts).
 */
export function grpcSettings(
  serverToken: string,
  options: Omit<GrpcFrontendOptions, 'log' | 'address' | 'port'>,
): GrpcSettings {
  const maxMessageSize = Math.min(options.maxMessageSize ?? MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE);
  const requestReadTimeoutMs = options.requestReadTimeoutMs ?? DEFAULT_REQUEST_READ_TIMEOUT_MS;
  const limits: CallLimits = {
    maxMessageSize,
    maxDecompressedSize: options.maxDecompressedSize ?? DEFAULT_MAX_DECOMPRESSED_SIZE,
    requestReadTimeoutMs,
  };
  const serverBudget = new ByteBudget(
    options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    undefined,
    'the server',
    '--grpc-max-buffered-bytes',
  );
  protoRoot(); // fail at startup, not on the first call, if the .proto files are missing
  return {
    limits,
    streamWindow: Math.min(options.streamWindowSize ?? DEFAULT_STREAM_WINDOW, MAX_WINDOW),
    connectionWindow: Math.min(options.connectionWindowSize ?? DEFAULT_CONNECTION_WINDOW, MAX_WINDOW),
    maxConcurrentStreams: options.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS,
    connectionSettings: { ...DEFAULT_CONNECTION_SETTINGS, requestReadTimeoutMs, ...options.connection },
    maxConnections: options.maxConnections ?? DEFAULT_GRPC_MAX_CONNECTIONS,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    serverBudget,
    compression: options.responseCompression ?? 'none',
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    replyHeaders: responseHeaders(serverToken),
    restricted: restrictionTable(GRPC_METHOD_CATEGORY, options.restrictedProtocols, 'grpc'),
    forwardHeaders:
      options.headerForwardPattern === undefined
        ? undefined
        : new HeaderForwarder(options.headerForwardPattern, 'grpc'),
    ...(options.quotedCaps && { quotedCaps: options.quotedCaps }),
  };
}

/** The HTTP/2 server with the frontend's windows and stream limit; sessions and streams go to the callers. */
function createServer(
  settings: GrpcSettings,
  tls: TlsCredentials | undefined,
  onSession: (session: ServerHttp2Session) => void,
  onStream: (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    flags: number,
    rawHeaders?: readonly string[],
  ) => void,
): ReturnType<typeof createGrpcHttp2Server> {
  const server = createGrpcHttp2Server(
    {
      settings: {
        initialWindowSize: settings.streamWindow,
        enablePush: false,
        maxConcurrentStreams: advertisedMaxStreams(settings.maxConcurrentStreams),
        maxFrameSize: MAX_FRAME_SIZE,
      },
      // Node counts queued outgoing data against this (in MB); large responses must not trip it.
      maxSessionMemory: 1 << 20,
    },
    tls,
  );
  // A connection must be able to destroy its real socket (connection.ts): on TLS that is the TLS socket.
  server.prependListener(tls === undefined ? 'connection' : 'secureConnection', tagSocket);
  server.on('session', onSession);
  server.on('stream', onStream);
  server.on('sessionError', () => {
    // Reported per session above; a broken connection never takes the server down.
  });
  return server;
}

/** How a port (the main thread's frontend, or a protocol thread's, threads/worker.ts) serves what it admits. */
export interface GrpcPortHandlers {
  /** A call that passed the port's checks. */
  readonly startCall: (
    call: ServerCall,
    path: string,
    headers: IncomingHttpHeaders,
    raw: readonly string[],
  ) => void;
  /**
   * Asked first for each stream within the connection's stream limit, before any other check: true when it
   * took the stream as it is (a protocol thread forwards it to the main thread, whose port checks it).
   */
  readonly take?: (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    raw: readonly string[],
  ) => boolean;
  /** Told when the port starts closing (after it refuses new calls, before connections close). */
  readonly onClose?: () => void;
  /** Where the verbose log says a call arrived: "" (the main thread) or " on protocol thread <n>". */
  readonly where?: string;
}

export interface GrpcPortOptions {
  readonly log: Logger;
  readonly tls?: TlsCredentials;
  readonly requestCounts?: RequestCounter;
  readonly address: string;
  readonly port: number;
  /** Bind with SO_REUSEPORT (protocol threads, Node 22.12+). */
  readonly reusePort?: boolean;
}

/**
 * A gRPC port: the HTTP/2 server, its connections and caps, and the checks every stream passes before it
 * becomes a call (the stream limit, :method, content-type, grpc-encoding, shutdown, --grpc-restricted-protocol);
 * what an admitted call does is `handlers`'.
 */
export function createGrpcPort(
  settings: GrpcSettings,
  options: GrpcPortOptions,
  handlers: GrpcPortHandlers,
): GrpcFrontend {
  const { log, requestCounts } = options;
  const { limits, replyHeaders, restricted } = settings;
  const { startCall, take } = handlers;
  const where = handlers.where ?? '';
  const connections = new GrpcConnections(settings, log);
  let closing = false;

  const onStream = (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    _flags: number,
    rawHeaders?: readonly string[],
  ): void => {
    stream.on('error', ignoreStreamError);
    // Every stream counts (activity, idle time, resets), whether or not it becomes a call.
    const connection = connections.get(stream.session as ServerHttp2Session);
    const over = connection !== undefined && connection.openStreams >= settings.maxConcurrentStreams;
    connection?.streamStarted(stream);
    if (over) {
      // Past the limit: this stream alone is refused (it counts as a reset for the reset-flood guard).
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    if (take !== undefined && take(stream, headers, rawHeaders ?? flatten(headers))) return;
    const path = headers[':path'] ?? '';
    if (headers[':method'] !== 'POST') {
      stream.respond({ ':status': 405 }, { endStream: true });
      return;
    }
    const contentType = headers['content-type'] ?? '';
    if (!contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    if (log.isVerbose()) log.verbose(`GRPC request${where}: ${path}`);
    const call = new ServerCall(stream, path, headers, limits, connection, replyHeaders);
    if (requestCounts) {
      const rpc = rpcLabel(path);
      stream.once('close', () => requestCounts.grpc(rpc, call.outcome ?? Status.CANCELLED));
    }
    const encoding = call.metadata('grpc-encoding');
    if (encoding !== undefined && !isSupportedEncoding(encoding)) {
      call.finish({
        code: Status.UNIMPLEMENTED,
        details: `Compression algorithm '${encoding}' is not supported (accepted: ${ACCEPT_ENCODING})`,
      });
      return;
    }
    if (closing) {
      call.finish({ code: Status.UNAVAILABLE, details: SHUTTING_DOWN_MESSAGE });
      return;
    }
    const raw = rawHeaders ?? flatten(headers);
    // Most servers restrict nothing: skip hashing the path then.
    const restriction = restricted.size === 0 ? undefined : restricted.get(path);
    if (restriction !== undefined && !isAllowed(restriction, headers, raw)) {
      call.finish({ code: Status.UNAVAILABLE, details: restriction.message });
      return;
    }
    startCall(call, path, headers, raw);
  };

  const onSession = (session: ServerHttp2Session): void => connections.admit(session, closing);
  const server = createServer(settings, options.tls, onSession, onStream);

  return {
    listen: async () => {
      const target = options.reusePort ? { ...options, reusePort: true } : options;
      const bound = await listen(server, 'GRPC', target);
      server.on('error', (err: Error) => log.error(`GRPC server error: ${err.message}`));
      return bound;
    },

    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        handlers.onClose?.();
        // Running calls finish (SIGTERM's --exit-timeout-secs bounds them); idle connections close now.
        for (const connection of connections.values()) connection.beginClose(undefined);
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
      }),
  };
}

/** ModelInfer and ModelStreamInfer answers compressed as --grpc-infer-response-compression-level and the client allow. */
export function compressInferResponses(call: ServerCall, compression: CompressionLevel): void {
  const responseCoding = responseEncoding(compression, call.metadata('grpc-accept-encoding'));
  if (responseCoding !== undefined) call.compress(responseCoding);
}

export function createGrpcFrontend(api: InferenceServerApi, options: GrpcFrontendOptions): GrpcFrontend {
  const { log, accessLog } = options;
  const settings = grpcSettings(productToken(api.serverMetadata().version), options);
  const { compression, streamIdleTimeoutMs, forwardHeaders } = settings;
  const streams = new Set<StreamInfer>();

  const unary = (
    call: ServerCall,
    handle: (message: Buffer, ctx: InferContext) => Promise<Buffer[]>,
    observed = false,
  ): void => runUnary(call, handle, observed, log, accessLog);

  /** A call that passed the port's checks: ModelInfer, ModelStreamInfer or one of the other rpcs. */
  const startCall = (
    call: ServerCall,
    path: string,
    headers: IncomingHttpHeaders,
    raw: readonly string[],
  ): void => {
    if (path === MODEL_INFER_PATH || path === MODEL_STREAM_INFER_PATH)
      compressInferResponses(call, compression);
    if (path === MODEL_INFER_PATH) {
      const forwarded = forwardHeaders?.parameters(raw);
      const carrier = traceCarrier(headers.traceparent, headers.tracestate, () =>
        grpcTraceEdge('ModelInfer', headers),
      );
      const variant = call.metadata(MODEL_VARIANT_HEADER);
      unary(
        call,
        (message, ctx) => modelInfer(api, message, call.signal, ctx, forwarded, carrier, variant),
        true,
      );
      return;
    }
    if (path === MODEL_STREAM_INFER_PATH) {
      const forwarded = forwardHeaders?.parameters(raw);
      const carrier = traceCarrier(headers.traceparent, headers.tracestate, () =>
        grpcTraceEdge('ModelStreamInfer', headers),
      );
      const s: StreamInfer = new StreamInfer(
        api,
        call,
        log,
        () => streams.delete(s),
        streamIdleTimeoutMs,
        forwarded,
        {
          ...(accessLog && { accessLog }),
          ...(carrier && { carrier }),
          client: call.stream.session?.socket?.remoteAddress ?? '',
        },
      );
      streams.add(s);
      return;
    }
    const rpc = COLD_RPCS.get(path);
    if (rpc === undefined) {
      call.finish({ code: Status.UNIMPLEMENTED, details: `Method not found: ${path}` });
      return;
    }
    const requestCodec = codec(rpc.request);
    const responseCodec = codec(rpc.response);
    unary(call, async (message) => [
      frame(responseCodec.encode(await rpc.handle(api, requestCodec.decode(message)))),
    ]);
  };

  return createGrpcPort(settings, options, {
    startCall,
    onClose: () => {
      for (const s of streams) s.shutdown();
    },
  });
}
