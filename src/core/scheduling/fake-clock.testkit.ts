/**
 * For scheduler tests: time that moves only when the test says so, and the timers of a BatcherClock /
 * SequenceClock fired in order as it passes them.
 */
import type { BatcherClock } from './dynamic-batcher.js';
import type { SequenceClock } from './sequence/sequence-scheduler.js';

export const MS = 1_000_000n;

export class FakeClock implements BatcherClock, SequenceClock {
  private t = 1_000n * MS;
  /** The next timer fires this long before process time reaches its target (Node's loop clock can lag). */
  lag = 0n;
  fired = 0;
  private timers: { at: bigint; cb: () => void; live: boolean }[] = [];
  /** Set by holdTurn(): endOfTurn() callbacks wait for endTurn(). */
  private turn: (() => void)[] | undefined;
  now(): bigint {
    return this.t;
  }
  setTimer(cb: () => void, delayNs: bigint): () => void {
    const timer = { at: this.t + delayNs, cb, live: true };
    this.timers.push(timer);
    return () => (timer.live = false);
  }
  /**
   * The end of the event loop's turn. Unless the test holds the turn, every call is a turn of its own
   * (the callback runs at once), as when each request arrives in a loop iteration of its own.
   */
  endOfTurn(cb: () => void): void {
    if (this.turn) this.turn.push(cb);
    else cb();
  }
  /** What happens from now until endTurn() happens in one event-loop turn (a burst read together). */
  holdTurn(): void {
    this.turn ??= [];
  }
  /** Ends the held turn: runs the endOfTurn() callbacks queued in it, in order. */
  endTurn(): void {
    const callbacks = this.turn ?? [];
    this.turn = undefined;
    for (const cb of callbacks) cb();
  }
  get pendingTimers(): number {
    return this.timers.filter((t) => t.live).length;
  }
  advance(ns: bigint): void {
    const end = this.t + ns;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= end).sort((a, b) => (a.at < b.at ? -1 : 1))[0];
      if (!due) break;
      due.live = false;
      this.t = due.at - this.lag;
      this.lag = 0n;
      this.fired++;
      due.cb();
    }
    this.t = end;
    this.timers = this.timers.filter((t) => t.live);
  }
}
