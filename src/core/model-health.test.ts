import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Logger } from '../common/logger.js';
import { ModelHealthMonitor, REASON_MODEL_NOT_READY } from './model-health.js';

const logger = (lines: string[]): Logger => new Logger({}, (l) => lines.push(l));
const never = new Promise<boolean>(() => undefined);

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('false makes the model not ready with the reason, true makes it ready again; both are logged once', async () => {
  let answer = true;
  const lines: string[] = [];
  const m = new ModelHealthMonitor(
    () => Promise.resolve(answer),
    { intervalMs: 0, timeoutMs: 1000 },
    logger(lines),
    "model 'm' version 1",
  );
  await m.pollNow();
  assert.equal(m.ready, true);
  answer = false;
  await m.pollNow();
  await m.pollNow();
  assert.equal(m.ready, false);
  assert.equal(m.reason, REASON_MODEL_NOT_READY);
  answer = true;
  await m.pollNow();
  assert.equal(m.ready, true);
  assert.equal(m.reason, undefined);
  assert.equal(lines.filter((l) => l.includes("model 'm' version 1 is not ready")).length, 1);
  assert.equal(lines.filter((l) => l.includes("model 'm' version 1 is ready again")).length, 1);
});

test('a probe that throws (even synchronously) or rejects counts as not ready', async () => {
  const rejecting = new ModelHealthMonitor(
    () => Promise.reject(new Error('boom')),
    { intervalMs: 0, timeoutMs: 1000 },
    logger([]),
    'x',
  );
  await rejecting.pollNow();
  assert.equal(rejecting.ready, false);
  assert.match(rejecting.reason!, /^model reported not ready: isReady\(\) failed: boom/);

  const throwing = new ModelHealthMonitor(
    () => {
      throw new Error('sync');
    },
    { intervalMs: 0, timeoutMs: 1000 },
    logger([]),
    'x',
  );
  await throwing.pollNow();
  assert.equal(throwing.ready, false);
  assert.match(throwing.reason!, /sync/);
});

test('no answer within the timeout counts as not ready; a late true makes it ready; polls never overlap', async () => {
  let release: (v: boolean) => void = () => undefined;
  let calls = 0;
  const m = new ModelHealthMonitor(
    () => {
      calls++;
      return new Promise<boolean>((r) => (release = r));
    },
    { intervalMs: 0, timeoutMs: 20 },
    logger([]),
    'x',
  );
  const first = m.pollNow();
  await until(() => !m.ready);
  assert.match(m.reason!, /did not answer within 20 ms/);
  const second = m.pollNow();
  assert.equal(calls, 1, 'a poll in flight is not doubled');
  release(true);
  await Promise.all([first, second]);
  assert.equal(m.ready, true);
});

test('start() polls every interval until stop(); a stopped monitor keeps its state', async () => {
  let answer = true;
  const m = new ModelHealthMonitor(
    () => Promise.resolve(answer),
    { intervalMs: 5, timeoutMs: 1000 },
    logger([]),
    'x',
  );
  m.start();
  await until(() => m.polls >= 3);
  answer = false;
  await until(() => !m.ready);
  m.stop();
  const polls = m.polls;
  answer = true;
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(m.polls <= polls + 1, 'at most the poll in flight when stop() came');
  assert.equal(m.ready, false, 'answers after stop() change nothing');
});

test('interval 0 never polls on its own; a stuck probe leaves the model not ready', async () => {
  const idle = new ModelHealthMonitor(() => never, { intervalMs: 0, timeoutMs: 10 }, logger([]), 'x');
  idle.start();
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(idle.polls, 0);
  assert.equal(idle.ready, true);
  void idle.pollNow();
  await until(() => !idle.ready);
  assert.equal(idle.polls, 1);
});
