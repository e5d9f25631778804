/**
 * --grpc-infer-thread-count: the gRPC frontend with its protocol work on N threads (worker.ts). The threads
 * hold the gRPC port (each its own listener, SO_REUSEPORT, started by ../../threads/pool.ts as the HTTP
 * threads are); the main thread keeps the usual frontend (server.ts) on 127.0.0.1 at a port of its own for
 * the streams the threads forward, and runs each ModelInfer the threads decoded through the core's one
 * inference call (core/call.ts) as infer.ts modelInfer does: traced, the model resolved (after an on-demand
 * load), decoupled models refused, Triton's request rules' refusal raised after those, cancelled when the
 * client goes, counted; errors mapped to their status by the same funnel (transport/status.ts).
 *
 * The connection caps hold for the whole port: each thread takes an equal share of --grpc-max-connections
 * and --grpc-max-connections-per-address (../../threads/pool.ts capShare) for the client connections it
 * accepted; the main thread's own server, which only the threads reach, has no cap of its own.
 */
import { NereidError } from '../../../common/errors.js';
import type { LogSettings } from '../../../common/logger.js';
import { productToken } from '../../../common/product.js';
import {
  refuseDecoupled,
  resolveCall,
  runCall,
  traceCarrier,
  type InferenceServerApi,
  type RequestTrace,
  type ResolvedModel,
} from '../../../core/index.js';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from '../../connection-share.js';
import { returnController, takeController } from '../../signal-pool.js';
import {
  capShare,
  ProtocolThreads,
  threadsRefusal as sharedRefusal,
  type ProtocolThread,
} from '../../threads/pool.js';
import { packTensors, unpackTensors, type Coalescer, type ThreadControl } from '../../threads/wire.js';
import { DECOUPLED_UNARY_MESSAGE } from '../infer.js';
import {
  createGrpcFrontend,
  DEFAULT_GRPC_MAX_CONNECTIONS,
  grpcTraceEdge,
  MODEL_INFER_PATH,
  type GrpcFrontend,
  type GrpcFrontendOptions,
} from '../server.js';
import { Status, toGrpcError } from '../transport/status.js';
import type { GrpcThreadData, ThreadPortOptions, GrpcToMain, GrpcToThread } from './wire.js';

/** Why --grpc-infer-thread-count cannot be honoured here, or undefined when it can. */
export function grpcThreadsRefusal(options: GrpcFrontendOptions, version?: string): string | undefined {
  return sharedRefusal('--grpc-infer-thread-count', 'gRPC', options.tls !== undefined, version);
}

interface Running {
  readonly answers: Coalescer<GrpcToThread | ThreadControl>;
  readonly cancels: Map<number, AbortController>;
}

/** How often a change of the log settings (the logging API) is passed on to the threads' loggers. */
const LOG_SETTINGS_CHECK_MS = 200;

const sameSettings = (a: LogSettings, b: LogSettings): boolean =>
  a.logInfo === b.logInfo &&
  a.logWarning === b.logWarning &&
  a.logError === b.logError &&
  a.logVerbose === b.logVerbose &&
  a.logFormat === b.logFormat;

/** One ModelInfer a thread decoded, run as infer.ts modelInfer runs it (runUnary's trace points included). */
async function serveDecoded(
  api: InferenceServerApi,
  options: GrpcFrontendOptions,
  r: Running,
  m: GrpcToMain & { t: 'infer' },
): Promise<void> {
  const { answers, cancels } = r;
  let handle: ResolvedModel | undefined;
  let trace: RequestTrace | undefined;
  let code: number = Status.OK;
  const controller = takeController();
  cancels.set(m.id, controller);
  try {
    const carrier = traceCarrier(m.traceparent, m.tracestate, () =>
      grpcTraceEdge('ModelInfer', { ':authority': m.authority }),
    );
    trace = api.startTrace?.(m.model, carrier);
    trace?.capture('GRPC_WAITREAD_START');
    trace?.capture('GRPC_WAITREAD_END');
    const resolved = resolveCall(api, m.model, m.version === '' ? undefined : m.version);
    handle = resolved instanceof Promise ? await resolved : resolved;
    refuseDecoupled(handle, DECOUPLED_UNARY_MESSAGE);
    const q = m.request;
    if (q === undefined) {
      const invalid = m.invalid ?? { code: 'INTERNAL' as const, message: 'no request' };
      throw new NereidError(invalid.code, invalid.message);
    }
    // One literal, every member written out (core/call.ts, performance rules).
    const request = {
      modelName: q.modelName,
      modelVersion: q.modelVersion,
      id: q.id,
      inputs: unpackTensors(q.inputs),
      outputs: q.outputs,
      parameters: q.parameters,
    };
    const call = { signal: controller.signal, trace, timings: undefined, forwarded: m.forwarded };
    const response = await runCall(handle, request, call);
    trace?.capture('INFER_RESPONSE_COMPLETE');
    trace?.capture('GRPC_SEND_START');
    const transfer: ArrayBuffer[] = [];
    const outputs = packTensors(response.outputs, transfer);
    answers.post({ t: 'answer', id: m.id, response: { ...response, outputs } }, transfer);
    trace?.capture('GRPC_SEND_END');
  } catch (err) {
    const e = toGrpcError(err, { log: options.log, method: MODEL_INFER_PATH, requestId: m.requestId });
    code = e.code;
    trace?.capture('GRPC_SEND_START');
    answers.post({ t: 'failed', id: m.id, code: e.code, details: e.details });
    trace?.capture('GRPC_SEND_END');
  } finally {
    trace?.end(code);
    handle?.release();
    cancels.delete(m.id);
    returnController(controller);
  }
}

