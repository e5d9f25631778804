import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FreeSlots, type SlotRef } from './slots.js';

const text = (r: SlotRef | undefined): string => (r ? `${r.instance}/${r.slot}` : 'none');

test('free slots: lowest slot first, spread over instances, then none', () => {
  const free = new FreeSlots(2, 3);
  assert.equal(free.size, 6);
  const got = Array.from({ length: 7 }, () => text(free.acquire()));
  assert.deepEqual(got, ['0/0', '1/0', '0/1', '1/1', '0/2', '1/2', 'none']);
});

test('free slots: a released slot is handed out again before higher ones', () => {
  const free = new FreeSlots(2, 4);
  const taken = Array.from({ length: 5 }, () => free.acquire()!); // 0/0 1/0 0/1 1/1 0/2
  free.release(taken[2]); // 0/1
  free.release(taken[0]); // 0/0
  const cases: string[] = ['0/0', '0/1', '1/2', '0/3', '1/3', 'none'];
  for (const expected of cases) assert.equal(text(free.acquire()), expected);
  free.release({ instance: 1, slot: 3 });
  free.release({ instance: 0, slot: 3 });
  assert.equal(text(free.acquire()), '0/3', 'equal slots: lower instance first');
});

test('free slots: many releases in random order come back sorted', () => {
  const free = new FreeSlots(3, 50);
  const all: SlotRef[] = [];
  for (let r = free.acquire(); r; r = free.acquire()) all.push(r);
  assert.equal(all.length, 150);
  // A fixed shuffle (LCG) so the test is deterministic.
  let seed = 7;
  const shuffled = [...all].sort(() => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % 3) - 1);
  for (const r of shuffled) free.release(r);
  const again: string[] = [];
  for (let r = free.acquire(); r; r = free.acquire()) again.push(text(r));
  assert.deepEqual(again, all.map(text));
});
