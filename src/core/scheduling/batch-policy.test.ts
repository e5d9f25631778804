import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decideBatch,
  makeBatchPolicyConfig,
  type BatchCandidate,
  type BatchDecision,
} from './batch-policy.js';

const US = 1000n;

interface Row {
  readonly name: string;
  /** max_batch_size, preferred_batch_size, max_queue_delay_microseconds */
  readonly config: [number, number[], number];
  /** batch sizes, or [batchSize, key] / [batchSize, key, enqueued µs] */
  readonly queue: readonly (number | [number, string] | [number, string, number])[];
  /** µs since the first request was queued (requests are queued at 0 µs unless given) */
  readonly now: number;
  readonly expect: BatchDecision;
}

const send = (count: number, size: number): BatchDecision => ({ kind: 'send', count, size });
const waitUntil = (us: number): BatchDecision => ({ kind: 'wait', until: BigInt(us) * US });

const ROWS: readonly Row[] = [
  { name: 'empty queue', config: [8, [], 0], queue: [], now: 0, expect: { kind: 'idle' } },
  // max_queue_delay 0: whatever is queued goes when an instance is free, up to the largest preferred size.
  { name: 'no delay, one request', config: [8, [], 0], queue: [1], now: 0, expect: send(1, 1) },
  { name: 'no delay, takes all that fits', config: [8, [], 0], queue: [1, 1, 1], now: 0, expect: send(3, 3) },
  {
    name: 'no delay, stops at max_batch_size',
    config: [8, [], 0],
    queue: [3, 3, 3, 3],
    now: 0,
    expect: send(2, 6),
  },
  {
    name: 'max_batch_size reached exactly',
    config: [8, [], 0],
    queue: [4, 4, 1],
    now: 0,
    expect: send(2, 8),
  },
  {
    name: 'one request larger than every preferred size runs alone',
    config: [16, [4], 0],
    queue: [10, 1],
    now: 0,
    expect: send(1, 10),
  },
  // preferred sizes: the largest one that can be formed now wins.
  {
    name: 'largest preferred size that can be formed',
    config: [16, [2, 4, 8], 1000],
    queue: [1, 1, 1, 1, 1],
    now: 0,
    expect: send(4, 4),
  },
  {
    name: 'preferred 8 over 4 when both can form',
    config: [16, [4, 8], 1000],
    queue: [4, 4, 4],
    now: 0,
    expect: send(2, 8),
  },
  {
    name: 'no delay: stop before going past the largest preferred size',
    config: [16, [4], 0],
    queue: [3, 3],
    now: 0,
    expect: send(1, 3),
  },
  {
    name: 'no delay, preferred not reachable: send what is there',
    config: [16, [4, 8], 0],
    queue: [1, 1, 1],
    now: 0,
    expect: send(3, 3),
  },
  // delay: wait for a preferred size until the oldest request has waited max_queue_delay.
  {
    name: 'delay: wait for more',
    config: [8, [4], 500],
    queue: [1, 1],
    now: 100,
    expect: waitUntil(500),
  },
  {
    name: 'delay measured from the oldest request',
    config: [8, [4], 500],
    queue: [
      [1, '', 200],
      [1, '', 300],
    ],
    now: 350,
    expect: waitUntil(700),
  },
  {
    name: 'delay expired: send what is there',
    config: [8, [4], 500],
    queue: [1, 1],
    now: 500,
    expect: send(2, 2),
  },
  {
    name: 'delay expired: everything that fits max_batch_size, past the preferred size',
    config: [8, [4], 500],
    queue: [1, 1, 1, 1, 1, 1],
    now: 600,
    expect: send(6, 6),
  },
  {
    name: 'delay not expired: the preferred size now, the rest later',
    config: [8, [4], 500],
    queue: [1, 1, 1, 1, 1, 1],
    now: 10,
    expect: send(4, 4),
  },
  {
    name: 'delay: a full batch does not wait',
    config: [4, [4], 1_000_000],
    queue: [2, 2],
    now: 0,
    expect: send(2, 4),
  },
  {
    name: 'delay: cannot grow past max_batch_size, so send now',
    config: [4, [4], 1_000_000],
    queue: [3, 3],
    now: 0,
    expect: send(1, 3),
  },
  {
    name: 'delay: past the largest preferred size without hitting one sends what was pending',
    config: [8, [4], 1_000_000],
    queue: [3, 3],
    now: 0,
    expect: send(1, 3),
  },
  // shapes: a request whose key differs ends the batch.
  {
    name: 'different shape ends the batch',
    config: [8, [], 1_000_000],
    queue: [
      [1, 'a'],
      [1, 'a'],
      [1, 'b'],
      [1, 'a'],
    ],
    now: 0,
    expect: send(2, 2),
  },
  {
    name: 'first request alone when the second differs',
    config: [8, [4], 1_000_000],
    queue: [
      [1, 'a'],
      [1, 'b'],
    ],
    now: 0,
    expect: send(1, 1),
  },
  {
    name: 'same key batches',
    config: [8, [3], 1_000_000],
    queue: [
      [1, 'x'],
      [1, 'x'],
      [1, 'x'],
    ],
    now: 0,
    expect: send(3, 3),
  },
  // max_batch_size 0: each request alone.
  {
    name: 'no batch dimension: one at a time',
    config: [0, [], 0],
    queue: [1, 1, 1],
    now: 0,
    expect: send(1, 1),
  },
  {
    name: 'no batch dimension with a delay: still one at a time, at once',
    config: [0, [], 1_000_000],
    queue: [1, 1],
    now: 0,
    expect: send(1, 1),
  },
];

for (const row of ROWS) {
  test(`batch policy: ${row.name}`, () => {
    const [max, preferred, delay] = row.config;
    const queue: BatchCandidate[] = row.queue.map((q) => {
      const [batchSize, key, at] = typeof q === 'number' ? [q, '', 0] : [q[0], q[1], q[2] ?? 0];
      return { batchSize, key, enqueuedAt: BigInt(at) * US + 1n };
    });
    const decision = decideBatch(
      queue,
      makeBatchPolicyConfig(max, preferred, delay),
      BigInt(row.now) * US + 1n,
    );
    const expected = row.expect.kind === 'wait' ? { kind: 'wait', until: row.expect.until + 1n } : row.expect;
    assert.deepEqual(decision, expected);
    if (decision.kind === 'send') {
      const size = queue.slice(0, decision.count).reduce((s, c) => s + c.batchSize, 0);
      assert.equal(decision.size, size, 'size is the sum of the batch sizes taken');
      assert.ok(size <= Math.max(1, max) || decision.count === 1, 'max_batch_size is never exceeded');
    }
  });
}

test('batch policy: reads only as much of the queue as can matter', () => {
  let read = 0;
  function* endless(): Generator<BatchCandidate> {
    for (;;) {
      read++;
      yield { batchSize: 1, key: '', enqueuedAt: 1n };
    }
  }
  const decision = decideBatch(endless(), makeBatchPolicyConfig(4, [], 0), 1n);
  assert.deepEqual(decision, send(4, 4));
  assert.equal(read, 5);
});

test('batch policy: preferred sizes above max_batch_size are ignored, none means max_batch_size', () => {
  const cfg = makeBatchPolicyConfig(4, [2, 16], 0);
  assert.deepEqual([...cfg.preferredBatchSizes], [2]);
  assert.deepEqual([...makeBatchPolicyConfig(4, [], 7).preferredBatchSizes], [4]);
  assert.equal(makeBatchPolicyConfig(4, [], 7).maxQueueDelayNs, 7000n);
});
