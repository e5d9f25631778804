import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  BackendRequest,
  InstanceHandle,
  ResponseSender,
  SendOptions,
} from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { parseModelConfigText } from '../../model-config/index.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { PreparedRequest } from '../inference.js';
import { ModelStats } from '../stats/model-stats.js';
import { DynamicBatcher } from './dynamic-batcher.js';
import { InstancePool } from './instance-pool.js';
import { RateLimiter } from './rate-limiter.js';
import { FakeClock, MS } from './fake-clock.testkit.js';

/** An instance whose executions the test finishes by hand. */
class FakeInstance implements InstanceHandle {
  readonly batches: string[][] = [];
  private readonly pending: (() => void)[] = [];
  constructor(
    readonly name: string,
    readonly pipelineDepth?: number,
  ) {}
  execute(requests: readonly BackendRequest[]): Promise<void> {
    this.batches.push(requests.map((r) => r.id));
    return new Promise((resolve) => {
      this.pending.push(() => {
        for (const r of requests) r.sender.send([], { final: true });
        resolve();
      });
    });
  }
  /** Completes the oldest running execution. */
  complete(): void {
    this.pending.shift()?.();
  }
  get busy(): boolean {
    return this.pending.length > 0;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Outcome {
  result?: 'ok' | NereidError;
}

class Sender implements ResponseSender {
  done = false;
  constructor(
    private readonly id: string,
    private readonly outcome: Outcome,
    private readonly log: string[],
  ) {}
  send(_o: readonly Tensor[], options: SendOptions): void {
    if (this.done) return;
    if (options.final) this.done = true;
    this.outcome.result = 'ok';
    this.log.push(this.id);
  }
  fail(error: NereidError): void {
    if (this.done) return;
    this.done = true;
    this.outcome.result = error;
    this.log.push(`${this.id}!`);
  }
}

interface Harness {
  readonly batcher: DynamicBatcher;
  readonly clock: FakeClock;
  readonly instances: FakeInstance[];
  /** Ids in the order their answers went out ("id!" for errors). */
  readonly answered: string[];
  submit(
    id: string,
    opts?: { batch?: number; priority?: number; timeoutUs?: number; signal?: AbortSignal; n?: number },
  ): Outcome;
}

function harness(
  configText: string,
  instanceCount = 1,
  limiter?: RateLimiter,
  pipelineDepth?: number,
  realClock = false,
): Harness {
  const config: FrozenModelConfig = parseModelConfigText(configText, 'm');
  const clock = new FakeClock();
  const instances = Array.from(
    { length: instanceCount },
    (_, i) => new FakeInstance(`m_${i}`, pipelineDepth),
  );
  const stats = new ModelStats('m', '1');
  const rateLimit = limiter?.registerModel(
    { ...config, instance_group: [{ ...config.instance_group[0], count: instanceCount }] },
    instanceCount,
  );
  const pool = new InstancePool(instances, stats, new Logger({}, () => undefined), rateLimit);
  const batcher = new DynamicBatcher({
    config,
    pool,
    log: new Logger({}, () => undefined),
    ...(!realClock && { clock }),
  });
  const answered: string[] = [];
  return {
    batcher,
    clock,
    instances,
    answered,
    submit(id, opts = {}) {
      const outcome: Outcome = {};
      const n = opts.n ?? 4;
      const b = opts.batch ?? 1;
      const request: PreparedRequest = {
        id,
        inputs: new Map([
          ['INPUT0', { name: 'INPUT0', datatype: 'FP32', shape: [b, n], data: Buffer.alloc(4 * b * n) }],
        ]),
        outputs: [{ name: 'OUTPUT0', classification: 0 }],
        batchSize: b,
        correlationId: 0n,
        flags: 0,
        priority: opts.priority ?? 0,
        timeoutUs: opts.timeoutUs ?? 0,
        parameters: {},
      };
      batcher.enqueue({
        request,
        sender: new Sender(id, outcome, answered),
        signal: opts.signal ?? new AbortController().signal,
        acceptedAt: clock.now(),
      });
      return outcome;
    },
  };
}

function errorOf(o: Outcome): NereidError {
  const r = o.result;
  if (r === undefined || r === 'ok')
    throw new assert.AssertionError({ message: `expected an error, got ${String(r)}` });
  return r;
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

function model(dynamicBatching: string, maxBatch = 8, dims = '[ -1 ]'): string {
  return `name: "m" max_batch_size: ${maxBatch}
    input [ { name: "INPUT0" data_type: TYPE_FP32 dims: ${dims} } ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: ${dims} } ]
    instance_group [ { kind: KIND_CPU count: 1 } ]
    dynamic_batching { ${dynamicBatching} }`;
}

test('dynamic batcher: requests queued behind a busy instance form one batch when it frees', async () => {
  const h = harness(model(''));
  h.submit('a');
  assert.deepEqual(h.instances[0].batches, [['a']], 'delay 0: the free instance takes a at once');
  h.submit('b');
  h.submit('c');
  h.submit('d');
  assert.equal(h.batcher.queued, 3);
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.instances[0].batches, [['a'], ['b', 'c', 'd']]);
  assert.equal(h.batcher.queued, 0);
});

/**
 * Batch formation by event-loop turn. Each turn is a list of events handled in one turn of the loop (a
 * burst the server read together): `x` queues request x, `x/p` with priority p, `done<i>` finishes the
 * oldest execution of instance i. Batches form when the turn ends, from everything queued by then, on
 * whatever instance is free; `expect` is every instance's batches, in order, after the last turn.
 */
interface TurnRow {
  readonly name: string;
  /** The dynamic_batching body, max_batch_size, instances (and their pipeline depth). */
  readonly config: [string, number, number] | [string, number, number, number];
  readonly turns: readonly string[];
  readonly expect: readonly (readonly (readonly string[])[])[];
}

const TURN_ROWS: readonly TurnRow[] = [
  {
    name: 'a burst read in one turn goes to the free instance as one batch',
    config: ['', 8, 1],
    turns: ['a b c'],
    expect: [[['a', 'b', 'c']]],
  },
  {
    name: 'two idle instances: a burst goes whole to one; the other is not handed its first request',
    config: ['', 8, 2],
    turns: ['a b c d'],
    expect: [[['a', 'b', 'c', 'd']], []],
  },
  {
    name: 'requests in turns of their own still go at once, each to a free instance (no delay)',
    config: ['', 8, 2],
    turns: ['a', 'b'],
    expect: [[['a']], [['b']]],
  },
  {
    name: 'an instance that frees takes what was queued and what the same turn read after it',
    config: ['', 8, 1],
    turns: ['a', 'b', 'done0 c d'],
    expect: [[['a'], ['b', 'c', 'd']]],
  },
  {
    name: 'a burst larger than max_batch_size: the rest waits for the next free instance',
    config: ['', 2, 2],
    turns: ['a b c d e', 'done1'],
    expect: [[['a', 'b']], [['c', 'd'], ['e']]],
  },
  {
    name: 'a burst with priorities: the higher level leads the batch',
    config: ['priority_levels: 2 default_priority_level: 2', 2, 1],
    turns: ['l1 l2 h/1'],
    expect: [[['h', 'l1']]],
  },
  {
    name: 'a queue delay still waits for a preferred size when the burst does not reach it',
    config: ['preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 100000', 8, 1],
    turns: ['a b c', 'd'],
    expect: [[['a', 'b', 'c', 'd']]],
  },
  {
    name: 'a pipelined instance takes a burst that fills the batch behind its running one',
    config: ['', 3, 1, 2],
    turns: ['a', 'b c d'],
    expect: [[['a'], ['b', 'c', 'd']]],
  },
];

for (const row of TURN_ROWS) {
  test(`dynamic batcher, by turn: ${row.name}`, async () => {
    const [body, maxBatch, instances, depth] = row.config;
    const h = harness(model(body, maxBatch, '[ 4 ]'), instances, undefined, depth);
    for (const turn of row.turns) {
      h.clock.holdTurn();
      for (const event of turn.split(' ')) {
        const done = /^done(\d+)$/.exec(event);
        if (done) {
          h.instances[Number(done[1])].complete();
          await flush(); // the pool sees the execution end; the batcher waits for the turn to end
        } else {
          const [id, priority] = event.split('/');
          h.submit(id, { priority: priority === undefined ? 0 : Number(priority) });
        }
      }
      h.clock.endTurn();
    }
    assert.deepEqual(
      h.instances.map((i) => i.batches),
      row.expect,
    );
  });
}

test('dynamic batcher: with the real clock, requests queued in one turn of the loop form one batch', async () => {
  const h = harness(model(''), 2, undefined, undefined, true);
  h.submit('a');
  h.submit('b');
  h.submit('c');
  assert.deepEqual(h.instances[0].batches, [], 'not inside the turn that queued them');
  await flush();
  assert.deepEqual(
    h.instances.map((i) => i.batches),
    [[['a', 'b', 'c']], []],
  );
  h.submit('d');
  await flush();
  assert.deepEqual(h.instances[1].batches, [['d']], 'a request of a later turn goes to the idle instance');
});

test('dynamic batcher: waits max_queue_delay for a preferred size, then sends what there is', async () => {
  const h = harness(model('preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 100000'));
  h.submit('a');
  h.submit('b');
  assert.deepEqual(h.instances[0].batches, [], 'waiting for more');
  h.clock.advance(99n * MS);
  assert.deepEqual(h.instances[0].batches, []);
  h.submit('c');
  h.clock.advance(2n * MS);
  assert.deepEqual(h.instances[0].batches, [['a', 'b', 'c']], 'sent when a had waited 100 ms');
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.answered, ['a', 'b', 'c']);
});

test('dynamic batcher: a timer that fires on a lagging clock still sends the waiting batch', () => {
  const h = harness(model('preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000'));
  h.clock.lag = 300_000n;
  h.submit('a');
  h.clock.advance(2n * MS);
  assert.deepEqual(h.instances[0].batches, [['a']]);
  assert.equal(h.clock.fired, 1, 'sent when the 2 ms timer fired, not on a second one');
});

test('dynamic batcher: a preferred size goes at once, without waiting for the delay', () => {
  const h = harness(model('preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 1000000'));
  h.submit('a');
  h.submit('b', { batch: 3 });
  assert.deepEqual(h.instances[0].batches, [['a', 'b']]);
});

test('dynamic batcher: requests with different shapes do not share a batch', async () => {
  const h = harness(model('max_queue_delay_microseconds: 0'));
  h.submit('busy');
  h.submit('a', { n: 4 });
  h.submit('b', { n: 4 });
  h.submit('c', { n: 5 });
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.instances[0].batches.at(-1), ['a', 'b']);
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.instances[0].batches.at(-1), ['c']);
});

