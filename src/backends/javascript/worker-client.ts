/**
 * Main-thread handle of one JavaScript model worker thread: starts it and waits for the model's
 * initialize() (or its autoCompleteConfig()), forwards the model's log lines, answers queries, and
 * reports how the thread ended. It never restarts itself; the instance decides that.
 */
import { Worker } from 'node:worker_threads';
import { NereidError, internal } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { capModelText, type ModelPhase } from '../model-errors.js';
import type { JsFromWorker, QueryAnswer, JsToWorker, WireError, JsWorkerInit } from './protocol.js';

// Compiled beside this file in dist/; the URL keeps working wherever the package is installed.
const WORKER_URL = new URL('./worker/main.js', import.meta.url);

export interface WorkerStartOptions {
  /** Names the worker in messages and log lines (the instance name, or '<model> (auto-complete)'). */
  readonly label: string;
  readonly log: Logger;
  /** Bound on initialize() / autoCompleteConfig(); 0 = none. */
  readonly timeoutMs: number;
  /** V8 heap limit of the worker (MB); undefined = Node's default. */
  readonly maxOldGenerationSizeMb?: number;
  /**
   * Turns what the model threw (in initialize(), its import or build, finalize()) into the error to report
   * (failures.ts); without it: `<hook> of '<label>' failed: <message>`.
   */
  readonly describe?: (e: WireError, phase: ModelPhase) => NereidError;
}

export interface WorkerStarted {
  readonly worker: JsWorker;
  /** autocomplete mode: the completed config JSON (undefined = the model left it as it was). */
  readonly configJson?: string;
  /** instance mode: the model defines isReady(). */
  readonly definesIsReady?: boolean;
}

/** A worker's error as the client's: its message capped (model-errors.ts MAX_MODEL_MESSAGE). */
export const errorOf = (e: WireError): NereidError =>
  new NereidError(e.code, capModelText(String(e.message)));

