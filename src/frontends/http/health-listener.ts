/**
 * --http-health-port: the health endpoints on a listener of their own, served by a thread of their own
 * (health-worker.ts), for liveness and readiness probes that must be answered whatever the main port is
 * going through.
 *
 * Why a second port: the main port's listen queue is first in, first out, and libuv accepts one connection
 * per event-loop iteration, so a probe on a new connection waits behind every connection queued before
 * it. turn-budget.ts keeps iterations short, but a storm of thousands of new connections still takes
 * seconds to accept; a kubelet's probe on its own port does not wait for them. The main port keeps
 * answering /v2/health/* as before (first, never refused).
 *
 * The main thread publishes isLive()/isReady() and a heartbeat every HEALTH_PUBLISH_MS into shared memory;
 * the worker answers from that (see health-worker.ts for what a stale heartbeat means).
 */
import { Worker } from 'node:worker_threads';
import { unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { InferenceServerApi } from '../../core/index.js';
import { listenError } from '../listen.js';
import {
  BEAT_BYTE_OFFSET,
  LIVE,
  READY,
  STATE_BYTES,
  type HealthWorkerData,
  type HealthWorkerMessage,
} from './health-worker.js';

export const HEALTH_PUBLISH_MS = 100;
/** A main event loop that has not turned for this long is not ready: probes shed traffic. */
export const READY_STALE_MS = 5_000;
/** ... and for this long, not live: a server stuck that long should be restarted. */
export const LIVE_STALE_MS = 30_000;

export interface HealthListenerOptions {
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly backlog: number;
  readonly log: Logger;
}

export interface HealthListener {
  listen(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}

export function createHealthListener(
  api: InferenceServerApi,
  options: HealthListenerOptions,
): HealthListener {
  const state = new SharedArrayBuffer(STATE_BYTES);
  const flags = new Int32Array(state, 0, 2);
  const beat = new BigInt64Array(state, BEAT_BYTE_OFFSET, 1);
  const publish = (): void => {
    Atomics.store(flags, LIVE, api.isLive() ? 1 : 0);
    Atomics.store(flags, READY, api.isReady() ? 1 : 0);
    Atomics.store(beat, 0, BigInt(Date.now()));
  };
  let timer: NodeJS.Timeout | undefined;
  let worker: Worker | undefined;

  return {
    listen: () =>
      new Promise((resolve, reject) => {
        publish();
        const data: HealthWorkerData = {
          nereidHealthWorker: true,
          state,
          address: options.address,
          port: options.port,
          backlog: options.backlog,
          readyStaleMs: READY_STALE_MS,
          liveStaleMs: LIVE_STALE_MS,
        };
        const w = new Worker(new URL('./health-worker.js', import.meta.url), { workerData: data });
        worker = w;
        w.on('message', (m: HealthWorkerMessage) => {
          if ('listening' in m) {
            timer = setInterval(publish, HEALTH_PUBLISH_MS);
            timer.unref();
            resolve(m.listening);
          } else {
            void w.terminate();
            reject(listenError('HTTP health', options, m.error));
          }
        });
        w.on('error', (err) => {
          options.log.error(`HTTP health service thread failed: ${err.message}`);
          reject(unavailable(`HTTP health service thread failed: ${err.message}`));
        });
        w.unref();
      }),

    close: async () => {
      if (timer !== undefined) clearInterval(timer);
      const w = worker;
      worker = undefined;
      if (w === undefined) return;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage('close');
      const stop = setTimeout(() => void w.terminate(), 2_000);
      await exited;
      clearTimeout(stop);
    },
  };
}
