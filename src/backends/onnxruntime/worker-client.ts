/**
 * Main-thread handle of one ONNX Runtime worker thread: starts it (the worker creates its session and
 * reports the model's inputs and outputs), sends runs, and turns a dying worker into errors for whatever
 * was in flight. It never restarts itself; the instance decides that.
 */
import { Worker } from 'node:worker_threads';
import { NereidError, internal } from '../../common/errors.js';
import {
  packRun,
  unpackResult,
  type OrtFromWorker,
  type ModelIo,
  type RunResult,
  type OrtToWorker,
  type OrtWireTensor,
  type OrtWorkerInit,
} from './protocol.js';

interface Pending {
  resolve(result: RunResult): void;
  reject(err: NereidError): void;
}

// Compiled beside this file in dist/; the URL keeps working wherever the package is installed.
const WORKER_URL = new URL('./worker.js', import.meta.url);

export class OrtWorker {
  private readonly pending = new Map<number, Pending>();
  private readonly inFlight = new Set<Promise<RunResult>>();
  private nextId = 1;
  private exited = false;
  private stopping = false;
  private lastError: string | undefined;
  private readonly exitListeners: ((unexpected: boolean) => void)[] = [];

  private constructor(
    private readonly worker: Worker,
    /** For messages: the instance (or probe) this worker serves; renamed when an instance adopts it. */
    public label: string,
    readonly io: ModelIo,
  ) {
    worker.on('message', (msg: OrtFromWorker) => this.onMessage(msg));
    worker.on('error', (err) => {
      this.lastError = err.message;
    });
    worker.on('messageerror', (err) => {
      this.lastError = err.message;
    });
    worker.on('exit', (code) => this.onExit(code));
  }

  /** Spawns a worker and waits until its session is ready. Rejects with the load error. */
  static start(init: OrtWorkerInit, label: string): Promise<OrtWorker> {
    return new Promise((resolve, reject) => {
      let worker: Worker;
      try {
        worker = new Worker(WORKER_URL, { workerData: init, name: `onnxruntime:${label}` });
      } catch (err) {
        reject(internal(`unable to start onnxruntime worker for '${label}': ${String(err)}`, err));
        return;
      }
      let settled = false;
      let error: string | undefined;
      const onMessage = (msg: OrtFromWorker): void => {
        // Only 'ready' or 'load-error' come before the session is ready (results are arrays).
        if (settled || Array.isArray(msg)) return;
        if (msg.kind === 'ready') {
          settled = true;
          cleanup();
          resolve(new OrtWorker(worker, label, { inputs: msg.inputs, outputs: msg.outputs }));
        } else if (msg.kind === 'load-error') {
          settled = true;
          cleanup();
          // An 'error' without a listener would be thrown on the main thread.
          worker.on('error', () => undefined);
          void worker.terminate();
          reject(new NereidError(msg.code, msg.message));
        }
      };
      const onError = (err: Error): void => {
        error = err.message;
      };
      const onExit = (code: number): void => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(
          internal(
            `onnxruntime worker for '${label}' exited (code ${code}) before its session for '${init.modelPath}' was ready` +
              (error ? `: ${error}` : ''),
          ),
        );
      };
      const cleanup = (): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** Called once when the worker thread ends; `unexpected` is false after terminate(). */
  onExitOnce(listener: (unexpected: boolean) => void): void {
    this.exitListeners.push(listener);
  }

  /**
   * Runs the session. The feeds' ArrayBuffers are transferred: they are detached here once this returns,
   * so callers pass only buffers they own.
   */
  run(feeds: OrtWireTensor[], fetches: string[]): Promise<RunResult> {
    if (this.exited) {
      return Promise.reject(internal(`onnxruntime worker for '${this.label}' is not running`));
    }
    const id = this.nextId++;
    const msg = packRun({ id, feeds, fetches });
    const result = new Promise<RunResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.worker.postMessage(
          msg,
          feeds.map((f) => f.data),
        );
      } catch (err) {
        this.pending.delete(id);
        reject(
          internal(
            `unable to send a batch to the onnxruntime worker for '${this.label}': ${String(err)}`,
            err,
          ),
        );
      }
    });
    this.inFlight.add(result);
    const forget = (): void => {
      this.inFlight.delete(result);
    };
    result.then(forget, forget);
    return result;
  }

  /**
   * Ends the worker once nothing is in flight. Safe to call more than once.
   *
   * Never while a run is in flight: onnxruntime-node 1.30 aborts the whole process (std::terminate on a
   * Napi::Error) when a worker is terminated inside session.run(). The contract already promises close()
   * only after the last execute() settled; this is the safety net.
   */
  async terminate(): Promise<void> {
    if (this.exited) return;
    this.stopping = true;
    await Promise.allSettled(this.inFlight);
    if (!this.exited) await this.worker.terminate();
  }

  /** Test hook: the worker thread dies (uncaught exception) after its next run, before answering. */
  crashNextRunForTesting(): void {
    this.worker.postMessage({ kind: 'crash-next-run' } satisfies OrtToWorker);
  }

  private onMessage(msg: OrtFromWorker): void {
    if (Array.isArray(msg)) {
      const { id, result } = unpackResult(msg);
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      p.resolve(result);
      return;
    }
    if (msg.kind !== 'run-error') return;
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    p.reject(new NereidError(msg.code, msg.message));
  }

  private onExit(code: number): void {
    this.exited = true;
    const unexpected = !this.stopping;
    const reason = unexpected
      ? `onnxruntime worker for '${this.label}' exited unexpectedly (code ${code})` +
        (this.lastError ? `: ${this.lastError}` : '')
      : `onnxruntime worker for '${this.label}' was stopped`;
    for (const p of this.pending.values()) p.reject(internal(reason));
    this.pending.clear();
    for (const l of this.exitListeners) l(unexpected);
    this.exitListeners.length = 0;
  }
}
