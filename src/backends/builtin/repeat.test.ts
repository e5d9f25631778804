// The repeat backend against Triton's behaviour: one response per IN element after its DELAY, IDX counting
// up, a flag-only final response, execute() returning after WAIT while responses go on, and cancellation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RepeatBackend } from './repeat.js';
import {
  activeTimers,
  countTimerTurns,
  currentTimerTurn,
  configOf,
  executeAll,
  instanceOf,
  loadContext,
  requestOf,
  tensor,
  valueOf,
} from './builtin.testkit.js';

const CONFIG = `
name: "repeat_int32"
backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]`;

const backend = new RepeatBackend();

function repeatRequest(values: number[], delays: number[], wait: number, signal?: AbortSignal) {
  return requestOf(
    [tensor('IN', 'INT32', values), tensor('DELAY', 'UINT32', delays), tensor('WAIT', 'UINT32', [wait])],
    ['OUT', 'IDX'],
    signal,
  );
}

describe('repeat backend', () => {
  it('needs no model file', () => {
    assert.equal(backend.requiresModelFile, false);
    assert.equal(backend.name, 'repeat');
  });

  it('refuses configs the C++ backend refuses, with its messages', async () => {
    const bad = (from: string, to: string) =>
      backend.loadModel(loadContext(configOf(CONFIG.replace(from, to), 'repeat')));
    await assert.rejects(bad('max_batch_size: 0', 'max_batch_size: 4'), {
      message: 'repeat backend only supports models with max_batch_size == 0',
    });
    await assert.rejects(bad('name: "DELAY"', 'name: "D"'), {
      code: 'INVALID_ARG',
      message: 'expected second input tensor name to be DELAY, got D',
    });
    await assert.rejects(bad('name: "WAIT" data_type: TYPE_UINT32', 'name: "WAIT" data_type: TYPE_INT32'), {
      message: 'expected WAIT datatype to be UINT32, got TYPE_INT32',
    });
    await assert.rejects(
      bad('name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ]', 'name: "IDX" data_type: TYPE_UINT32 dims: [ 2 ]'),
      {
        message: 'expected IDX shape to be [1], got [2]',
      },
    );
  });

  it('sends one response per element after its delay, IDX counting up, then a flag-only final', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const r = repeatRequest([4, -5, 6], [40, 40, 40], 0);
    const start = performance.now();
    await executeAll(instance, [r]);
    const sent = r.sender.sent;
    assert.equal(sent.length, 4);
    assert.deepEqual(
      sent.slice(0, 3).map((s) => [valueOf(s, 'OUT'), valueOf(s, 'IDX'), s.options.final]),
      [
        [4, 0, false],
        [-5, 1, false],
        [6, 2, false],
      ],
    );
    assert.deepEqual(sent[3].outputs, []);
    assert.equal(sent[3].options.final, true);
    // Spaced by the delays (timers may fire a little early or late, never all at once).
    assert.ok(sent[0].at - start >= 35, `first after ${sent[0].at - start} ms`);
    assert.ok(sent[1].at - sent[0].at >= 30);
    assert.ok(sent[2].at - sent[1].at >= 30);
    assert.deepEqual(sent[0].outputs[0].shape, [1]);
  });

  it('answers an empty IN with the final flag alone', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const r = repeatRequest([], [], 0);
    await executeAll(instance, [r]);
    assert.equal(r.sender.sent.length, 1);
    assert.equal(r.sender.sent[0].options.final, true);
    assert.deepEqual(r.sender.sent[0].outputs, []);
  });

  it('holds the request for WAIT ms even when the responses are done sooner', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const r = repeatRequest([1], [0], 120);
    const start = performance.now();
    const stop = countTimerTurns();
    try {
      await instance.execute([r]);
    } finally {
      stop();
    }
    assert.ok(r.sender.sent[0].turn < currentTimerTurn(), 'the response left before the WAIT was over');
    assert.ok(performance.now() - start >= 110, 'execute() settles after WAIT');
  });

  it('returns from execute() after WAIT while the responses go on, as Triton releases the request', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const r = repeatRequest([1, 2, 3], [60, 60, 60], 10);
    const start = performance.now();
    await instance.execute([r]);
    // The 10 ms WAIT is due before the first 60 ms response, and timers run in due order.
    assert.equal(r.sender.sent.length, 0, 'execute() returned before the first response');
    assert.equal(r.sender.done, false, 'the stream is still open');
    // A second request on the same instance runs while the first one streams.
    const second = repeatRequest([9], [0], 0);
    await executeAll(instance, [second]);
    assert.equal(valueOf(second.sender.sent[0], 'OUT'), 9);
    assert.equal(r.sender.done, false);
    await r.sender.ended;
    assert.deepEqual(
      r.sender.sent.map((s) => (s.options.final ? 'final' : valueOf(s, 'OUT'))),
      [1, 2, 3, 'final'],
    );
    assert.ok(r.sender.endedAt - start >= 170, 'the responses kept their delays');
  });

  it('waits for the longest WAIT of a batch', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const a = repeatRequest([1], [0], 20);
    const b = repeatRequest([2], [0], 120);
    const start = performance.now();
    await instance.execute([a, b]);
    assert.ok(performance.now() - start >= 110);
    assert.equal(a.sender.done && b.sender.done, true);
  });

  it('fails a request whose IN and DELAY shapes differ', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const r = repeatRequest([1, 2, 3], [1, 2], 0);
    await executeAll(instance, [r]);
    assert.equal(r.sender.error?.code, 'INVALID_ARG');
    assert.equal(r.sender.error?.message, 'expected IN and DELAY shape to match, got [3] and [2]');
  });

  it('stops at once when the request is cancelled, ends it CANCELLED and leaves no timer behind', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'repeat'));
    const before = activeTimers();
    const controller = new AbortController();
    const r = repeatRequest([1, 2, 3], [10, 5000, 5000], 5000, controller.signal);
    const running = executeAll(instance, [r]);
    while (r.sender.sent.length === 0) await new Promise((res) => setTimeout(res, 5));
    controller.abort();
    await running;
    // Had it waited out the two 5 s delays, it would have sent three responses and left no CANCELLED.
    assert.equal(r.sender.sent.length, 1);
    assert.equal(r.sender.error?.code, 'CANCELLED');
    assert.equal(activeTimers(), before);
  });
});
