import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  BackendRequest,
  InstanceHandle,
  ResponseSender,
  SendOptions,
} from '../../../backend-api/backend.js';
import type { NereidError } from '../../../common/errors.js';
import { Logger } from '../../../common/logger.js';
import type { Tensor } from '../../../common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
} from '../../../model-config/index.js';
import { SEQUENCE_END, SEQUENCE_START, type PreparedRequest } from '../../inference.js';
import { ModelStats } from '../../stats/model-stats.js';
import { InstancePool } from '../instance-pool.js';
import { SequenceBatchScheduler } from './sequence-scheduler.js';
import { FakeClock, MS } from '../fake-clock.testkit.js';

/** What the model saw in one row of a batch. */
interface Row {
  id: string;
  input: number;
  start?: number;
  end?: number;
  ready?: number;
  corrid?: bigint;
  state?: number;
  fetches: string[];
}

const int32 = (t: Tensor | undefined): number | undefined => t?.data.readInt32LE(0);
const tensor = (name: string, v: number): Tensor => {
  const data = Buffer.alloc(4);
  data.writeInt32LE(v);
  return { name, datatype: 'INT32', shape: [1, 1], data };
};

/**
 * An accumulator model whose executions the test finishes by hand: OUTPUT = OUTPUT_STATE = INPUT +
 * INPUT_STATE (INPUT alone when the model has no state).
 */
class FakeInstance implements InstanceHandle {
  readonly batches: Row[][] = [];
  private readonly pending: (() => void)[] = [];
  constructor(readonly name: string) {}
  execute(requests: readonly BackendRequest[]): Promise<void> {
    this.batches.push(
      requests.map((r) => ({
        id: r.id,
        input: int32(r.inputs.get('INPUT'))!,
        start: int32(r.inputs.get('START')),
        end: int32(r.inputs.get('END')),
        ready: int32(r.inputs.get('READY')),
        corrid: r.inputs.get('CORRID')?.data.readBigUInt64LE(0),
        state: int32(r.inputs.get('INPUT_STATE')),
        fetches: [...r.requestedOutputs].sort(),
      })),
    );
    return new Promise((resolve) => {
      this.pending.push(() => {
        for (const r of requests) {
          const sum = int32(r.inputs.get('INPUT'))! + (int32(r.inputs.get('INPUT_STATE')) ?? 0);
          r.sender.send([tensor('OUTPUT', sum), tensor('OUTPUT_STATE', sum)], { final: true });
        }
        resolve();
      });
    });
  }
  /** Completes the oldest running execution. */
  complete(): void {
    this.pending.shift()?.();
  }
  get running(): number {
    return this.pending.length;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Outcome {
  output?: number;
  outputs?: string[];
  error?: NereidError;
}

class Sender implements ResponseSender {
  done = false;
  constructor(private readonly outcome: Outcome) {}
  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.done) return;
    this.done = options.final;
    this.outcome.output = int32(outputs.find((t) => t.name === 'OUTPUT'));
    this.outcome.outputs = outputs.map((t) => t.name);
  }
  fail(error: NereidError): void {
    if (this.done) return;
    this.done = true;
    this.outcome.error = error;
  }
}

interface Harness {
  readonly scheduler: SequenceBatchScheduler;
  readonly clock: FakeClock;
  readonly instances: FakeInstance[];
  submit(
    id: string,
    seq: bigint | string,
    input: number,
    opts?: { start?: boolean; end?: boolean; signal?: AbortSignal; timeoutUs?: number; batch?: number },
  ): Outcome;
}

