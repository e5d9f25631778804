import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Limiter, NameLocks } from './locks.js';
import { deferred, flush } from './repository.testkit.js';

void test('overlapping name sets run one after the other, in arrival order', async () => {
  const locks = new NameLocks();
  const order: string[] = [];
  const r1 = await locks.acquire(['a', 'b']);
  const p2 = locks.acquire(['b']).then((r) => {
    order.push('second');
    return r;
  });
  const p3 = locks.acquire(['a', 'c']).then((r) => {
    order.push('third');
    return r;
  });
  const p4 = locks.acquire(['d']).then((r) => {
    order.push('disjoint');
    return r;
  });
  await flush();
  assert.deepEqual(order, ['disjoint'], 'only the unrelated operation ran');
  r1();
  await flush();
  assert.deepEqual(order, ['disjoint', 'second', 'third']);
  (await p2)();
  (await p3)();
  (await p4)();
  assert.equal(locks.pending, 0);
});

void test('a later waiter does not overtake an earlier one on the same name', async () => {
  const locks = new NameLocks();
  const order: string[] = [];
  const r1 = await locks.acquire(['a']);
  const p2 = locks.acquire(['a', 'b']).then((r) => (order.push('ab'), r));
  const p3 = locks.acquire(['b']).then((r) => (order.push('b'), r));
  await flush();
  assert.deepEqual(order, [], "'b' waits behind the earlier 'a,b' request");
  r1();
  (await p2)();
  (await p3)();
  assert.deepEqual(order, ['ab', 'b']);
});

void test('null locks everything', async () => {
  const locks = new NameLocks();
  const order: string[] = [];
  const r1 = await locks.acquire(['x']);
  const all = locks.acquire(null).then((r) => (order.push('all'), r));
  const later = locks.acquire(['y']).then((r) => (order.push('y'), r));
  await flush();
  assert.deepEqual(order, []);
  r1();
  (await all)();
  (await later)();
  assert.deepEqual(order, ['all', 'y']);
});

void test('limiter bounds concurrency', async () => {
  const limiter = new Limiter(2);
  let active = 0;
  let max = 0;
  const gates = [deferred(), deferred(), deferred(), deferred()];
  const runs = gates.map((g) =>
    limiter.run(async () => {
      active++;
      max = Math.max(max, active);
      await g.promise;
      active--;
    }),
  );
  await flush();
  assert.equal(active, 2);
  for (const g of gates) g.resolve();
  await Promise.all(runs);
  assert.equal(max, 2);
});