test('dynamic batcher: allow_ragged_batch lets different shapes share a batch', async () => {
  const h = harness(
    `name: "m" max_batch_size: 8
     input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
     output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
     dynamic_batching { }`,
  );
  h.submit('busy');
  h.submit('a', { n: 4 });
  h.submit('b', { n: 5 });
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.instances[0].batches.at(-1), ['a', 'b']);
});

test('dynamic batcher: a higher priority request overtakes queued ones', async () => {
  const h = harness(model('priority_levels: 2 default_priority_level: 2', 0, '[ 4 ]'));
  h.submit('busy');
  h.submit('low1');
  h.submit('low2', { priority: 2 });
  h.submit('high', { priority: 1 });
  for (let i = 0; i < 3; i++) {
    h.instances[0].complete();
    await flush();
  }
  assert.deepEqual(
    h.instances[0].batches,
    [['busy'], ['high'], ['low1'], ['low2']],
    'max_batch_size 0: one each',
  );
});

test('dynamic batcher: a full queue answers UNAVAILABLE at once', () => {
  const h = harness(model('default_queue_policy { max_queue_size: 1 }', 0, '[ 4 ]'));
  h.submit('busy');
  const queued = h.submit('queued');
  const refused = h.submit('refused');
  assert.equal(queued.result, undefined);
  const err = errorOf(refused);
  assert.equal(err.code, 'UNAVAILABLE');
  assert.equal(err.message, 'Exceeds maximum queue size');
});