function harness(sequenceBatching: string, opts: { instances?: number; maxBatch?: number } = {}): Harness {
  const config = freezeModelConfig(
    normalizeModelConfig(
      parseModelConfigText(
        `name: "m" platform: "onnxruntime_onnx" max_batch_size: ${opts.maxBatch ?? 4}
         input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         sequence_batching { ${sequenceBatching} }`,
        'config.pbtxt',
      ),
    ),
  );
  const clock = new FakeClock();
  const instances = Array.from({ length: opts.instances ?? 1 }, (_, i) => new FakeInstance(`m_${i}`));
  const log = new Logger({}, () => undefined);
  const pool = new InstancePool(instances, new ModelStats('m', '1'), log);
  const scheduler = new SequenceBatchScheduler({ config, pool, log, clock });
  return {
    scheduler,
    clock,
    instances,
    submit(id, seq, input, o = {}) {
      const outcome: Outcome = {};
      const batch = o.batch ?? 1;
      const request: PreparedRequest = {
        id,
        inputs: new Map([['INPUT', { ...tensor('INPUT', input), shape: [batch, 1] }]]),
        outputs: [{ name: 'OUTPUT', classification: 0 }],
        batchSize: batch,
        correlationId: seq,
        flags: (o.start ? SEQUENCE_START : 0) | (o.end ? SEQUENCE_END : 0),
        priority: 0,
        timeoutUs: o.timeoutUs ?? 0,
        parameters: {},
      };
      scheduler.enqueue({
        request,
        sender: new Sender(outcome),
        signal: o.signal ?? new AbortController().signal,
        acceptedAt: clock.now(),
      });
      return outcome;
    },
  };
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

const CONTROLS = `
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]`;
const STATE = `state [ { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [ 1 ] } ]`;

/** The rows of a batch as compact text: id:input(start,end,ready,corrid). */
const rows = (batch: Row[]): string[] =>
  batch.map((r) => `${r.id || 'pad'}:${r.input}(${r.start},${r.end},${r.ready},${r.corrid})`);

test('direct: sequences spread over instances, one slot each; a batch row is its slot, holes padded', async () => {
  const h = harness(CONTROLS, { instances: 2 });
  const [i0, i1] = h.instances;
  h.submit('a1', 1n, 10, { start: true }); // instance 0, slot 0
  h.submit('b1', 2n, 20, { start: true }); // instance 1, slot 0
  assert.deepEqual(rows(i0.batches[0]), ['a1:10(1,0,1,1)']);
  assert.deepEqual(rows(i1.batches[0]), ['b1:20(1,0,1,2)']);
  h.submit('c1', 3n, 30, { start: true }); // instance 0, slot 1: waits for instance 0
  h.submit('a2', 1n, 11); // slot 0 of instance 0 again
  assert.equal(h.scheduler.queued, 2);
  i0.complete();
  await flush();
  assert.deepEqual(rows(i0.batches[1]), ['a2:11(0,0,1,1)', 'c1:30(1,0,1,3)'], 'row = slot');
  i0.complete();
  await flush();
  // Only slot 1 has work now: slot 0 becomes a not-ready padding row with CORRID 0.
  h.submit('c2', 3n, 31, { end: true });
  assert.deepEqual(rows(i0.batches[2]), ['pad:0(0,0,0,0)', 'c2:31(0,1,1,3)']);
  i0.complete();
  i1.complete();
  await flush();
  assert.equal(h.scheduler.queued, 0);
  assert.equal(i0.batches.length, 3);
  assert.equal(i1.batches.length, 1);
});

test('direct: one request per sequence per batch; the next waits for the previous one', async () => {
  const h = harness(CONTROLS);
  const [i0] = h.instances;
  const outcomes = [
    h.submit('a1', 5n, 1, { start: true }),
    h.submit('a2', 5n, 2),
    h.submit('a3', 5n, 3, { end: true }),
  ];
  assert.deepEqual(rows(i0.batches[0]), ['a1:1(1,0,1,5)']);
  for (let i = 0; i < 3; i++) {
    i0.complete();
    await flush();
  }
  assert.deepEqual(i0.batches.map(rows), [['a1:1(1,0,1,5)'], ['a2:2(0,0,1,5)'], ['a3:3(0,1,1,5)']]);
  assert.deepEqual(
    outcomes.map((o) => o.output),
    [1, 2, 3],
  );
});

test('implicit state: zeros at START, then the model’s OUTPUT_STATE; padding rows get zeros', async () => {
  const h = harness(STATE);
  const [i0] = h.instances;
  const runAll = async (): Promise<void> => {
    while (i0.running > 0) {
      i0.complete();
      await flush();
    }
  };
  const a = [h.submit('a1', 'A', 5, { start: true })]; // runs at once
  const b = [h.submit('b1', 'B', 100, { start: true })];
  a.push(h.submit('a2', 'A', 6));
  b.push(h.submit('b2', 'B', 1, { end: true }));
  await runAll();
  a.push(h.submit('a3', 'A', 7, { start: true })); // a restart begins from zero again
  a.push(h.submit('a4', 'A', 1, { end: true }));
  await runAll();
  assert.deepEqual(
    a.map((o) => o.output),
    [5, 11, 7, 8],
  );
  assert.deepEqual(
    b.map((o) => o.output),
    [100, 101],
  );
  const states = i0.batches.map((batch) => batch.map((r) => `${r.id || 'pad'}:${r.state}`));
  assert.deepEqual(states, [['a1:0'], ['a2:5', 'b1:0'], ['pad:0', 'b2:100'], ['a3:0'], ['a4:7']]);
  assert.deepEqual(
    i0.batches[0][0].fetches,
    ['OUTPUT', 'OUTPUT_STATE'],
    'the state output is always fetched',
  );
});

test('backlog: more sequences than slots wait in order; END hands the slot to the oldest waiting one', async () => {
  const h = harness(CONTROLS, { maxBatch: 1 });
  const [i0] = h.instances;
  const a1 = h.submit('a1', 1n, 1, { start: true });
  const b1 = h.submit('b1', 2n, 2, { start: true });
  const c1 = h.submit('c1', 3n, 3, { start: true, end: true });
  const b2 = h.submit('b2', 2n, 4, { end: true }); // b is known (backlogged): no START needed
  i0.complete();
  await flush();
  assert.equal(a1.output, 1);
  assert.equal(i0.running, 0, 'nothing else may use the slot while a is open');
  assert.equal(h.scheduler.queued, 3);
  h.submit('a2', 1n, 5, { end: true });
  for (let i = 0; i < 4; i++) {
    i0.complete();
    await flush();
  }
  assert.deepEqual(
    i0.batches.map((b) => rows(b)[0]),
    ['a1:1(1,0,1,1)', 'a2:5(0,1,1,1)', 'b1:2(1,0,1,2)', 'b2:4(0,1,1,2)', 'c1:3(1,1,1,3)'],
  );
  assert.deepEqual([b1.output, b2.output, c1.output], [2, 4, 3]);
  assert.equal(h.scheduler.queued, 0);
});

test('idle timeout releases the slot; the sequence’s next request needs START again', async () => {
  const h = harness(`max_sequence_idle_microseconds: 100000 ${CONTROLS}`, { maxBatch: 1 });
  const [i0] = h.instances;
  h.submit('a1', 1n, 1, { start: true });
  i0.complete();
  await flush();
  const b1 = h.submit('b1', 2n, 2, { start: true });
  h.clock.advance(99n * MS);
  assert.equal(i0.batches.length, 1, 'a still holds the slot');
  h.clock.advance(2n * MS);
  assert.equal(i0.batches.length, 2, 'a went idle: b takes the slot');
  assert.deepEqual(rows(i0.batches[1]), ['b1:2(1,0,1,2)']);
  i0.complete();
  await flush();
  assert.equal(b1.output, 2);
  const late = h.submit('a2', 1n, 3);
  assert.equal(
    late.error?.message,
    "inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence",
  );
  assert.equal(late.error?.code, 'INVALID_ARG');
});

test('a backlogged sequence whose request times out is rejected as Triton does', () => {
  const h = harness(CONTROLS, { maxBatch: 1 });
  h.submit('a1', 1n, 1, { start: true });
  const b1 = h.submit('b1', 2n, 2, { start: true, timeoutUs: 50_000 });
  const b2 = h.submit('b2', 2n, 3);
  h.clock.advance(60n * MS);
  assert.equal(b1.error?.code, 'UNAVAILABLE');
  assert.equal(b1.error?.message, 'timeout of the corresponding sequence has been expired');
  assert.equal(b2.error?.code, 'UNAVAILABLE');
  assert.equal(h.scheduler.queued, 0);
  assert.match(h.submit('b3', 2n, 4).error!.message, /must specify the START flag/);
});

test('cancelling a queued request ends its whole sequence and frees the slot', async () => {
  const h = harness(CONTROLS, { maxBatch: 1 });
  const [i0] = h.instances;
  const abort = new AbortController();
  h.submit('a1', 1n, 1, { start: true });
  const a2 = h.submit('a2', 1n, 2, { signal: abort.signal });
  const a3 = h.submit('a3', 1n, 3);
  const b1 = h.submit('b1', 2n, 4, { start: true });
  abort.abort();
  assert.equal(a2.error?.code, 'CANCELLED');
  assert.equal(a3.error?.code, 'CANCELLED', 'the rest of the sequence goes with it');
  i0.complete();
  await flush();
  assert.deepEqual(rows(i0.batches[1]), ['b1:4(1,0,1,2)'], 'the backlogged sequence got the slot');
  i0.complete();
  await flush();
  assert.equal(b1.output, 4);
  assert.match(h.submit('a4', 1n, 5).error!.message, /must specify the START flag/);
});

test('Triton’s request checks: correlation id, START, batch size', () => {
  const h = harness(CONTROLS);
  const cases: [Outcome, string][] = [
    [
      h.submit('x', 0n, 1, { start: true }),
      "inference request to model 'm' must specify a non-zero or non-empty correlation ID",
    ],
    [
      h.submit('x', '', 1, { start: true }),
      "inference request to model 'm' must specify a non-zero or non-empty correlation ID",
    ],
    [
      h.submit('x', 'abc', 1),
      "inference request for sequence abc to model 'm' must specify the START flag on the first request of the sequence",
    ],
    [
      h.submit('x', 9n, 1, { start: true, batch: 2 }),
      "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher",
    ],
  ];
  for (const [outcome, message] of cases) {
    assert.equal(outcome.error?.code, 'INVALID_ARG');
    assert.equal(outcome.error?.message, message);
  }
  assert.equal(h.instances[0].batches.length, 0);
  assert.equal(h.scheduler.queued, 0);
});

test('direct with minimum_slot_utilization and a queue delay waits for slots or for the delay', async () => {
  const h = harness(
    `direct { max_queue_delay_microseconds: 10000 minimum_slot_utilization: 0.5 } ${CONTROLS}`,
  );
  const [i0] = h.instances;
  h.submit('a1', 1n, 1, { start: true });
  assert.equal(i0.batches.length, 0, '1 of 4 slots is below 0.5');
  h.submit('b1', 2n, 2, { start: true });
  assert.deepEqual(i0.batches.map(rows), [['a1:1(1,0,1,1)', 'b1:2(1,0,1,2)']], '2 of 4 is enough');
  i0.complete();
  await flush();
  h.submit('a2', 1n, 3);
  h.clock.advance(9n * MS);
  assert.equal(i0.batches.length, 1);
  h.clock.advance(2n * MS);
  assert.deepEqual(rows(i0.batches[1]), ['a2:3(0,0,1,1)'], 'sent after the delay');
});

test('oldest: batches the next request of several sequences, no padding, one in flight per sequence', async () => {
  const h = harness(
    `oldest { max_candidate_sequences: 16 preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 5000 } ${CONTROLS}`,
    { maxBatch: 4 },
  );
  const [i0] = h.instances;
  h.submit('a1', 1n, 1, { start: true });
  h.submit('a2', 1n, 2);
  h.submit('b1', 2n, 3, { start: true });
  assert.equal(i0.batches.length, 0, 'two candidates wait for the preferred size 3');
  h.submit('c1', 3n, 4, { start: true, end: true });
  assert.deepEqual(rows(i0.batches[0]), ['a1:1(1,0,1,1)', 'b1:3(1,0,1,2)', 'c1:4(1,1,1,3)']);
  i0.complete();
  await flush();
  assert.equal(i0.batches.length, 1, 'a2 alone waits for the queue delay');
  h.clock.advance(5n * MS);
  assert.deepEqual(rows(i0.batches[1]), ['a2:2(0,0,1,1)']);
  i0.complete();
  await flush();
  assert.equal(h.scheduler.queued, 0);
});

test('oldest: sequences bind to slots of several instances; each instance batches its own', () => {
  const h = harness(`oldest { max_candidate_sequences: 4 max_queue_delay_microseconds: 0 } ${CONTROLS}`, {
    instances: 2,
  });
  const [i0, i1] = h.instances;
  for (let k = 1; k <= 4; k++) h.submit(`s${k}`, BigInt(k), k, { start: true });
  // s1 → instance 0 (runs at once); s2 → instance 1 (runs at once); s3 → instance 0; s4 → instance 1.
  assert.deepEqual([...i0.batches, ...i1.batches].map(rows), [['s1:1(1,0,1,1)'], ['s2:2(1,0,1,2)']]);
  i0.complete();
  i1.complete();
  return flush().then(() => {
    assert.deepEqual(rows(i0.batches[1]), ['s3:3(1,0,1,3)']);
    assert.deepEqual(rows(i1.batches[1]), ['s4:4(1,0,1,4)']);
  });
});

test('drain waits for queued requests and refuses new ones', async () => {
  const h = harness(CONTROLS);
  const [i0] = h.instances;
  h.submit('a1', 1n, 1, { start: true });
  const a2 = h.submit('a2', 1n, 2);
  let drained = false;
  const draining = h.scheduler.drain().then(() => (drained = true));
  assert.throws(() => h.submit('b1', 2n, 1, { start: true }), { code: 'UNAVAILABLE' });
  i0.complete();
  await flush();
  assert.equal(drained, false, 'a2 is running');
  i0.complete();
  await draining;
  assert.equal(a2.output, 2);
});
