/**
 * Polls a loaded model's own readiness (ModelHandle.isReady(), e.g. a JavaScript model's isReady()) while
 * its version is READY, so that model readiness, the repository index and strict server readiness can say
 * "not ready" without unloading anything. One poll at a time: the next starts `intervalMs` after the
 * previous one settled. A poll that rejects, or has not answered within `timeoutMs`, counts as not ready
 * (a late answer still updates the state when it comes). Timers are unref'd: polling never keeps the
 * process alive.
 */
import { NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';

export interface ReadinessPollOptions {
  /** Pause between polls; 0 = never poll (the version is ready while loaded). */
  readonly intervalMs: number;
  /** A poll that has not answered by then counts as not ready. */
  readonly timeoutMs: number;
}

export const DEFAULT_READINESS_POLL: ReadinessPollOptions = Object.freeze({
  intervalMs: 5000,
  timeoutMs: 5000,
});

export const REASON_MODEL_NOT_READY = 'model reported not ready';

export class ModelHealthMonitor {
  #reason: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #stopped = false;
  #polls = 0;

  constructor(
    private readonly probe: () => Promise<boolean>,
    private readonly options: ReadinessPollOptions,
    private readonly log: Logger,
    /** Names the version in log lines, e.g. `'simple' version 1`. */
    private readonly label: string,
  ) {}

  /** True unless the last poll said otherwise. */
  get ready(): boolean {
    return this.#reason === undefined;
  }

  /** Why the model is not ready (undefined while it is). */
  get reason(): string | undefined {
    return this.#reason;
  }

  /** Polls started so far (tests). */
  get polls(): number {
    return this.#polls;
  }

  /** First poll right away, then every interval until stop(). */
  start(): void {
    if (this.options.intervalMs <= 0 || this.#stopped) return;
    void this.pollNow();
  }

  /** Stops polling; the state no longer changes (a poll in flight is ignored). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Runs one poll now unless one is in flight (then waits for that one). */
  pollNow(): Promise<void> {
    this.#polling ??= this.poll()
      .catch((err: unknown) => this.log.error(`readiness poll of ${this.label} failed: ${String(err)}`))
      .finally(() => {
        this.#polling = undefined;
        this.schedule();
      });
    return this.#polling;
  }

  private schedule(): void {
    if (this.#stopped || this.options.intervalMs <= 0) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.pollNow(), this.options.intervalMs);
    this.#timer.unref();
  }

  private async poll(): Promise<void> {
    this.#polls++;
    let timer: NodeJS.Timeout | undefined;
    let probing: Promise<boolean>;
    try {
      probing = this.probe();
    } catch (err) {
      probing = Promise.reject(NereidError.from(err));
    }
    const answer = probing.then(
      (ready) => (ready === true ? undefined : REASON_MODEL_NOT_READY),
      (err: unknown) => `${REASON_MODEL_NOT_READY}: isReady() failed: ${NereidError.from(err).message}`,
    );
    const ms = this.options.timeoutMs;
    const expired = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`${REASON_MODEL_NOT_READY}: isReady() did not answer within ${ms} ms`),
        ms,
      );
      timer.unref();
    });
    try {
      this.update(await Promise.race([answer, expired]));
      // One poll at a time: a timed-out probe is still awaited, and its late answer counts.
      this.update(await answer);
    } finally {
      clearTimeout(timer);
    }
  }

  private update(reason: string | undefined): void {
    if (this.#stopped || reason === this.#reason) return;
    const was = this.#reason;
    this.#reason = reason;
    if (reason !== undefined) this.log.warn(`${this.label} is not ready: ${reason}`);
    else if (was !== undefined) this.log.info(`${this.label} is ready again`);
  }
}
