/**
 * A fixed set of slots (a context's sequences) handed out first come, first served. A request that finds
 * every slot busy waits in a queue bounded like Triton's `max_queue_size` (0: no bound); past the bound it
 * is refused at once with Triton's UNAVAILABLE "Exceeds maximum queue size". A waiter whose signal aborts
 * leaves the queue; close() fails every waiter. A released slot goes straight to the oldest waiter. When
 * several slots are free, `pick` chooses among them (the engine picks the sequence whose cached tokens
 * share the longest prefix with the prompt); without it, the last one freed.
 */
import { cancelled, NereidError, unavailable } from '../../common/errors.js';

interface Waiter<T> {
  resolve(slot: T): void;
  reject(err: NereidError): void;
}

export class SlotQueue<T> {
  private readonly free: T[];
  private readonly waiters: Waiter<T>[] = [];
  private closedWith: NereidError | undefined;

  constructor(
    slots: readonly T[],
    private readonly maxQueueSize: number,
  ) {
    this.free = [...slots];
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Slots free right now. */
  get available(): number {
    return this.free.length;
  }

  /** `pick` returns the index in `free` (never empty) of the slot to take. */
  acquire(signal: AbortSignal, pick?: (free: readonly T[]) => number): Promise<T> {
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith);
    if (signal.aborted) return Promise.reject(cancelled('request was cancelled'));
    if (this.free.length > 0) {
      const i = pick === undefined ? this.free.length - 1 : pick(this.free);
      const at = Number.isInteger(i) && i >= 0 && i < this.free.length ? i : this.free.length - 1;
      return Promise.resolve(this.free.splice(at, 1)[0]);
    }
    if (this.maxQueueSize > 0 && this.waiters.length >= this.maxQueueSize) {
      return Promise.reject(unavailable('Exceeds maximum queue size'));
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(cancelled('request was cancelled while it waited for a sequence'));
      };
      const waiter: Waiter<T> = {
        resolve: (s) => {
          signal.removeEventListener('abort', onAbort);
          resolve(s);
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(slot: T): void {
    const next = this.waiters.shift();
    if (next !== undefined) next.resolve(slot);
    else this.free.push(slot);
  }

  /** Fails every waiter and every later acquire() with `error`. */
  close(error: NereidError): void {
    this.closedWith = error;
    for (const w of this.waiters.splice(0)) w.reject(error);
  }
}
