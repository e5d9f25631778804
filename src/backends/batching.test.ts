import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NereidError } from '../common/errors.js';
import { joinBytesElements, splitBytesElements, type Tensor } from '../common/tensor.js';
import { concatBatch, splitBatch } from './batching.js';

const int32 = (name: string, shape: number[], values: number[]): Tensor => ({
  name,
  datatype: 'INT32',
  shape,
  data: Buffer.from(new Int32Array(values).buffer),
});
const ints = (t: Tensor): number[] => {
  const out: number[] = [];
  for (let i = 0; i < t.data.length; i += 4) out.push(t.data.readInt32LE(i));
  return out;
};
const bytes = (name: string, shape: number[], values: string[]): Tensor => ({
  name,
  datatype: 'BYTES',
  shape,
  data: joinBytesElements(values),
});
const strings = (t: Tensor): string[] => splitBytesElements(t.data).map((b) => b.toString('utf8'));
const isInternal = (e: unknown): boolean => (e as NereidError).code === 'INTERNAL';

void test('concatBatch joins fixed-size tensors along dim 0 into an unpooled buffer', () => {
  const a = int32('X', [1, 2], [1, 2]);
  const b = int32('X', [2, 2], [3, 4, 5, 6]);
  const c = int32('X', [3, 2], [7, 8, 9, 10, 11, 12]);
  const joined = concatBatch([a, b, c]);
  assert.deepEqual(joined.shape, [6, 2]);
  assert.equal(joined.datatype, 'INT32');
  assert.deepEqual(ints(joined), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  // Owns its whole ArrayBuffer, so it can be transferred to a worker.
  assert.equal(joined.data.byteOffset, 0);
  assert.equal(joined.data.buffer.byteLength, joined.data.length);
});

void test('concatBatch returns a lone tensor untouched', () => {
  const a = int32('X', [2, 2], [1, 2, 3, 4]);
  assert.equal(concatBatch([a]), a);
});

void test('concatBatch joins BYTES tensors', () => {
  const joined = concatBatch([bytes('S', [1, 2], ['a', '']), bytes('S', [2, 2], ['bc', 'dé', 'e', 'f'])]);
  assert.deepEqual(joined.shape, [3, 2]);
  assert.deepEqual(strings(joined), ['a', '', 'bc', 'dé', 'e', 'f']);
});

void test('concatBatch refuses parts that differ beyond the batch dimension', () => {
  assert.throws(() => concatBatch([int32('X', [1, 2], [1, 2]), int32('X', [1, 1], [3])]), isInternal);
  assert.throws(() => concatBatch([int32('X', [], [1]), int32('X', [], [3])]), isInternal);
  const f: Tensor = { name: 'X', datatype: 'FP32', shape: [1, 2], data: Buffer.alloc(8) };
  assert.throws(() => concatBatch([int32('X', [1, 2], [1, 2]), f]), isInternal);
  assert.throws(() => concatBatch([]), isInternal);
});

void test('splitBatch cuts fixed-size tensors by batch sizes, as views', () => {
  const t = int32('Y', [6, 2], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  const [a, b, c] = splitBatch(t, [1, 2, 3]);
  assert.deepEqual(a.shape, [1, 2]);
  assert.deepEqual(ints(a), [1, 2]);
  assert.deepEqual(b.shape, [2, 2]);
  assert.deepEqual(ints(b), [3, 4, 5, 6]);
  assert.deepEqual(c.shape, [3, 2]);
  assert.deepEqual(ints(c), [7, 8, 9, 10, 11, 12]);
  assert.equal(c.data.buffer, t.data.buffer, 'pieces share the batched buffer');
});

void test('splitBatch cuts BYTES tensors at element boundaries', () => {
  const t = bytes('S', [3, 2], ['a', '', 'bc', 'dé', 'e', 'ffff']);
  const [a, b] = splitBatch(t, [2, 1]);
  assert.deepEqual(a.shape, [2, 2]);
  assert.deepEqual(strings(a), ['a', '', 'bc', 'dé']);
  assert.deepEqual(b.shape, [1, 2]);
  assert.deepEqual(strings(b), ['e', 'ffff']);
});

void test('splitBatch handles zero-sized items and rejects mismatched sizes', () => {
  const empty = int32('Y', [3, 0], []);
  assert.deepEqual(
    splitBatch(empty, [1, 2]).map((p) => p.shape),
    [
      [1, 0],
      [2, 0],
    ],
  );
  const t = int32('Y', [3, 1], [1, 2, 3]);
  assert.throws(() => splitBatch(t, [1, 1]), isInternal);
  assert.throws(() => splitBatch({ ...t, data: t.data.subarray(4) }, [1, 2]), isInternal);
  assert.throws(() => splitBatch(bytes('S', [2, 1], ['a']), [1, 1]), isInternal);
});

void test('concat then split round-trips', () => {
  const parts = [int32('X', [2, 3], [1, 2, 3, 4, 5, 6]), int32('X', [1, 3], [7, 8, 9])];
  const back = splitBatch(concatBatch(parts), [2, 1]);
  assert.deepEqual(back.map(ints), parts.map(ints));
  assert.deepEqual(
    back.map((p) => p.shape),
    parts.map((p) => p.shape),
  );
});
