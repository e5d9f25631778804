// Iterative sequences (`sequence_batching { iterative_sequence: true }`): requests without a correlation id
// become sequences of their own, a backend may hand a request back (BackendRequest.reschedule) and it runs
// again on the same slot with its flags cleared, the sequence ends with the request, and every case where
// Triton offers no rescheduling leaves the hook out.
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

const int32 = (t: Tensor | undefined): number | undefined => t?.data.readInt32LE(0);
const tensor = (name: string, v: number): Tensor => {
  const data = Buffer.alloc(4);
  data.writeInt32LE(v);
  return { name, datatype: 'INT32', shape: [1, 1], data };
};

/** What one execution saw of one request. */
interface Seen {
  id: string;
  corrid: string;
  flags: number;
  start: number | undefined;
  canReschedule: boolean;
}

/**
 * Triton's iterative_sequence test backend in miniature: INPUT says how many responses a request gets;
 * each execution sends one (the remaining count) and hands the request back until none remain. Executions
 * finish when the test says so (`complete`), or at once with `auto`.
 */
class CountdownInstance implements InstanceHandle {
  readonly batches: Seen[][] = [];
  private readonly left = new Map<string, number>();
  private readonly pending: (() => void)[] = [];
  auto = true;
  /** The next execution rejects after handing its requests back. */
  rejectNext = false;
  constructor(readonly name: string) {}

  execute(requests: readonly BackendRequest[]): Promise<void> {
    this.batches.push(
      requests.map((r) => ({
        id: r.id,
        corrid: String(r.correlationId),
        flags: r.flags,
        start: int32(r.inputs.get('START')),
        canReschedule: r.reschedule !== undefined,
      })),
    );
    const run = (): void => {
      for (const r of requests) {
        const key = String(r.correlationId);
        const left =
          ((r.flags & SEQUENCE_START) !== 0 ? int32(r.inputs.get('INPUT'))! : this.left.get(key)!) - 1;
        this.left.set(key, left);
        r.sender.send([tensor('OUTPUT', left)], { final: left <= 0 || !r.reschedule });
        if (left > 0) r.reschedule?.();
      }
    };
    if (this.rejectNext) {
      this.rejectNext = false;
      run();
      return Promise.reject(new Error('the model failed after handing its request back'));
    }
    if (this.auto) {
      run();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.pending.push(() => {
        run();
        resolve();
      });
    });
  }
  complete(): void {
    this.pending.shift()?.();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Outcome {
  outputs: number[];
  final: boolean;
  error?: NereidError;
}

class Sender implements ResponseSender {
  done = false;
  constructor(private readonly outcome: Outcome) {}
  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.done) return;
    this.done = options.final;
    this.outcome.final = options.final;
    this.outcome.outputs.push(int32(outputs.find((t) => t.name === 'OUTPUT'))!);
  }
  fail(error: NereidError): void {
    if (this.done) return;
    this.done = true;
    this.outcome.error = error;
  }
}

