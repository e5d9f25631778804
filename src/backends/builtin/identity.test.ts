// The identity backend against Triton's: OUTPUT<i> copies INPUT<i>, example response parameters,
// execute_delay_ms, its config checks, and cancellation during the delay.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdentityBackend } from './identity.js';
import {
  activeTimers,
  configOf,
  countTimerTurns,
  instanceOf,
  loadContext,
  requestOf,
  tensor,
} from './builtin.testkit.js';

const CONFIG = `
name: "custom_zero_1_float32"
backend: "identity"
max_batch_size: 1
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
`;
const delayed = (ms: number) =>
  CONFIG + `parameters [{ key: "execute_delay_ms" value: { string_value: "${ms}" } }]`;
const backend = new IdentityBackend();

describe('identity backend', () => {
  it('copies each input to its output and attaches the example parameters', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'identity'));
    const input = { ...tensor('INPUT0', 'FP32', [1.5]), shape: [1, 1] };
    const r = requestOf([input], ['OUTPUT0']);
    await instance.execute([r]);
    const [s] = r.sender.sent;
    assert.equal(s.options.final, true);
    assert.deepEqual(s.options.parameters, {
      param0: 'an example string parameter',
      param1: 42,
      param2: false,
    });
    const out = s.outputs[0];
    assert.equal(out.name, 'OUTPUT0');
    assert.equal(out.datatype, 'FP32');
    assert.deepEqual(out.shape, [1, 1]);
    assert.equal(out.data.readFloatLE(0), 1.5);
    assert.notEqual(out.data.buffer, input.data.buffer, 'the output is a copy');
  });

  it('waits execute_delay_ms once per execution', async () => {
    const instance = await instanceOf(backend, configOf(delayed(200), 'identity'));
    const a = requestOf([tensor('INPUT0', 'FP32', [1])], ['OUTPUT0']);
    const b = requestOf([tensor('INPUT0', 'FP32', [2])], ['OUTPUT0']);
    const start = performance.now();
    const stop = countTimerTurns();
    try {
      await instance.execute([a, b]);
    } finally {
      stop();
    }
    assert.ok(performance.now() - start >= 190, 'the batch waited for the delay');
    assert.equal(a.sender.sent.length, 1);
    assert.equal(b.sender.sent[0].outputs[0].data.readFloatLE(0), 2);
    // One wait for the batch, not one per request: both answers left in the same turn of the event loop.
    assert.equal(a.sender.sent[0].turn, b.sender.sent[0].turn);
  });

  it('ends a request cancelled during the delay as CANCELLED, at once when the whole batch is', async () => {
    const instance = await instanceOf(backend, configOf(delayed(5000), 'identity'));
    const before = activeTimers();
    const controller = new AbortController();
    const r = requestOf([tensor('INPUT0', 'FP32', [1])], ['OUTPUT0'], controller.signal);
    const running = instance.execute([r]);
    setTimeout(() => controller.abort(), 20);
    await running;
    // Not waiting out the 5 s delay shows as no response sent and no timer left behind.
    assert.equal(r.sender.sent.length, 0);
    assert.equal(r.sender.error?.code, 'CANCELLED');
    assert.equal(activeTimers(), before);
  });

  it('fails a request that lacks the input of a requested output', async () => {
    const two = CONFIG.replace(
      'dims: [ 1 ] } ]\noutput',
      'dims: [ 1 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1 ] optional: true } ]\noutput',
    ).replace('dims: [ 1 ] } ]\n', 'dims: [ 1 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 1 ] } ]\n');
    const instance = await instanceOf(backend, configOf(two, 'identity'));
    const r = requestOf([tensor('INPUT0', 'FP32', [1])], ['OUTPUT0', 'OUTPUT1']);
    await instance.execute([r]);
    assert.equal(r.sender.error?.code, 'UNSUPPORTED');
    assert.equal(r.sender.error?.message, "failed to get input 'INPUT1'");
  });

  it('refuses configs the C++ backend refuses, with its messages', async () => {
    const load = (text: string) => backend.loadModel(loadContext(configOf(text, 'identity')));
    await assert.rejects(load(CONFIG.replace('name: "OUTPUT0"', 'name: "OUT0"')), {
      message: "expected output name to follow OUTPUT<index> pattern, got 'OUT0'",
    });
    await assert.rejects(
      load(CONFIG.replace('name: "OUTPUT0" data_type: TYPE_FP32', 'name: "OUTPUT0" data_type: TYPE_INT32')),
      {
        message: 'expected input and output datatype to match, got TYPE_FP32 and TYPE_INT32',
      },
    );
  });
});
