/**
 * `ensemble_scheduling.max_inflight_requests`: a per-step cap on internal requests in flight across all
 * requests of one ensemble version, so a fast (often decoupled) upstream step cannot pile up work in front
 * of a slow downstream one. A step holds its slot until its final response. 0 = no limit (no limiter).
 */
import { cancelled } from '../../common/errors.js';

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class StepLimiter {
  private active = 0;
  private readonly waiters: Waiter[] = [];

  constructor(readonly max: number) {}

  get inFlight(): number {
    return this.active;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Takes a slot if one is free right now. */
  tryAcquire(): boolean {
    if (this.active >= this.max) return false;
    this.active++;
    return true;
  }

  /** Waits for a slot in arrival order; rejects with CANCELLED if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    if (signal.aborted) return Promise.reject(cancelled('request cancelled'));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(cancelled('request cancelled'));
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Gives a slot back; the longest waiter takes it over. */
  release(): void {
    const next = this.waiters.shift();
    if (next) {
      next.signal.removeEventListener('abort', next.onAbort);
      next.resolve();
      return;
    }
    if (this.active > 0) this.active--;
  }
}
