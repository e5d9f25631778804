/**
 * --http-thread-count: the HTTP frontend with its protocol work on N threads (worker.ts). The threads hold
 * the HTTP port (each its own listener, SO_REUSEPORT); the main thread keeps the usual frontend
 * (server.ts, routes.ts) on 127.0.0.1 at a port of its own for the requests the threads forward, and runs
 * each request the threads decoded through the core's one inference call (core/call.ts) as the infer route
 * does: resolved (after an on-demand load), decoupled models refused, traced, cancelled when the client
 * goes, counted.
 * The threads themselves are started and closed by ../../threads/pool.ts, as the gRPC port's are.
 */
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
import {
  capShare,
  ProtocolThreads,
  threadsRefusal as sharedRefusal,
  type ProtocolThread,
} from '../../threads/pool.js';
import { returnController, takeController } from '../../signal-pool.js';
import { DEFAULT_JSON_LIMITS } from '../json-pool.js';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from '../../connection-share.js';
import {
  connectionRefusals,
  createHttpFrontend,
  DEFAULT_BACKLOG,
  DEFAULT_MAX_INPUT_SIZE,
} from '../server.js';
import { DEFAULT_MAX_CONNECTIONS } from '../transport/connection-limits.js';
import type { HttpFrontend, HttpFrontendOptions } from '../server.js';
import { HTTP_DECOUPLED } from '../routes.js';
import { toErrorReply } from '../transport/errors.js';
import {
  packTensors,
  unpackTensors,
  type Coalescer,
  type ThreadControl,
  type ThreadWorkerData,
  type ToMain,
  type ToThread,
} from './wire.js';

export { threadsSupported } from '../../threads/pool.js';

/** Why --http-thread-count cannot be honoured here, or undefined when it can. */
export function threadsRefusal(options: HttpFrontendOptions, version?: string): string | undefined {
  return sharedRefusal('--http-thread-count', 'HTTP', options.tls !== undefined, version);
}

interface Running {
  readonly answers: Coalescer<ToThread | ThreadControl>;
  readonly cancels: Map<number, AbortController>;
}

/** One decoded request from a thread, run through the core's inference call as routes.ts inferOn runs it. */
async function serveDecoded(
  api: InferenceServerApi,
  options: HttpFrontendOptions,
  r: Running,
  m: ToMain & { t: 'infer' },
): Promise<void> {
  const log = options.log;
  const { answers, cancels } = r;
  let handle: ResolvedModel | undefined;
  // Ended once: with 200 once the answer is posted, else with the error reply's status (one reply, one log).
  let trace: RequestTrace | undefined;
  const controller = takeController();
  cancels.set(m.id, controller);
  let status = 200;
  try {
    const resolved = resolveCall(api, m.model, m.version);
    handle = resolved instanceof Promise ? await resolved : resolved;
    refuseDecoupled(handle, HTTP_DECOUPLED);
    trace = api.startTrace?.(m.model, traceCarrier(m.traceparent, m.tracestate));
    trace?.capture('HTTP_RECV_START');
    trace?.capture('HTTP_RECV_END');
    const q = m.request;
    const request = {
      modelName: q.modelName,
      modelVersion: q.modelVersion,
      id: q.id,
      inputs: unpackTensors(q.inputs),
      outputs: q.outputs,
      parameters: q.parameters,
    };
    const call = { signal: controller.signal, trace, timings: undefined, forwarded: undefined };
    const response = await runCall(handle, request, call);
    trace?.capture('INFER_RESPONSE_COMPLETE');
    const transfer: ArrayBuffer[] = [];
    const outputs = packTensors(response.outputs, transfer);
    trace?.capture('HTTP_SEND_START');
    const answer: ToThread = { t: 'answer', id: m.id, response: { ...response, outputs } };
    answers.post(answer, transfer);
    trace?.capture('HTTP_SEND_END');
    trace?.end(200);
    trace = undefined;
  } catch (err) {
    const path = `/v2/models/${m.model}${m.version === undefined ? '' : `/versions/${m.version}`}/infer`;
    const reply = toErrorReply(err, { log, requestId: m.request.id, method: 'POST', path });
    status = reply.status;
    trace?.end(reply.status);
    const failed: ToThread = { t: 'failed', id: m.id, status: reply.status, body: reply.body };
    answers.post(failed);
  } finally {
    handle?.release();
    cancels.delete(m.id);
    returnController(controller);
    options.requestCounts?.http('model_infer', status);
  }
}

export function createThreadedHttpFrontend(
  api: InferenceServerApi,
  options: HttpFrontendOptions,
  threads: number,
): HttpFrontend {
  // Reached only by the threads: the connection caps are theirs, each a share (capShare).
  const main = createHttpFrontend(api, {
    ...options,
    address: '127.0.0.1',
    port: 0,
    maxConnections: 0,
    maxConnectionsPerAddress: 0,
  });
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const maxPerAddress = options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  const maxInputSize = options.maxInputSize ?? DEFAULT_MAX_INPUT_SIZE;
  const fastPath =
    (options.restrictedApis === undefined || Object.keys(options.restrictedApis).length === 0) &&
    options.headerForwardPattern === undefined &&
    options.accessLog === undefined;
  const cancels = new Map<ProtocolThread<ToThread>, Map<number, AbortController>>();
  let pool: ProtocolThreads<ToMain, ToThread> | undefined;

  return {
    listen: async () => {
      const internal = await main.listen();
      const serverHeader = productToken(api.serverMetadata().version);
      pool = new ProtocolThreads<ToMain, ToThread>({
        url: new URL('./worker.js', import.meta.url),
        name: 'nereid-http',
        count: threads,
        service: 'HTTP',
        target: options,
        log: options.log,
        workerData: (port): ThreadWorkerData => ({
          nereidHttpThread: true,
          address: options.address,
          port,
          backlog: options.backlog ?? DEFAULT_BACKLOG,
          internalPort: internal.port,
          maxInputSize,
          jsonThreshold: options.json?.workerThreshold ?? DEFAULT_JSON_LIMITS.workerThreshold,
          serverHeader,
          fastPath,
          maxConnections: capShare(maxConnections, threads),
          maxConnectionsPerAddress: capShare(maxPerAddress, threads),
          ...connectionRefusals(maxConnections, maxPerAddress),
        }),
        receive: (thread, m) => {
          let mine = cancels.get(thread);
          if (mine === undefined) cancels.set(thread, (mine = new Map<number, AbortController>()));
          if (m.t === 'infer') void serveDecoded(api, options, { answers: thread.post, cancels: mine }, m);
          else mine.get(m.id)?.abort();
        },
      });
      return pool.start();
    },
    drain: () => {
      main.drain();
      pool?.drain();
    },
    close: async () => {
      await pool?.close();
      await main.close();
    },
  };
}
