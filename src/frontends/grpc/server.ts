/**
 * The gRPC endpoint (`inference.GRPCInferenceService` + `grpc.health.v1.Health`) implemented directly on
 * node:http2: measured here, @grpc/grpc-js moves 600 KB messages at roughly half the rate (it keeps the
 * default 64 KiB flow-control windows and copies each message several times), see docs/grpc.md. Streams
 * get large flow-control windows, messages are framed by framing.ts, ModelInfer / ModelStreamInfer use
 * the hand-written codecs and the cold rpcs protobufjs. Every error goes through status.ts. close()
 * refuses new calls, lets running ones finish and ends idle inference streams.
 */
import { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { InferenceServerApi } from '../../core/server-api.js';
import { ServerCall } from './call.js';
import { ACCEPT_ENCODING, frame, isSupportedEncoding } from './framing.js';
import { COLD_RPCS } from './handlers.js';
import { modelInfer, type InferContext } from './infer.js';
import { MAX_MESSAGE_SIZE } from './infer-response.js';
import { codec, protoRoot } from './messages.js';
import { Status, toGrpcError } from './status.js';
import { SHUTTING_DOWN_MESSAGE, StreamInfer } from './stream-infer.js';
import type { TlsCredentials } from '../tls.js';
import { createGrpcHttp2Server } from './tls.js';

export interface GrpcFrontendOptions {
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly log: Logger;
  /** Largest request message; default and upper bound INT32_MAX, as Triton. */
  readonly maxMessageSize?: number;
  /** HTTP/2 flow-control window of each stream (SETTINGS_INITIAL_WINDOW_SIZE); default 16 MiB. */
  readonly streamWindowSize?: number;
  /** HTTP/2 flow-control window of each connection; default 64 MiB. */
  readonly connectionWindowSize?: number;
  /** Serve over TLS with these credentials (their owner reloads and closes them); default clear text. */
  readonly tls?: TlsCredentials;
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

export function createGrpcFrontend(api: InferenceServerApi, options: GrpcFrontendOptions): GrpcFrontend {
  const { log } = options;
  const maxMessageSize = Math.min(options.maxMessageSize ?? MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE);
  const streamWindow = Math.min(options.streamWindowSize ?? DEFAULT_STREAM_WINDOW, MAX_WINDOW);
  const connectionWindow = Math.min(options.connectionWindowSize ?? DEFAULT_CONNECTION_WINDOW, MAX_WINDOW);
  protoRoot(); // fail at startup, not on the first call, if the .proto files are missing

  const sessions = new Set<ServerHttp2Session>();
  const streams = new Set<StreamInfer>();
  let closing = false;

  /** Runs a unary rpc: exactly one request message, one response message. */
  const unary = (
    call: ServerCall,
    handle: (message: Buffer, ctx: InferContext) => Promise<Buffer[]>,
  ): void => {
    let message: Buffer | undefined;
    call.start({
      onMessage: (m) => {
        if (message !== undefined) {
          call.fail(
            Status.UNIMPLEMENTED,
            `Received a second request message for unary method ${call.method}`,
          );
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
        const request = message;
        void (async () => {
          let pieces: Buffer[];
          try {
            pieces = await handle(request, ctx);
          } catch (err) {
            if (!call.finished) {
              call.finish(toGrpcError(err, { log, method: call.method, requestId: ctx.requestId }));
            }
            return;
          }
          call.send(pieces);
          call.finishOk();
        })();
      },
    });
  };

  const onStream = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    stream.on('error', () => {
      // A reset or protocol error on one stream ends that call only (ServerCall sees 'close').
    });
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
    if (log.isVerbose()) log.verbose(`GRPC request: ${path}`);
    const call = new ServerCall(stream, path, headers, maxMessageSize);
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
    if (path === MODEL_INFER_PATH) {
      unary(call, (message, ctx) => modelInfer(api, message, call.signal, ctx));
      return;
    }
    if (path === MODEL_STREAM_INFER_PATH) {
      const s: StreamInfer = new StreamInfer(api, call, log, () => streams.delete(s));
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

  const server = createGrpcHttp2Server(
    {
      settings: { initialWindowSize: streamWindow, enablePush: false },
      // Node counts queued outgoing data against this (in MB); large responses must not trip it.
      maxSessionMemory: 1 << 20,
    },
    options.tls,
  );
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', (err: Error) => {
      if (log.isVerbose()) log.verbose(`GRPC connection error: ${err.message}`);
    });
    session.setLocalWindowSize(connectionWindow);
  });
  server.on('stream', onStream);
  server.on('sessionError', () => {
    // Reported per session above; a broken connection never takes the server down.
  });

  return {
    listen: () =>
      new Promise((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void => {
          server.off('listening', onListening);
          reject(
            err.code === 'EADDRINUSE'
              ? unavailable(`Socket '${options.address}:${options.port}' already in use`)
              : unavailable(
                  `failed to start the GRPC service at ${options.address}:${options.port}: ${err.message}`,
                ),
          );
        };
        const onListening = (): void => {
          server.off('error', onError);
          server.on('error', (err: Error) => log.error(`GRPC server error: ${err.message}`));
          const addr = server.address() as AddressInfo;
          resolve({ address: addr.address, port: addr.port });
        };
        server.once('error', onError);
        server.once('listening', onListening);
        server.listen(options.port, options.address);
      }),

    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        for (const s of streams) s.shutdown();
        for (const session of sessions) session.close();
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
      }),
  };
}
