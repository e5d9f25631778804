/**
 * Periodic housekeeping on one timer per period: every caller that asks for the same period shares one
 * interval, so N watchers wake the event loop once per period instead of N times at N phases. An idle
 * server with three Python stubs had six such timers (each stub's memory watch, ten reads a second, and
 * each version's process sampler, four a second): about 43 timer wake-ups a second, which libuv's early
 * wake-ups made about 120 epoll waits a second on an otherwise idle event loop (issue 29).
 *
 * The timer is unref'd (housekeeping never keeps a process alive) and ends with its last callback. A
 * callback that throws does not stop the others of its tick; its error is rethrown on its own, as an
 * interval's would be.
 */

interface Tick {
  readonly timer: NodeJS.Timeout;
  readonly callbacks: Set<() => void>;
}

const ticks = new Map<number, Tick>();

function run(callbacks: ReadonlySet<() => void>): void {
  // A copy: a callback may stop itself (or another) while the tick runs.
  for (const callback of [...callbacks]) {
    if (!callbacks.has(callback)) continue;
    try {
      callback();
    } catch (err) {
      queueMicrotask(() => {
        throw err;
      });
    }
  }
}

/** Calls `callback` every `periodMs` on the period's shared timer; returns stop(). */
export function everyTick(periodMs: number, callback: () => void): () => void {
  let tick = ticks.get(periodMs);
  if (tick === undefined) {
    const callbacks = new Set<() => void>();
    const timer = setInterval(() => run(callbacks), periodMs);
    timer.unref();
    tick = { timer, callbacks };
    ticks.set(periodMs, tick);
  }
  // One entry per registration, even for the same function twice.
  const entry = (): void => callback();
  tick.callbacks.add(entry);
  const own = tick;
  return () => {
    if (!own.callbacks.delete(entry)) return;
    if (own.callbacks.size === 0 && ticks.get(periodMs) === own) {
      clearInterval(own.timer);
      ticks.delete(periodMs);
    }
  };
}

/** How many shared timers run now (for tests). */
export function sharedTimerCount(): number {
  return ticks.size;
}
