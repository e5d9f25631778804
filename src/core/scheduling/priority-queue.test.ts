import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import type { ModelQueuePolicy } from '../../model-config/model-config.js';
import { PriorityQueue, priorityQueueConfig, type PriorityQueueConfig } from './priority-queue.js';

const MS = 1_000_000n;

function policy(p: Partial<ModelQueuePolicy> = {}): ModelQueuePolicy {
  return {
    timeout_action: 'REJECT',
    default_timeout_microseconds: 0,
    allow_timeout_override: false,
    max_queue_size: 0,
    ...p,
  };
}

function queue(cfg: Partial<PriorityQueueConfig> = {}): PriorityQueue<string> {
  return new PriorityQueue<string>({
    priorityLevels: 0,
    defaultPriorityLevel: 0,
    defaultPolicy: policy(),
    policies: new Map(),
    ...cfg,
  });
}

const order = (q: PriorityQueue<string>): string[] => [...q.entries()].map((e) => e.value);

test('priority queue: one FIFO without priority levels; priorities are ignored', () => {
  const q = queue();
  q.push('a', 0, 0, 0n);
  q.push('b', 3, 0, 0n);
  q.push('c', 1, 0, 0n);
  assert.deepEqual(order(q), ['a', 'b', 'c']);
  assert.equal(q.size, 3);
  assert.deepEqual(
    q.shift(2).map((e) => e.value),
    ['a', 'b'],
  );
  assert.deepEqual(order(q), ['c']);
  assert.equal(q.size, 1);
});

test('priority queue: level 1 first; 0 and out-of-range priorities use the default level', () => {
  const q = queue({ priorityLevels: 3, defaultPriorityLevel: 2 });
  assert.equal(q.levelOf(0), 2);
  assert.equal(q.levelOf(4), 2);
  assert.equal(q.levelOf(99), 2);
  assert.equal(q.levelOf(1), 1);
  assert.equal(q.levelOf(3), 3);
  q.push('low', 3, 0, 0n);
  q.push('default-1', 0, 0, 0n);
  q.push('high', 1, 0, 0n);
  q.push('default-2', 7, 0, 0n);
  assert.deepEqual(order(q), ['high', 'default-1', 'default-2', 'low']);
  assert.deepEqual(
    q.shift(3).map((e) => e.value),
    ['high', 'default-1', 'default-2'],
  );
  assert.deepEqual(order(q), ['low']);
});

test('priority queue: max_queue_size per level refuses with UNAVAILABLE "Exceeds maximum queue size"', () => {
  const q = queue({
    priorityLevels: 2,
    defaultPriorityLevel: 2,
    defaultPolicy: policy({ max_queue_size: 1 }),
    policies: new Map([[1, policy({ max_queue_size: 2 })]]),
  });
  q.push('d1', 2, 0, 0n);
  assert.throws(
    () => q.push('d2', 2, 0, 0n),
    (e: unknown) =>
      e instanceof NereidError && e.code === 'UNAVAILABLE' && e.message === 'Exceeds maximum queue size',
  );
  q.push('h1', 1, 0, 0n);
  q.push('h2', 1, 0, 0n);
  assert.throws(() => q.push('h3', 1, 0, 0n), /Exceeds maximum queue size/);
  assert.equal(q.size, 3);
  // Room again once one leaves.
  q.shift(1);
  q.push('h3', 1, 0, 0n);
});

test('priority queue: REJECT takes expired requests out at once; others stay', () => {
  const q = queue({ defaultPolicy: policy({ default_timeout_microseconds: 1000 }) });
  q.push('a', 0, 0, 0n);
  q.push('b', 0, 0, 1n * MS);
  assert.equal(q.nextDeadline(), 1n * MS);
  assert.deepEqual(q.expire(1n * MS), [], 'a deadline is passed only after it');
  assert.deepEqual(q.expire(1n * MS + 1n), ['a']);
  assert.deepEqual(order(q), ['b']);
  assert.equal(q.size, 1);
  assert.equal(q.nextDeadline(), 2n * MS);
  assert.deepEqual(q.expire(5n * MS), ['b']);
  assert.equal(q.size, 0);
  assert.equal(q.nextDeadline(), undefined);
});

