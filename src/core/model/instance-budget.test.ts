import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NereidError } from '../../common/errors.js';
import { InstanceBudget, defaultInstanceLimits, instancesPerVersion } from './instance-budget.js';

const LIMITS = { perModel: 8, total: 20, processPerModel: 4, processTotal: 6 };
const refused = (pattern: RegExp) => (e: NereidError) => e.code === 'INVALID_ARG' && pattern.test(e.message);

void test('defaults scale with CPUs and memory, with floors', () => {
  const small = defaultInstanceLimits(2, 4 * 1024 ** 3);
  assert.deepEqual(small, { perModel: 32, total: 128, processPerModel: 16, processTotal: 64 });
  const big = defaultInstanceLimits(64, 256 * 1024 ** 3);
  assert.deepEqual(big, { perModel: 256, total: 8192, processPerModel: 128, processTotal: 2048 });
});

void test('per-model limits refuse a whole load, counting every version', () => {
  const b = new InstanceBudget(LIMITS);
  assert.throws(
    () => b.admit('m', 1_000_000, 1, false),
    refused(/1000000 instances.*--max-instances-per-model/),
  );
  assert.throws(() => b.admit('m', 3, 3, false), refused(/9 instances \(3 for each of 3 versions\)/));
  b.admit('m', 8, 1, false);
  assert.throws(() => b.admit('p', 5, 1, true), refused(/--max-process-instances-per-model/));
  assert.throws(() => b.reserve('m', 9, false), refused(/--max-instances-per-model/));
  assert.deepEqual(b.inUse, { instances: 0, processes: 0 });
});

void test('totals count every reserved instance until its lease is released', () => {
  const b = new InstanceBudget(LIMITS);
  const a = b.reserve('a', 8, false);
  const c = b.reserve('c', 8, false);
  assert.throws(
    () => b.reserve('d', 5, false),
    refused(/runs 16 of at most 20 instances \(--max-instances\)/),
  );
  assert.throws(() => b.admit('d', 5, 1, false), refused(/--max-instances/));
  const p = b.reserve('p', 4, true);
  assert.deepEqual(b.inUse, { instances: 20, processes: 4 });
  a.release();
  a.release(); // idempotent
  assert.throws(() => b.reserve('q', 3, true), refused(/runs 4 of at most 6 instance processes/));
  const q = b.reserve('q', 2, true);
  assert.deepEqual(b.inUse, { instances: 14, processes: 6 });
  for (const l of [c, p, q]) l.release();
  assert.deepEqual(b.inUse, { instances: 0, processes: 0 });
});

void test('passive groups start no instances', () => {
  assert.equal(instancesPerVersion([{ count: 2 }, { count: 3, passive: true }, { count: 1 }]), 3);
});