test('dynamic batcher: REJECT timeouts are answered by the timer while no batch forms', () => {
  const h = harness(model('default_queue_policy { default_timeout_microseconds: 50000 }', 0, '[ 4 ]'));
  h.submit('busy');
  const waiting = h.submit('waiting');
  h.clock.advance(50n * MS);
  assert.equal(waiting.result, undefined, 'not before the deadline has passed');
  h.clock.advance(2n * MS);
  const err = errorOf(waiting);
  assert.equal(err.code, 'UNAVAILABLE');
  assert.equal(err.message, 'Request timeout expired');
  assert.equal(h.batcher.queued, 0);
  assert.equal(h.clock.pendingTimers, 0, 'no timer left behind');
});

test('dynamic batcher: per-request timeout overrides only when allowed and shorter', () => {
  const h = harness(
    model(
      'default_queue_policy { default_timeout_microseconds: 100000 allow_timeout_override: true }',
      0,
      '[ 4 ]',
    ),
  );
  h.submit('busy');
  const short = h.submit('short', { timeoutUs: 10_000 });
  const long = h.submit('long', { timeoutUs: 10_000_000 });
  h.clock.advance(11n * MS);
  assert.equal(errorOf(short).message, 'Request timeout expired');
  assert.equal(long.result, undefined);
  h.clock.advance(90n * MS);
  assert.equal(errorOf(long).message, 'Request timeout expired');
});

