/**
 * Timers that fire within about a tenth of a millisecond after their due time, never before it, for the
 * dynamic batcher's queue delay. Node's setTimeout counts whole milliseconds from the loop's cached
 * clock: in the server it ended a 2 ms queue delay up to 0.95 ms early (set while that clock was stale)
 * or 0.4 ms late at p99 (0.3 ms here, and never early). Triton waits on a condition variable instead.
 *
 * How: one worker thread per PreciseTimers (started on first use) sleeps in Atomics.wait until the
 * earliest due time, which the main thread publishes in a SharedArrayBuffer, then posts a message; the
 * main thread fires every timer whose due time has passed and publishes the next one. The worker never
 * holds the process open. Every timer in that precise phase also has a backstop setTimeout for its
 * rounded-up delay, which (a) keeps the process alive exactly while a timer is pending, (b) covers the
 * worker's start-up (tens of ms) and (c) is the whole mechanism if the worker cannot start or dies; so
 * losing the worker costs precision, never a timer.
 *
 * Timers further out than COARSE_ABOVE_NS sleep on a plain setTimeout until about HANDOVER_NS before
 * they are due: every sooner due time published wakes the worker thread, and long timers (queue
 * timeouts) are re-armed often and rarely fire, so they would wake it for nothing.
 */
import { Worker } from 'node:worker_threads';

/** What the worker reads: the earliest due time (process.hrtime ns, or NO_DUE), and a publish counter. */
export interface TimerSlots {
  readonly due: BigInt64Array;
  readonly seq: Int32Array;
}

export const NO_DUE = -1n;

const MS = 1_000_000n;
const HANDOVER_NS = 2n * MS;
const COARSE_ABOVE_NS = 2n * HANDOVER_NS;

// Compiled beside this file in dist/; the URL keeps working wherever the package is installed.
const WORKER_URL = new URL('./precise-timer-worker.js', import.meta.url);

interface Timer {
  readonly due: bigint;
  readonly callback: () => void;
  /** The coarse setTimeout, then the backstop. */
  timeout: NodeJS.Timeout | undefined;
  immediate: NodeJS.Immediate | undefined;
  /** In the due-ordered list the worker watches. */
  precise: boolean;
  done: boolean;
}

/** Milliseconds for setTimeout, rounded up (the backstop must not be early by its own rounding). */
function ceilMs(ns: bigint): number {
  return ns <= 0n ? 1 : Number((ns + MS - 1n) / MS);
}

export class PreciseTimers {
  /** Precise-phase timers ordered by due time; equal ones in the order they were set. */
  private readonly queue: Timer[] = [];
  private slots: TimerSlots | undefined;
  private worker: Worker | undefined;
  /** Cleared for good when the worker could not start or went away: backstops keep time alone. */
  private usable = true;
  private published = NO_DUE;

  constructor(private readonly workerUrl: URL = WORKER_URL) {}

  /** Calls `callback` once, no sooner than `delayNs` from now; returns a cancel function (idempotent). */
  set(callback: () => void, delayNs: bigint): () => void {
    const now = process.hrtime.bigint();
    const t: Timer = {
      due: now + (delayNs > 0n ? delayNs : 0n),
      callback,
      timeout: undefined,
      immediate: undefined,
      precise: false,
      done: false,
    };
    if (delayNs <= 0n) {
      t.immediate = setImmediate(() => this.fire(t));
    } else if (delayNs > COARSE_ABOVE_NS) {
      t.timeout = setTimeout(() => this.makePrecise(t), Number((delayNs - HANDOVER_NS) / MS));
    } else {
      this.makePrecise(t);
    }
    return () => this.cancel(t);
  }

  /** The due time the worker is told about (undefined: none); for tests. */
  get publishedDue(): bigint | undefined {
    return this.slots && this.published !== NO_DUE ? this.published : undefined;
  }

  /** Ends the worker; pending and later timers go on with setTimeout's precision. */
  async close(): Promise<void> {
    const w = this.worker;
    this.lose();
    if (w) await w.terminate();
  }

