/**
 * --http-thread-count: the HTTP frontend with its protocol work on N threads (worker.ts). The threads hold
 * the HTTP port (each its own listener, SO_REUSEPORT); the main thread keeps the usual frontend
 * (server.ts, routes.ts) on 127.0.0.1 at a port of its own for the requests the threads forward, and runs
 * each request the threads decoded through the core's one inference call (core/call.ts) as the infer route
 * does: resolved (after an on-demand load), decoupled models refused, traced, cancelled when the client
 * goes, counted.
 *
 * SO_REUSEPORT needs net.Server.listen's `reusePort` (Node 22.12+ and 23.1+, on Linux): on an older Node
 * the flag is ignored with a warning (threadsSupported).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../../common/logger.js';
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
import { listenError } from '../../listen.js';
import { returnController, takeController } from '../../signal-pool.js';
import { DEFAULT_JSON_LIMITS } from '../json-pool.js';
import { createHttpFrontend, DEFAULT_BACKLOG, DEFAULT_MAX_INPUT_SIZE } from '../server.js';
import type { HttpFrontend, HttpFrontendOptions } from '../server.js';
import { HTTP_DECOUPLED } from '../routes.js';
import { toErrorReply } from '../transport/errors.js';
import {
  Coalescer,
  packTensors,
  unpackTensors,
  type ThreadWorkerData,
  type ToMain,
  type ToThread,
} from './wire.js';

/** Whether this Node can bind several listeners to one port (net.Server.listen `reusePort`). */
export function threadsSupported(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return (
    process.platform === 'linux' &&
    (major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12))
  );
}

/** Why --http-thread-count cannot be honoured here, or undefined when it can. */
export function threadsRefusal(options: HttpFrontendOptions, version?: string): string | undefined {
  if (!threadsSupported(version)) {
    return `--http-thread-count needs Node 22.12+ (or 23.1+) on Linux for SO_REUSEPORT; this is Node ${version ?? process.versions.node} on ${process.platform}: HTTP is served on the main thread`;
  }
  if (options.tls !== undefined)
    return '--http-thread-count is not supported with HTTPS: HTTP is served on the main thread';
  return undefined;
}

interface Running {
  readonly worker: Worker;
  readonly answers: Coalescer<ToThread>;
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
  const log: Logger = options.log;
  const main = createHttpFrontend(api, { ...options, address: '127.0.0.1', port: 0 });
  const running: Running[] = [];
  const maxInputSize = options.maxInputSize ?? DEFAULT_MAX_INPUT_SIZE;
  const fastPath =
    (options.restrictedApis === undefined || Object.keys(options.restrictedApis).length === 0) &&
    options.headerForwardPattern === undefined &&
    options.accessLog === undefined;

  const start = (internalPort: number): Promise<{ address: string; port: number }>[] => {
    const serverHeader = productToken(api.serverMetadata().version);
    const data = (port: number): ThreadWorkerData => ({
      nereidHttpThread: true,
      address: options.address,
      port,
      backlog: options.backlog ?? DEFAULT_BACKLOG,
      internalPort,
      maxInputSize,
      jsonThreshold: options.json?.workerThreshold ?? DEFAULT_JSON_LIMITS.workerThreshold,
      serverHeader,
      fastPath,
    });
    const one = (port: number): Promise<{ address: string; port: number }> =>
      new Promise((resolve, reject) => {
        const worker = new Worker(new URL('./worker.js', import.meta.url), {
          workerData: data(port),
          name: 'nereid-http',
        });
        const answers = new Coalescer<ToThread>((m, transfer) => worker.postMessage(m, transfer));
        const r: Running = { worker, answers, cancels: new Map() };
        running.push(r);
        const receive = (m: ToMain): void => {
          switch (m.t) {
            case 'batch':
              for (const item of m.items) receive(item);
              break;
            case 'infer':
              void serveDecoded(api, options, r, m);
              break;
            case 'cancel':
              r.cancels.get(m.id)?.abort();
              break;
            case 'listening':
              resolve({ address: m.address, port: m.port });
              break;
            case 'error':
              reject(listenError('HTTP', { address: options.address, port }, m));
              break;
            case 'closed':
              break;
          }
        };
        worker.on('message', receive);
        worker.on('error', (err) => {
          log.error(`HTTP thread failed: ${err.message}`);
          reject(err);
        });
      });
    // The first thread binds (port 0 picks one), the others join it on the port it got.
    const first = one(options.port);
    const rest = first.then((bound) =>
      Promise.all(Array.from({ length: threads - 1 }, () => one(bound.port))),
    );
    return [first, rest.then(() => first)];
  };

  return {
    listen: async () => {
      const internal = await main.listen();
      const [first, all] = start(internal.port);
      await first;
      return all;
    },
    drain: () => {
      main.drain();
      for (const r of running) r.worker.postMessage({ t: 'drain' } satisfies ToThread);
    },
    close: async () => {
      await Promise.all(
        running.map(
          (r) =>
            new Promise<void>((resolve) => {
              const done = (): void => resolve();
              r.worker.once('exit', done);
              r.worker.on('message', (m: ToMain) => {
                if (m.t === 'closed') void r.worker.terminate().then(done, done);
              });
              r.worker.postMessage({ t: 'close' } satisfies ToThread);
            }),
        ),
      );
      await main.close();
    },
  };
}