function harness(sequenceBatching: string, opts: { maxBatch?: number; instances?: number } = {}) {
  const config = freezeModelConfig(
    normalizeModelConfig(
      parseModelConfigText(
        `name: "it" backend: "python" max_batch_size: ${opts.maxBatch ?? 0}
         input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         sequence_batching { ${sequenceBatching}
           control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }`,
        'config.pbtxt',
      ),
    ),
  );
  const clock = new FakeClock();
  const instances = Array.from({ length: opts.instances ?? 1 }, (_, i) => new CountdownInstance(`it_${i}`));
  const log = new Logger({}, () => undefined);
  const pool = new InstancePool(instances, new ModelStats('it', '1'), log);
  const scheduler = new SequenceBatchScheduler({ config, pool, log, clock });
  const submit = (
    id: string,
    count: number,
    o: { seq?: bigint; start?: boolean; end?: boolean } = {},
  ): Outcome => {
    const outcome: Outcome = { outputs: [], final: false };
    const request: PreparedRequest = {
      id,
      inputs: new Map([['INPUT', tensor('INPUT', count)]]),
      outputs: [{ name: 'OUTPUT', classification: 0 }],
      batchSize: 1,
      correlationId: o.seq ?? 0n,
      flags: (o.start ? SEQUENCE_START : 0) | (o.end ? SEQUENCE_END : 0),
      priority: 0,
      timeoutUs: 0,
      parameters: {},
    };
    scheduler.enqueue({
      request,
      sender: new Sender(outcome),
      signal: new AbortController().signal,
      acceptedAt: clock.now(),
    });
    return outcome;
  };
  return { scheduler, clock, instances, submit };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

test('iterative: a request without a correlation id is its own sequence and runs until it ends', async () => {
  const h = harness('iterative_sequence: true');
  const [i0] = h.instances;
  const a = h.submit('a', 3);
  const b = h.submit('b', 2);
  await flush();
  assert.deepEqual(a, { outputs: [2, 1, 0], final: true });
  assert.deepEqual(b, { outputs: [1, 0], final: true });
  // One slot (max_batch_size 0): b waited until a's sequence ended, though a went back to the queue twice.
  assert.deepEqual(
    i0.batches.map((batch) => batch.map((s) => `${s.id}:${s.corrid}:${s.flags}:${s.start}`)),
    [['a:1:1:1'], ['a:1:0:0'], ['a:1:0:0'], ['b:2:1:1'], ['b:2:0:0']],
    'own ids from 1, START first, then neither START nor END',
  );
  assert.ok(i0.batches.flat().every((s) => s.canReschedule));
  assert.equal(h.scheduler.queued, 0);
  await h.scheduler.drain();
});

test('iterative: sequences share a batch, each keeps its slot while it comes back', async () => {
  const h = harness('iterative_sequence: true', { maxBatch: 2 });
  const [i0] = h.instances;
  i0.auto = false;
  const a = h.submit('a', 2);
  h.submit('b', 1);
  const c = h.submit('c', 1);
  assert.deepEqual(
    i0.batches.map((batch) => batch.map((s) => s.id)),
    [['a']],
  );
  i0.complete();
  await flush();
  // a came back into slot 0; b took slot 1 meanwhile; c waits for a free slot.
  assert.deepEqual(
    i0.batches.map((batch) => batch.map((s) => s.id)),
    [['a'], ['a', 'b']],
  );
  i0.complete();
  await flush();
  assert.deepEqual(a.outputs, [1, 0]);
  assert.deepEqual(
    i0.batches.map((batch) => batch.map((s) => s.id)),
    [['a'], ['a', 'b'], ['c']],
  );
  i0.complete();
  await flush();
  assert.deepEqual(c, { outputs: [0], final: true });
});

test('iterative: a client correlation id with START works too; END and plain sequences offer no reschedule', async () => {
  const h = harness('iterative_sequence: true');
  const [i0] = h.instances;
  const a = h.submit('a', 2, { seq: 7n, start: true });
  const b = h.submit('b', 2, { seq: 8n, start: true, end: true });
  await flush();
  assert.deepEqual(a, { outputs: [1, 0], final: true });
  assert.deepEqual(b, { outputs: [1], final: true }, 'no hook: the model ends the request');
  assert.deepEqual(
    i0.batches.flat().map((s) => `${s.id}:${s.corrid}:${s.canReschedule}`),
    ['a:7:true', 'a:7:true', 'b:8:false'],
  );
  // The sequence ended with its request: another request of it needs START again.
  const late = h.submit('late', 1, { seq: 7n });
  assert.match(late.error?.message ?? '', /must specify the START flag on the first request of the sequence/);

  const plain = harness('');
  const p = plain.submit('p', 3, { seq: 1n, start: true });
  await flush();
  assert.equal(plain.instances[0].batches[0][0].canReschedule, false);
  assert.deepEqual(p, { outputs: [2], final: true });
  const none = plain.submit('none', 1);
  assert.match(none.error?.message ?? '', /must specify a non-zero or non-empty correlation ID/);
});

test('iterative: a sequence that went idle while its request ran fails the request handed back', async () => {
  const h = harness('iterative_sequence: true max_sequence_idle_microseconds: 5000');
  const [i0] = h.instances;
  i0.auto = false;
  const a = h.submit('a', 3);
  h.clock.advance(10n * MS);
  i0.complete();
  await flush();
  assert.deepEqual(a.outputs, [2]);
  assert.match(
    a.error?.message ?? '',
    /inference request for sequence 1 to model 'it' must specify the START flag on the first request of the sequence/,
  );
  const b = h.submit('b', 1);
  await flush();
  i0.complete();
  await flush();
  assert.deepEqual(b, { outputs: [0], final: true }, 'the slot was released');
});

test('iterative: an execution that fails after handing a request back fails it instead', async () => {
  const h = harness('iterative_sequence: true');
  const [i0] = h.instances;
  i0.rejectNext = true;
  const a = h.submit('a', 3);
  await flush();
  assert.deepEqual(a.outputs, [2]);
  assert.match(a.error?.message ?? '', /failed after handing its request back/);
  assert.equal(i0.batches.length, 1);
  const b = h.submit('b', 1);
  await flush();
  assert.deepEqual(b, { outputs: [0], final: true });
});

test('iterative: unloading waits for a request that keeps coming back', async () => {
  const h = harness('iterative_sequence: true');
  const [i0] = h.instances;
  i0.auto = false;
  const a = h.submit('a', 3);
  let drained = false;
  const draining = h.scheduler.drain().then(() => (drained = true));
  for (let k = 0; k < 3; k++) {
    assert.equal(drained, false);
    i0.complete();
    await flush();
  }
  await draining;
  assert.deepEqual(a, { outputs: [2, 1, 0], final: true });
});