  private makePrecise(t: Timer): void {
    this.start();
    this.insert(t);
    this.armBackstop(t);
    // Never fire here, even if already due: set() must not call back synchronously.
    if (this.queue[0] === t) this.publish(false);
  }

  private armBackstop(t: Timer): void {
    t.timeout = setTimeout(
      () => {
        t.timeout = undefined;
        this.fireDue(false);
        // Node's timer runs on the loop's cached clock and may come early: wait for the rest.
        if (!t.done) this.armBackstop(t);
      },
      ceilMs(t.due - process.hrtime.bigint()),
    );
  }

  private insert(t: Timer): void {
    const q = this.queue;
    let lo = 0;
    let hi = q.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (q[mid].due <= t.due) lo = mid + 1;
      else hi = mid;
    }
    q.splice(lo, 0, t);
    t.precise = true;
  }

  private readonly onMessage = (): void => {
    // The worker waits for a new publish after each message, so always publish (and wake it).
    this.fireDue(true);
  };

  /** Fires every precise timer that is due, in due order, after publishing the next due time. */
  private fireDue(wake: boolean): void {
    const now = process.hrtime.bigint();
    let n = 0;
    while (n < this.queue.length && this.queue[n].due <= now) n++;
    const due = this.queue.splice(0, n);
    for (const t of due) t.precise = false;
    this.publish(wake);
    // A callback may cancel a later one of these; fire() skips it then.
    for (const t of due) this.fire(t);
  }

  private fire(t: Timer): void {
    if (t.done) return;
    t.done = true;
    clearTimeout(t.timeout);
    t.callback();
  }

  private cancel(t: Timer): void {
    if (t.done) return;
    t.done = true;
    clearTimeout(t.timeout);
    clearImmediate(t.immediate);
    if (!t.precise) return;
    t.precise = false;
    // The list holds the pending timers of a few batchers; a linear search is cheapest at that size.
    const i = this.queue.indexOf(t);
    this.queue.splice(i, 1);
    if (i === 0) this.publish(false);
  }

  /**
   * Tells the worker the earliest due time. A later one than it knows needs no wake-up (it wakes at the
   * earlier one, rereads and sleeps on); a sooner one does, and so does every reply to its message.
   */
  private publish(wake: boolean): void {
    const slots = this.slots;
    if (!slots) return;
    const next = this.queue.length > 0 ? this.queue[0].due : NO_DUE;
    if (next === this.published && !wake) return;
    const sooner = next !== NO_DUE && (this.published === NO_DUE || next < this.published);
    this.published = next;
    Atomics.store(slots.due, 0, next);
    Atomics.add(slots.seq, 0, 1);
    if (wake || sooner) Atomics.notify(slots.seq, 0);
  }

  private start(): void {
    if (this.slots || !this.usable) return;
    const buffer = new SharedArrayBuffer(16);
    const slots: TimerSlots = { due: new BigInt64Array(buffer, 0, 1), seq: new Int32Array(buffer, 8, 1) };
    Atomics.store(slots.due, 0, NO_DUE);
    let worker: Worker;
    try {
      worker = new Worker(this.workerUrl, { workerData: slots, name: 'nereid:precise-timer' });
    } catch {
      this.usable = false;
      return;
    }
    worker.on('message', this.onMessage);
    worker.on('error', this.lose);
    worker.on('exit', this.lose);
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    this.worker = worker;
    this.slots = slots;
    this.published = NO_DUE;
  }

  /** Quietly: the backstops already cover every pending timer. */
  private readonly lose = (): void => {
    this.usable = false;
    this.slots = undefined;
    this.worker = undefined;
    this.published = NO_DUE;
  };
}

const shared = new PreciseTimers();

/** The process's PreciseTimers (its worker starts with the first timer of 4 ms or less). */
export function setPreciseTimer(callback: () => void, delayNs: bigint): () => void {
  return shared.set(callback, delayNs);
}