test('dynamic batcher: DELAY moves a timed-out request behind the others', async () => {
  const h = harness(
    model('default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10000 }', 0, '[ 4 ]'),
  );
  h.submit('busy');
  const late = h.submit('late');
  h.clock.advance(20n * MS);
  assert.equal(late.result, undefined, 'delayed, not rejected');
  h.submit('fresh');
  for (let i = 0; i < 2; i++) {
    h.instances[0].complete();
    await flush();
  }
  assert.deepEqual(h.instances[0].batches, [['busy'], ['fresh'], ['late']]);
});

test('dynamic batcher: a cancelled queued request leaves at once', () => {
  const h = harness(model('', 0, '[ 4 ]'));
  h.submit('busy');
  const ac = new AbortController();
  const gone = h.submit('gone', { signal: ac.signal });
  h.submit('stays');
  ac.abort();
  assert.equal(errorOf(gone).code, 'CANCELLED');
  assert.equal(h.batcher.queued, 1);
});

test('dynamic batcher: preserve_ordering releases answers in request order across instances', async () => {
  const h = harness(model('preserve_ordering: true', 1, '[ 4 ]'), 2);
  h.submit('first');
  h.submit('second');
  assert.deepEqual(
    h.instances.map((i) => i.batches),
    [[['first']], [['second']]],
  );
  h.instances[1].complete();
  await flush();
  assert.deepEqual(h.answered, [], 'second waits for first');
  h.instances[0].complete();
  await flush();
  assert.deepEqual(h.answered, ['first', 'second']);
});

test('dynamic batcher: drain waits for queued and running requests', async () => {
  const h = harness(model('', 0, '[ 4 ]'));
  h.submit('a');
  h.submit('b');
  let drained = false;
  void h.batcher.drain().then(() => (drained = true));
  assert.throws(() => h.submit('late'), /model is unloading/);
  h.instances[0].complete();
  await flush();
  assert.equal(drained, false);
  h.instances[0].complete();
  await flush();
  assert.equal(drained, true);
  assert.deepEqual(h.answered, ['a', 'b']);
});

test('dynamic batcher: with the rate limiter, a batch runs only when the resources are free', async () => {
  const limiter = new RateLimiter();
  const [other] = limiter.register([
    { resources: [{ name: 'R', global: true, count: 1 }], priority: 0, device: 0 },
  ]);
  let otherRuns = 0;
  other.request(() => otherRuns++);
  assert.equal(otherRuns, 1, 'another model holds R');
  const h = harness(
    `name: "m" max_batch_size: 8
     input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
     output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
     instance_group [ { kind: KIND_CPU count: 1 rate_limiter { resources [ { name: "R" global: true count: 1 } ] } } ]
     dynamic_batching { }`,
    1,
    limiter,
  );
  h.submit('a');
  h.submit('b');
  assert.deepEqual(h.instances[0].batches, [], 'waiting for R');
  other.release(true);
  await flush();
  assert.deepEqual(h.instances[0].batches, [['a', 'b']], 'the batch forms when R is granted');
  other.request(() => otherRuns++);
  assert.equal(otherRuns, 1, 'R is held while m executes');
  h.instances[0].complete();
  await flush();
  assert.equal(otherRuns, 2, 'and handed back after');
});

const early = (value = 'true'): string =>
  model('max_queue_delay_microseconds: 100000') +
  ` parameters { key: "dynamic_batching_early_dispatch" value: { string_value: "${value}" } }`;

test('early dispatch: a lone client is not kept waiting; without it the delay runs out first', () => {
  const triton = harness(model('max_queue_delay_microseconds: 100000'));
  triton.submit('a');
  assert.deepEqual(triton.instances[0].batches, [], 'Triton semantics: a waits for company');
  const h = harness(early());
  h.submit('a');
  assert.deepEqual(h.instances[0].batches, [['a']], 'the only client is waiting: send at once');
  assert.equal(h.clock.fired, 0);
});

