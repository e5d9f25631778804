import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatBytes, parseSize, planEviction, type Resident } from './eviction.js';

const r = (name: string, lastUsed: number, bytes = 10, busy = false, pinned = false): Resident => ({
  name,
  lastUsed,
  bytes,
  busy,
  pinned,
});

void test('under the limits nothing is evicted', () => {
  assert.deepEqual(planEviction([r('a', 1), r('b', 2)], { maxModels: 3, budgetBytes: 0 }, 10), {
    fits: true,
    victims: [],
  });
});

void test('the count limit evicts the least recently used idle model', () => {
  const plan = planEviction([r('a', 5), r('b', 1), r('c', 3)], { maxModels: 3, budgetBytes: 0 }, 10);
  assert.deepEqual(plan, { fits: true, victims: ['b'] });
});

void test('busy and pinned models are never chosen', () => {
  const plan = planEviction(
    [r('old-busy', 1, 10, true), r('old-pinned', 2, 10, false, true), r('newer', 9)],
    { maxModels: 3, budgetBytes: 0 },
    10,
  );
  assert.deepEqual(plan, { fits: true, victims: ['newer'] });
});

void test('the budget evicts by bytes, oldest first, until the newcomer fits', () => {
  const plan = planEviction(
    [r('a', 1, 40), r('b', 2, 40), r('c', 3, 40)],
    { maxModels: 0, budgetBytes: 100 },
    50,
  );
  assert.deepEqual(plan, { fits: true, victims: ['a', 'b'] });
});

void test('loads in progress count against the limits', () => {
  const plan = planEviction([r('a', 1), r('b', 2)], { maxModels: 3, budgetBytes: 0 }, 10, 1, 10);
  assert.deepEqual(plan, { fits: true, victims: ['a'] });
});

void test('when nothing can go, nothing is evicted and the reason says why', () => {
  const plan = planEviction(
    [r('a', 1, 10, true), r('b', 2, 10, false, true)],
    { maxModels: 2, budgetBytes: 0 },
    10,
  );
  assert.equal(plan.fits, false);
  assert.match(
    plan.fits ? '' : plan.reason,
    /2 model\(s\) loaded and 0 loading \(--max-loaded-models=2\), and none can be unloaded to make room: 1 busy, 1 pinned/,
  );
});

void test('a single model larger than the budget still loads when it would be alone', () => {
  assert.deepEqual(planEviction([], { maxModels: 0, budgetBytes: 100 }, 500), { fits: true, victims: [] });
  assert.deepEqual(planEviction([r('a', 1, 10)], { maxModels: 0, budgetBytes: 100 }, 500), {
    fits: true,
    victims: ['a'],
  });
});

void test('sizes as --model-memory-budget takes them', () => {
  assert.equal(parseSize('1048576'), 1048576);
  assert.equal(parseSize('512MB'), 512e6);
  assert.equal(parseSize('2GB'), 2e9);
  assert.equal(parseSize('1.5GiB'), 1.5 * 1024 ** 3);
  assert.equal(parseSize('64kib'), 65536);
  assert.equal(parseSize('12 mb'), 12e6);
  assert.equal(parseSize('lots'), undefined);
  assert.equal(parseSize('-1GB'), undefined);
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(100), '100 B');
});
