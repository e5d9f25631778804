import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idleControllers, returnController, takeController } from './signal-pool.js';

/** Empties the pool so each test starts from a known state. */
function drain(): void {
  while (idleControllers() > 0) takeController();
}

test('a clean controller is reused: the next request gets the same signal, unaborted', () => {
  drain();
  const first = takeController();
  const signal = first.signal;
  const onAbort = (): void => {};
  signal.addEventListener('abort', onAbort, { once: true });
  signal.removeEventListener('abort', onAbort);
  returnController(first);
  assert.equal(idleControllers(), 1);
  const second = takeController();
  assert.equal(second, first);
  assert.equal(second.signal.aborted, false);
  assert.equal(idleControllers(), 0);
});

test('an aborted controller is never reused', () => {
  drain();
  const c = takeController();
  c.abort();
  returnController(c);
  assert.equal(idleControllers(), 0);
  assert.notEqual(takeController(), c);
});

test('a signal someone still listens to is never reused, nor one with an onabort handler', () => {
  drain();
  const listened = takeController();
  listened.signal.addEventListener('abort', () => {});
  returnController(listened);
  assert.equal(idleControllers(), 0);

  const handled = takeController();
  handled.signal.onabort = () => {};
  returnController(handled);
  assert.equal(idleControllers(), 0);

  // The listener left on the dropped signal still fires for its own request only.
  let fired = 0;
  const kept = takeController();
  kept.signal.addEventListener('abort', () => fired++);
  returnController(kept);
  const next = takeController();
  assert.notEqual(next, kept);
  next.abort();
  assert.equal(fired, 0);
});

test('the pool keeps at most 256 idle controllers', () => {
  drain();
  const many = Array.from({ length: 300 }, () => takeController());
  for (const c of many) {
    void c.signal; // a used controller, as the frontends return them
    returnController(c);
  }
  assert.equal(idleControllers(), 256);
  drain();
});