test('early dispatch: waits while fewer requests are in flight than lately, sends once all are back', async () => {
  const h = harness(early());
  h.submit('a'); // alone: sent at once
  h.submit('b');
  h.submit('c');
  h.submit('d'); // four in flight: a running, b c d queued
  assert.deepEqual(h.instances[0].batches, [['a']]);
  h.instances[0].complete();
  await flush();
  // a's client has not come back: b c d could still get company, so they wait (not past the delay).
  assert.deepEqual(h.instances[0].batches, [['a']]);
  h.clock.advance(10n * MS);
  assert.deepEqual(h.instances[0].batches, [['a']]);
  h.submit('e'); // four in flight again: nobody else can join
  assert.deepEqual(h.instances[0].batches, [['a'], ['b', 'c', 'd', 'e']]);
  h.instances[0].complete();
  await flush();
  // A fifth client never seen before still gets the full delay's chance to join: max_queue_delay holds.
  h.submit('f');
  h.submit('g');
  h.clock.advance(99n * MS);
  assert.equal(h.instances[0].batches.length, 2);
  h.clock.advance(2n * MS);
  assert.deepEqual(h.instances[0].batches[2], ['f', 'g']);
});

test('early dispatch: the model forgets clients that went away (two quiet windows)', async () => {
  const h = harness(early());
  for (const id of ['a', 'b', 'c']) h.submit(id);
  h.instances[0].complete();
  await flush();
  h.clock.advance(100n * MS); // b c go when the delay runs out
  h.instances[0].complete();
  await flush();
  assert.equal(h.instances[0].batches.length, 2);
  h.clock.advance(3000n * MS);
  h.submit('z');
  assert.deepEqual(h.instances[0].batches[2], ['z'], 'three quiet seconds later a lone client goes at once');
});

test('early dispatch: "false" keeps Triton semantics; any other value refuses the model', () => {
  const off = harness(early('false'));
  off.submit('a');
  assert.deepEqual(off.instances[0].batches, []);
  assert.throws(
    () => harness(early('yes')),
    (err: NereidError) =>
      err.code === 'INVALID_ARG' &&
      /dynamic_batching_early_dispatch.*"true" or "false", got 'yes'/.test(err.message),
  );
});

test('dynamic batcher: a pipelined instance takes a complete batch behind its running one; an incomplete one waits', async () => {
  const h = harness(model('', 4), 1, undefined, 2);
  const inst = h.instances[0];
  h.submit('a');
  assert.deepEqual(inst.batches, [['a']], 'the idle instance takes a at once');
  h.submit('b');
  h.submit('c');
  assert.deepEqual(inst.batches, [['a']], 'b and c could still be joined: they wait for the instance');
  h.submit('d');
  h.submit('e');
  assert.deepEqual(inst.batches, [['a'], ['b', 'c', 'd', 'e']], 'a full batch goes behind a at once');
  h.submit('f');
  assert.deepEqual(inst.batches.length, 2, 'no third execution at depth 2');
  inst.complete();
  await flush();
  assert.deepEqual(inst.batches.length, 2, 'f alone is not complete: it waits for the instance to be idle');
  inst.complete();
  await flush();
  assert.deepEqual(inst.batches, [['a'], ['b', 'c', 'd', 'e'], ['f']]);
  inst.complete();
  await flush();
  assert.deepEqual(h.answered, ['a', 'b', 'c', 'd', 'e', 'f']);
});

test('dynamic batcher: without a batch dimension every request is complete and is pipelined at once', async () => {
  const h = harness(model('', 0, '[ 4 ]'), 1, undefined, 2);
  const inst = h.instances[0];
  h.submit('a');
  h.submit('b');
  h.submit('c');
  assert.deepEqual(inst.batches, [['a'], ['b']]);
  inst.complete();
  await flush();
  assert.deepEqual(inst.batches, [['a'], ['b'], ['c']]);
  inst.complete();
  inst.complete();
  await flush();
  assert.deepEqual(h.answered, ['a', 'b', 'c']);
});

test('dynamic batcher: under the rate limiter a pipelined instance still runs one batch at a time', async () => {
  const h = harness(model('', 0, '[ 4 ]'), 1, new RateLimiter(), 2);
  const inst = h.instances[0];
  h.submit('a');
  h.submit('b');
  await flush();
  assert.deepEqual(inst.batches, [['a']]);
  inst.complete();
  await flush();
  assert.deepEqual(inst.batches, [['a'], ['b']]);
  inst.complete();
  await flush();
  assert.deepEqual(h.answered, ['a', 'b']);
});