/** What each thread's port is built from: the frontend's options with its share of the connection caps. */
function threadPortOptions(options: GrpcFrontendOptions, threads: number): ThreadPortOptions {
  const maxConnections = options.maxConnections ?? DEFAULT_GRPC_MAX_CONNECTIONS;
  const maxConnectionsPerAddress = options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  return {
    quotedCaps: { maxConnections, maxConnectionsPerAddress },
    maxMessageSize: options.maxMessageSize,
    streamWindowSize: options.streamWindowSize,
    connectionWindowSize: options.connectionWindowSize,
    maxDecompressedSize: options.maxDecompressedSize,
    maxConnections: capShare(maxConnections, threads),
    maxConnectionsPerAddress: capShare(maxConnectionsPerAddress, threads),
    requestReadTimeoutMs: options.requestReadTimeoutMs,
    maxConcurrentStreams: options.maxConcurrentStreams,
    maxBufferedBytes: options.maxBufferedBytes,
    connection: options.connection,
    responseCompression: options.responseCompression,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs,
    restrictedProtocols: options.restrictedProtocols,
    headerForwardPattern: options.headerForwardPattern,
  };
}

export function createThreadedGrpcFrontend(
  api: InferenceServerApi,
  options: GrpcFrontendOptions,
  threads: number,
): GrpcFrontend {
  const { log, requestCounts } = options;
  // Reached only by the threads (one connection per client connection): the caps are theirs.
  const main = createGrpcFrontend(api, {
    ...options,
    address: '127.0.0.1',
    port: 0,
    maxConnections: 0,
    maxConnectionsPerAddress: 0,
  });
  const cancels = new Map<ProtocolThread<GrpcToThread>, Map<number, AbortController>>();
  let pool: ProtocolThreads<GrpcToMain, GrpcToThread> | undefined;
  let sentSettings: LogSettings = { ...log.settings };
  const logSettingsCheck = setInterval(() => {
    if (pool === undefined || sameSettings(sentSettings, log.settings)) return;
    sentSettings = { ...log.settings };
    for (const t of pool.threads) t.post.post({ t: 'log-settings', settings: sentSettings });
  }, LOG_SETTINGS_CHECK_MS);
  logSettingsCheck.unref();

  const receive = (thread: ProtocolThread<GrpcToThread>, m: GrpcToMain): void => {
    switch (m.t) {
      case 'infer': {
        let mine = cancels.get(thread);
        if (mine === undefined) cancels.set(thread, (mine = new Map<number, AbortController>()));
        void serveDecoded(api, options, { answers: thread.post, cancels: mine }, m);
        break;
      }
      case 'cancel':
        cancels.get(thread)?.get(m.id)?.abort();
        break;
      case 'counts':
        for (const [key, n] of m.entries) {
          const space = key.indexOf(' ');
          const code = Number(key.slice(0, space));
          const rpc = key.slice(space + 1);
          for (let i = 0; i < n; i++) requestCounts?.grpc(rpc, code);
        }
        break;
      case 'log':
        log.relay(m.line);
        break;
    }
  };

  return {
    listen: async () => {
      const internal = await main.listen();
      const serverToken = productToken(api.serverMetadata().version);
      const portOptions = threadPortOptions(options, threads);
      pool = new ProtocolThreads<GrpcToMain, GrpcToThread>({
        url: new URL('./worker.js', import.meta.url),
        name: 'nereid-grpc',
        count: threads,
        service: 'GRPC',
        target: options,
        log,
        workerData: (port, index): GrpcThreadData => ({
          nereidGrpcThread: true,
          index,
          address: options.address,
          port,
          internalPort: internal.port,
          serverToken,
          options: portOptions,
          logSettings: { ...log.settings },
          fastPath: options.accessLog === undefined,
        }),
        receive,
      });
      return pool.start();
    },
    // The threads stop taking calls and finish theirs while the main thread's server, which their
    // forwarded streams reach, ends its own (its inference streams with the shutdown status).
    close: async () => {
      clearInterval(logSettingsCheck);
      await Promise.all([pool?.close(), main.close()]);
    },
  };
}
