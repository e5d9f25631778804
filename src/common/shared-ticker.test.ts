import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { everyTick, sharedTimerCount } from './shared-ticker.js';

/** Resolves once `predicate` holds, checked on every tick of a 5 ms timer (no time bound). */
function until(predicate: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (predicate()) resolve();
      else setTimeout(check, 5);
    };
    check();
  });
}

void describe('everyTick', () => {
  void it('runs every callback of a period on one timer, and ends the timer with its last callback', async () => {
    const before = sharedTimerCount();
    const seen: string[] = [];
    const stops = ['a', 'b', 'c'].map((name) => everyTick(7, () => seen.push(name)));
    const other = everyTick(11, () => seen.push('other'));
    assert.equal(sharedTimerCount(), before + 2, 'one timer per period, not per callback');
    await until(() => seen.filter((s) => s === 'c').length >= 2);
    // Within one tick the callbacks run in the order they were registered, back to back.
    const ticks = seen.filter((s) => s !== 'other').join('');
    assert.match(ticks, /^(abc)+/);
    stops[1]();
    stops[1](); // stopping twice is harmless
    const mark = seen.length;
    await until(() => seen.slice(mark).filter((s) => s === 'c').length >= 2);
    assert.ok(!seen.slice(mark).includes('b'), 'a stopped callback is not called again');
    stops[0]();
    stops[2]();
    assert.equal(sharedTimerCount(), before + 1, "the period's timer ends with its last callback");
    other();
    assert.equal(sharedTimerCount(), before);
  });

  void it('keeps calling the others when one throws, and rethrows that error on its own', async () => {
    const errors: unknown[] = [];
    const listeners = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', (err) => errors.push(err));
    let after = 0;
    const failing = everyTick(9, () => {
      throw new Error('boom');
    });
    const counting = everyTick(9, () => after++);
    try {
      await until(() => after >= 2 && errors.length >= 1);
      assert.equal((errors[0] as Error).message, 'boom');
    } finally {
      failing();
      counting();
      process.removeAllListeners('uncaughtException');
      for (const l of listeners) process.on('uncaughtException', l);
    }
  });

  void it('lets a callback stop itself during its tick', async () => {
    let calls = 0;
    let others = 0;
    const stop = everyTick(13, () => {
      calls++;
      stop();
    });
    const other = everyTick(13, () => others++);
    await until(() => others >= 3);
    other();
    assert.equal(calls, 1);
  });
});