test('priority queue: DELAY moves expired requests behind the waiting ones of their level', () => {
  const q = queue({
    priorityLevels: 2,
    defaultPriorityLevel: 2,
    defaultPolicy: policy({ timeout_action: 'DELAY', default_timeout_microseconds: 1000 }),
  });
  q.push('old', 2, 0, 0n);
  q.push('high', 1, 0, 2n * MS);
  q.push('new', 2, 0, 2n * MS);
  assert.deepEqual(q.expire(2n * MS), [], 'delayed, not rejected');
  assert.deepEqual(order(q), ['high', 'new', 'old']);
  assert.equal(q.size, 3, 'delayed requests still count');
  const old = [...q.entries()][2];
  assert.equal(old.delayed, true);
  assert.equal(old.deadline, 0n, 'a delayed request has no further deadline');
  assert.equal(q.nextDeadline(), 3n * MS);
});

test('priority queue: timeout override only shortens, and only when allowed', () => {
  const allowed = queue({
    defaultPolicy: policy({ default_timeout_microseconds: 1000, allow_timeout_override: true }),
  });
  assert.equal(allowed.push('shorter', 0, 100, 0n).deadline, 100_000n);
  assert.equal(allowed.push('longer', 0, 5000, 0n).deadline, 1n * MS);
  assert.equal(allowed.push('none', 0, 0, 0n).deadline, 1n * MS);
  const refused = queue({ defaultPolicy: policy({ default_timeout_microseconds: 1000 }) });
  assert.equal(refused.push('x', 0, 100, 0n).deadline, 1n * MS);
  // As in Triton, an override cannot add a timeout to a policy without one.
  const noDefault = queue({ defaultPolicy: policy({ allow_timeout_override: true }) });
  assert.equal(noDefault.push('x', 0, 100, 0n).deadline, 0n);
});

test('priority queue: remove() takes a cancelled entry out, once', () => {
  const q = queue({ defaultPolicy: policy({ default_timeout_microseconds: 1000 }) });
  const a = q.push('a', 0, 0, 0n);
  q.push('b', 0, 0, 0n);
  assert.equal(q.remove(a), true);
  assert.equal(q.remove(a), false);
  assert.deepEqual(order(q), ['b']);
  assert.equal(q.size, 1);
  assert.deepEqual(q.expire(10n * MS), ['b']);
});

test('priority queue: shift() crosses levels and the delayed part in order', () => {
  const q = queue({
    priorityLevels: 2,
    defaultPriorityLevel: 1,
    defaultPolicy: policy({ timeout_action: 'DELAY', default_timeout_microseconds: 1 }),
  });
  q.push('a', 1, 0, 0n);
  q.push('b', 1, 0, 10n * MS);
  q.push('c', 2, 0, 10n * MS);
  q.expire(5n * MS); // 'a' is delayed behind 'b'
  assert.deepEqual(
    q.shift(2).map((e) => e.value),
    ['b', 'a'],
  );
  assert.deepEqual(
    q.shift(5).map((e) => e.value),
    ['c'],
  );
  assert.equal(q.size, 0);
  assert.deepEqual(q.clear(), []);
});

test('priority queue: config from dynamic_batching, default policy when none is written', () => {
  const cfg = priorityQueueConfig({
    preferred_batch_size: [],
    max_queue_delay_microseconds: 0,
    preserve_ordering: false,
    priority_levels: 3,
    default_priority_level: 3,
    priority_queue_policy: { '1': policy({ max_queue_size: 4 }) },
  });
  assert.equal(cfg.defaultPolicy.timeout_action, 'REJECT');
  assert.equal(cfg.defaultPolicy.max_queue_size, 0);
  assert.equal(cfg.policies.get(1)?.max_queue_size, 4);
  const q = new PriorityQueue<string>(cfg);
  q.push('h', 1, 0, 0n);
  q.push('h', 1, 0, 0n);
  q.push('h', 1, 0, 0n);
  q.push('h', 1, 0, 0n);
  assert.throws(() => q.push('h', 1, 0, 0n), /Exceeds maximum queue size/);
  q.push('d', 0, 0, 0n); // level 3 uses the unlimited default policy
});
