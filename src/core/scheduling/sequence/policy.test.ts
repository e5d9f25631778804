import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideDirect, decideOldest, type Decision, type DirectPolicy, type OldestPolicy } from './policy.js';

const NOW = 1_000_000;
const run = (count: number): Decision => ({ kind: 'run', count });
const wait = (untilUs: number): Decision => ({ kind: 'wait', untilUs });
const IDLE: Decision = { kind: 'idle' };

test('direct: batch width and waiting, table-driven', () => {
  const noDelay: DirectPolicy = { maxBatchSize: 4, maxQueueDelayUs: 0, minimumSlotUtilization: 0 };
  const delayed: DirectPolicy = { maxBatchSize: 4, maxQueueDelayUs: 1000, minimumSlotUtilization: 0.5 };
  const onlyDelay: DirectPolicy = { maxBatchSize: 4, maxQueueDelayUs: 1000, minimumSlotUtilization: 0 };
  const U = undefined;
  const cases: [string, (number | undefined)[], DirectPolicy, Decision][] = [
    ['nothing waiting', [U, U, U, U], noDelay, IDLE],
    ['slot 0 only', [NOW, U, U, U], noDelay, run(1)],
    ['slots 0 and 2: width 3, slot 1 padded', [NOW, U, NOW, U], noDelay, run(3)],
    ['only the last slot: full width', [U, U, U, NOW], noDelay, run(4)],
    ['delay without utilization target runs at once (as Triton)', [NOW, U, U, U], onlyDelay, run(1)],
    ['1 of 4 slots < 0.5: wait for the oldest head + delay', [NOW - 200, U, U, U], delayed, wait(NOW + 800)],
    ['2 of 4 slots reach 0.5', [NOW, U, NOW, U], delayed, run(3)],
    ['delay passed', [NOW - 1000, U, U, U], delayed, run(1)],
    ['the oldest head decides the wait', [NOW - 10, U, U, NOW - 600], delayed, run(4)],
  ];
  for (const [name, heads, policy, expected] of cases) {
    assert.deepEqual(decideDirect(heads, policy, NOW), expected, name);
  }
});

test('oldest: full batch, preferred sizes, queue delay, table-driven', () => {
  const p = (preferredBatchSizes: number[], maxQueueDelayUs: number, maxBatchSize = 4): OldestPolicy => ({
    maxBatchSize,
    preferredBatchSizes,
    maxQueueDelayUs,
  });
  const waiting = (n: number, age = 0): number[] => Array.from({ length: n }, () => NOW - age);
  const cases: [string, number[], OldestPolicy, Decision][] = [
    ['nothing waiting', [], p([4], 1000), IDLE],
    ['no delay: run what there is', waiting(2), p([4], 0), run(2)],
    ['full batch at once', waiting(4), p([4], 1000), run(4)],
    ['more than a batch: cap', waiting(9), p([4], 1000), run(4)],
    ['short of the preferred size: wait', waiting(2, 100), p([4], 1000), wait(NOW + 900)],
    ['largest preferred size that fits', waiting(3), p([2, 4], 1000), run(2)],
    ['delay passed: run everything', waiting(3, 1000), p([4], 1000), run(3)],
    ['max_batch_size 0 behaves as 1', waiting(3), p([], 1000, 0), run(1)],
    ['the oldest candidate decides the wait', [NOW - 300, NOW - 50], p([4], 1000), wait(NOW + 700)],
  ];
  for (const [name, w, policy, expected] of cases) {
    assert.deepEqual(decideOldest(w, policy, NOW), expected, name);
  }
});
