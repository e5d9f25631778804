// The square backend against Triton's behaviour: IN=n gives n responses with OUT=n (none for 0) and a
// flag-only final; its QA delay parameters; cancellation between responses; a huge n never blocks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResponseSender, SendOptions } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import { SquareBackend, squareSettings } from './square.js';
import {
  configOf,
  executeAll,
  instanceOf,
  loadContext,
  requestOf,
  tensor,
  valueOf,
} from './builtin.testkit.js';

const CONFIG = `
name: "square_int32"
backend: "square"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

const param = (key: string, value: string) =>
  `parameters [{ key: "${key}" value: { string_value: "${value}" } }]`;
const backend = new SquareBackend();
const squareRequest = (n: number, signal?: AbortSignal) =>
  requestOf([tensor('IN', 'INT32', [n])], ['OUT'], signal);

describe('square backend', () => {
  it('sends n responses with OUT = n, then the final flag', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'square'));
    const r = squareRequest(5);
    await executeAll(instance, [r]);
    assert.equal(r.sender.sent.length, 6);
    for (const s of r.sender.sent.slice(0, 5)) {
      assert.equal(valueOf(s, 'OUT'), 5);
      assert.equal(s.options.final, false);
    }
    assert.deepEqual(r.sender.sent[5].outputs, []);
    assert.equal(r.sender.sent[5].options.final, true);
  });

  it('returns from execute() at once while the responses go on, as Triton releases the request', async () => {
    const config = configOf(CONFIG + param('CUSTOM_INFER_DELAY_NS', '40000000'), 'square');
    const instance = await instanceOf(backend, config);
    const r = squareRequest(2);
    const start = performance.now();
    await instance.execute([r]);
    // execute() resolved before any 40 ms response timer could run: nothing was sent yet.
    assert.equal(r.sender.sent.length, 0, 'execute() did not wait for the responses');
    await r.sender.ended;
    assert.equal(r.sender.sent.length, 3);
    assert.ok(r.sender.endedAt - start >= 70);
  });

  it('sends no response for 0, only the final flag', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'square'));
    const r = squareRequest(0);
    await executeAll(instance, [r]);
    assert.equal(r.sender.sent.length, 1);
    assert.equal(r.sender.sent[0].options.final, true);
    assert.deepEqual(r.sender.sent[0].outputs, []);
  });

  it('refuses a negative count', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'square'));
    const r = squareRequest(-1);
    await executeAll(instance, [r]);
    assert.equal(r.sender.error?.code, 'INVALID_ARG');
    assert.equal(r.sender.sent.length, 0);
  });

  it('refuses configs the C++ backend refuses, with its messages', async () => {
    const load = (text: string) => backend.loadModel(loadContext(configOf(text, 'square')));
    await assert.rejects(load(CONFIG.replace('name: "OUT"', 'name: "Y"')), {
      message: 'expected first output tensor name to be OUT, got Y',
    });
    await assert.rejects(
      load(CONFIG.replace('TYPE_INT32 dims: [ 1 ] } ]\noutput', 'TYPE_INT32 dims: [ 2 ] } ]\noutput')),
      {
        message: 'expected IN shape to be [1], got [2]',
      },
    );
  });

  it('reads the QA delay and count parameters as Triton does (digits only, else the default)', () => {
    const s = squareSettings(
      configOf(
        CONFIG +
          param('CUSTOM_INFER_DELAY_NS', '40000000') +
          param('CUSTOM_OUTPUT_DELAY_NS', '20000000') +
          param('CUSTOM_CANCEL_DELAY_NS', 'x1') +
          param('CUSTOM_EMPTY_COUNT', '1'),
        'square',
      ),
    );
    assert.deepEqual(s, { inferDelayMs: 40, outputDelayMs: 20, cancelDelayMs: 0, silentCount: 1 });
  });

  it('spaces responses by the infer and output delays and skips the empty ones', async () => {
    const config = configOf(
      CONFIG + param('CUSTOM_INFER_DELAY_NS', '30000000') + param('CUSTOM_EMPTY_COUNT', '1'),
      'square',
    );
    const instance = await instanceOf(backend, config);
    const r = squareRequest(3);
    const start = performance.now();
    await executeAll(instance, [r]);
    assert.equal(r.sender.sent.length, 3, 'two responses and the final flag');
    assert.ok(r.sender.sent[0].at - start >= 25);
    assert.ok(r.sender.sent[1].at - r.sender.sent[0].at >= 25);
    assert.ok(performance.now() - start >= 80, 'the empty third response still took its compute time');
  });

  it('stops before the next response when cancelled and ends the request CANCELLED', async () => {
    const config = configOf(CONFIG + param('CUSTOM_INFER_DELAY_NS', '30000000'), 'square');
    const instance = await instanceOf(backend, config);
    const controller = new AbortController();
    const r = squareRequest(100, controller.signal);
    const running = executeAll(instance, [r]);
    while (r.sender.sent.length === 0) await new Promise((res) => setTimeout(res, 5));
    controller.abort();
    await running;
    assert.ok(r.sender.sent.length <= 2, `${r.sender.sent.length} responses`);
    assert.equal(r.sender.error?.code, 'CANCELLED');
  });

  it('keeps the event loop free while sending many responses', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'square'));
    const r = squareRequest(20000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await executeAll(instance, [r]);
    clearInterval(timer);
    assert.equal(r.sender.sent.length, 20001);
    assert.ok(ticks > 0, 'timers ran while the responses were produced');
  });

  it('waits at the bound of undelivered responses while the reader is slow, and stops when it leaves', async () => {
    const instance = await instanceOf(backend, configOf(CONFIG, 'square'));
    const controller = new AbortController();
    const sender = new BoundedSender(8);
    const r = { ...squareRequest(2 ** 31 - 1, controller.signal), sender };
    await instance.execute([r]);
    await turns(200);
    assert.equal(sender.queued.length, 8, 'a huge count with nobody reading holds only the bound');
    sender.take(5);
    await turns(200);
    assert.equal(sender.queued.length, 8);
    assert.equal(sender.sends, 13, 'the model sent only what was read plus the bound');
    controller.abort();
    sender.take(8); // the waiting send goes on and sees the cancellation
    await sender.ended;
    assert.equal(sender.error?.code, 'CANCELLED');
    assert.ok(sender.sends <= 14);
  });
});

/** Lets `n` passes of the event loop go by (the square backend's zero delays are immediates). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((res) => setImmediate(res));
}

/** A sender with a bounded queue of undelivered responses (as the core's response stream has). */
class BoundedSender implements ResponseSender {
  sends = 0;
  done = false;
  error: NereidError | undefined;
  readonly queued: number[] = [];
  private room: (() => void) | undefined;
  private resolveEnded!: () => void;
  readonly ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));
  constructor(private readonly bound: number) {}
  send(outputs: readonly Tensor[], options: SendOptions): void {
    this.sends++;
    this.queued.push(outputs.length);
    if (options.final) this.end();
  }
  fail(error: NereidError): void {
    this.error = error;
    this.end();
  }
  whenWritable(): Promise<void> {
    if (this.queued.length < this.bound) return Promise.resolve();
    return new Promise((resolve) => (this.room = resolve));
  }
  /** The reader takes `n` responses. */
  take(n: number): void {
    this.queued.splice(0, n);
    this.room?.();
    this.room = undefined;
  }
  private end(): void {
    this.done = true;
    this.resolveEnded();
  }
}
