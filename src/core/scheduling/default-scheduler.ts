/**
 * Triton's default scheduler: no batching across requests; each accepted request runs alone on the next
 * free instance (free and allowed by the rate limiter), in arrival order. A request cancelled while queued
 * leaves the queue at once.
 */
import { cancelled, unavailable } from '../../common/errors.js';
import type { InstanceHandle } from '../../backend-api/backend.js';
import type { InstancePool } from './instance-pool.js';
import type { Job, Scheduler } from './scheduler.js';

export class DefaultScheduler implements Scheduler {
  private readonly queue: Job[] = [];
  private readonly listeners = new Map<Job, () => void>();
  private running = 0;
  private closing = false;
  private drained: (() => void) | undefined;

  constructor(private readonly pool: InstancePool) {
    pool.onAvailable(this.pump);
  }

  get queued(): number {
    return this.queue.length;
  }

  enqueue(job: Job): void {
    if (this.closing) throw unavailable('model is unloading');
    if (job.signal.aborted) {
      job.sender.fail(cancelled('request cancelled'));
      return;
    }
    if (this.queue.length === 0) {
      // Nothing waiting: a free instance takes the request now, and it never needs an abort listener.
      const instance = this.pool.take();
      if (instance) {
        this.dispatch(instance, job);
        return;
      }
    }
    this.queue.push(job);
    const onAbort = (): void => {
      this.listeners.delete(job);
      const i = this.queue.indexOf(job);
      if (i >= 0) {
        this.queue.splice(i, 1);
        job.sender.fail(cancelled('request cancelled'));
        if (this.queue.length === 0) this.pool.idle();
        this.checkDrained();
      }
    };
    // Removed again at dispatch: callers may share one long-lived signal across many requests.
    this.listeners.set(job, onAbort);
    job.signal.addEventListener('abort', onAbort, { once: true });
    this.pump();
  }

  /** Dispatches queued jobs to free instances; called on enqueue and whenever an instance frees. */
  private readonly pump = (): void => {
    const pool = this.pool;
    while (this.queue.length > 0) {
      const instance = pool.take();
      if (!instance) break;
      const job = this.queue.shift()!;
      const onAbort = this.listeners.get(job);
      if (onAbort) {
        job.signal.removeEventListener('abort', onAbort);
        this.listeners.delete(job);
      }
      this.dispatch(instance, job);
    }
    // Nothing left to run: an instance waiting for the rate limiter stops waiting.
    if (this.queue.length === 0) pool.idle();
  };

  private dispatch(instance: InstanceHandle, job: Job): void {
    this.running++;
    void this.pool.run(instance, [job]).then(this.onDone);
  }

  private readonly onDone = (): void => {
    this.running--;
    this.checkDrained();
    this.pump();
  };

  drain(): Promise<void> {
    this.closing = true;
    return new Promise((resolve) => {
      this.drained = resolve;
      this.checkDrained();
    });
  }

  private checkDrained(): void {
    if (this.drained && this.queue.length === 0 && this.running === 0) {
      const d = this.drained;
      this.drained = undefined;
      d();
    }
  }
}