export class JsWorker {
  private exited = false;
  private stopping = false;
  private lastError: string | undefined;
  private exitCode: number | undefined;
  private readonly exitListeners: ((unexpected: boolean) => void)[] = [];
  private readonly queries = new Map<
    number,
    { resolve(a: QueryAnswer): void; reject(e: NereidError): void }
  >();
  private nextQuery = 1;
  private readonly exitedPromise: Promise<void>;
  /** Messages the instance handles (responses, BLS); set right after start. */
  onMessage: (msg: JsFromWorker) => void = () => undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly options: WorkerStartOptions,
  ) {
    this.exitedPromise = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (msg: JsFromWorker) => this.dispatch(msg));
    worker.on('error', (err) => {
      this.lastError = err instanceof Error ? (err.stack ?? err.message) : String(err);
    });
    worker.on('messageerror', (err) => {
      this.lastError = err.message;
    });
    worker.on('exit', (code) => this.onExit(code));
  }

  /**
   * Starts a worker and resolves once it reported `ready` (instance mode: module imported, model built,
   * initialize() returned) or `autocompleted` (then with the config JSON, and the worker is ended).
   */
  static async start(init: JsWorkerInit, options: WorkerStartOptions): Promise<WorkerStarted> {
    let raw: Worker;
    try {
      raw = new Worker(WORKER_URL, {
        workerData: init,
        name: `javascript:${options.label}`,
        ...(options.maxOldGenerationSizeMb
          ? { resourceLimits: { maxOldGenerationSizeMb: options.maxOldGenerationSizeMb } }
          : {}),
      });
    } catch (err) {
      throw internal(`unable to start a worker thread for '${options.label}': ${String(err)}`, err);
    }
    const w = new JsWorker(raw, options);
    const what = init.mode === 'autocomplete' ? 'autoCompleteConfig()' : 'initialize()';
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<WorkerStarted>((resolve, reject) => {
        if (options.timeoutMs > 0) {
          timer = setTimeout(
            () =>
              reject(internal(`${what} of '${options.label}' did not finish within ${options.timeoutMs} ms`)),
            options.timeoutMs,
          );
        }
        w.onMessage = (msg) => {
          if (msg.kind === 'ready') resolve({ worker: w, definesIsReady: msg.definesIsReady });
          else if (msg.kind === 'autocompleted') resolve({ worker: w, configJson: msg.configJson });
          else if (msg.kind === 'init-error') {
            const phase = init.mode === 'autocomplete' ? 'autocomplete' : 'initialize';
            if (options.describe) {
              reject(options.describe(msg.error, phase));
              return;
            }
            if (msg.error.stack)
              options.log.verbose(`'${options.label}' failed in ${what}: ${msg.error.stack}`);
            reject(
              new NereidError(msg.error.code, `${what} of '${options.label}' failed: ${msg.error.message}`),
            );
          }
        };
        w.onExitOnce(() =>
          reject(internal(`the worker of '${options.label}' exited during ${what}: ${w.describeExit()}`)),
        );
      });
    } catch (err) {
      await w.terminate();
      throw err;
    } finally {
      clearTimeout(timer);
      w.onMessage = () => undefined;
    }
  }

  get alive(): boolean {
    return !this.exited;
  }

  get threadId(): number {
    return this.worker.threadId;
  }

  describeExit(): string {
    const code = this.exitCode === undefined ? 'still running' : `exit code ${this.exitCode}`;
    return this.lastError ? `${code}: ${this.lastError.split('\n')[0]}` : code;
  }

  /** Called once when the thread ends; `unexpected` is false after terminate(). */
  onExitOnce(listener: (unexpected: boolean) => void): void {
    if (this.exited) listener(!this.stopping);
    else this.exitListeners.push(listener);
  }

  /** Posts unless the thread is gone (then the message has nobody to reach). */
  post(message: JsToWorker, transfer: readonly ArrayBuffer[] = []): void {
    if (this.exited) return;
    try {
      this.worker.postMessage(message, transfer as ArrayBuffer[]);
    } catch (err) {
      // Some runtimes refuse to move certain buffers (Node's untransferable pool); send copies instead.
      if (transfer.length === 0) throw err;
      this.worker.postMessage(message);
    }
  }

  query(what: 'ready' | 'metrics' | 'counters', timeoutMs: number): Promise<QueryAnswer> {
    if (this.exited) return Promise.reject(internal(`the worker of '${this.options.label}' is not running`));
    const q = this.nextQuery++;
    return new Promise<QueryAnswer>((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.queries.delete(q);
              reject(internal(`'${this.options.label}' did not answer within ${timeoutMs} ms`));
            }, timeoutMs)
          : undefined;
      this.queries.set(q, {
        resolve: (a) => {
          clearTimeout(timer);
          resolve(a);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.post({ kind: 'query', q, what });
    });
  }

  /** Runs the model's finalize() (bounded by `timeoutMs`), then ends the thread. Errors are logged. */
  async finalizeAndStop(timeoutMs: number): Promise<void> {
    if (this.exited) return;
    const done = new Promise<void>((resolve) => {
      const previous = this.onMessage;
      this.onMessage = (msg) => {
        if (msg.kind !== 'finalized') return previous(msg);
        if (msg.error) {
          // The instance is going away: the described error is logged, nobody else reads it.
          if (this.options.describe) this.options.describe(msg.error, 'finalize');
          else this.options.log.error(`finalize() of '${this.options.label}' failed: ${msg.error.message}`);
        }
        resolve();
      };
      this.onExitOnce(() => resolve());
    });
    this.post({ kind: 'finalize' });
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      if (timeoutMs > 0) timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([done, expired]);
    clearTimeout(timer);
    await this.terminate();
  }

  /** Ends the thread now (a busy loop included); resolves once it is gone. Safe to call again. */
  async terminate(): Promise<void> {
    if (!this.exited) {
      this.stopping = true;
      await this.worker.terminate();
    }
    await this.exitedPromise;
  }

  private dispatch(msg: JsFromWorker): void {
    switch (msg.kind) {
      case 'log':
        this.logLine(msg.level, msg.message);
        return;
      case 'answer': {
        const p = this.queries.get(msg.q);
        if (!p) return;
        this.queries.delete(msg.q);
        if (msg.answer) p.resolve(msg.answer);
        else p.reject(errorOf(msg.error ?? { code: 'INTERNAL', message: 'no answer' }));
        return;
      }
      default:
        this.onMessage(msg);
    }
  }

  private logLine(level: 'info' | 'warn' | 'error' | 'verbose', message: string): void {
    const line = `[${this.options.label}] ${message}`;
    const log = this.options.log;
    if (level === 'warn') log.warn(line);
    else if (level === 'error') log.error(line);
    else if (level === 'verbose') log.verbose(line);
    else log.info(line);
  }

  private onExit(code: number): void {
    this.exited = true;
    this.exitCode = code;
    const unexpected = !this.stopping;
    for (const p of this.queries.values()) p.reject(internal(`the worker of '${this.options.label}' exited`));
    this.queries.clear();
    for (const l of this.exitListeners) l(unexpected);
    this.exitListeners.length = 0;
  }
}
