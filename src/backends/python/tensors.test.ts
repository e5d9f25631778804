// The small-request paths of tensors.ts: describeInline takes a list only when every tensor travels inline
// (and then adds nothing to the blob when it refuses), readInlineTensors reads a list only when every
// tensor is inline and checks each like readTensors does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Tensor } from '../../common/tensor.js';
import type { StubTensor } from './protocol.js';
import type { HostToStubArena } from './shm.js';
import { BlobBuilder, describeInline, readInlineTensors, readTensors } from './tensors.js';

const int32 = (name: string, n: number): Tensor => ({
  name,
  datatype: 'INT32',
  shape: [n],
  data: Buffer.alloc(4 * n, n),
});

// describeInline only asks whether there is an arena; it never writes to it.
const arena = {} as HostToStubArena;

void test('describeInline lays small tensors one after another in the blob', () => {
  const blob = new BlobBuilder();
  const inputs = new Map([
    ['A', int32('A', 4)],
    ['B', int32('B', 2)],
  ]);
  const wire = describeInline(inputs.values(), { arena, threshold: 64 }, blob);
  assert.deepEqual(wire, [
    { name: 'A', datatype: 'INT32', shape: [4], in_shm: false, offset: 0, byte_size: 16 },
    { name: 'B', datatype: 'INT32', shape: [2], in_shm: false, offset: 16, byte_size: 8 },
  ]);
  assert.equal(blob.parts.length, 2);
});

void test('describeInline refuses a list with a tensor for /dev/shm and leaves the blob alone', () => {
  const blob = new BlobBuilder();
  const wire = describeInline([int32('A', 1), int32('B', 16)], { arena, threshold: 64 }, blob);
  assert.equal(wire, undefined);
  assert.equal(blob.parts.length, 0);
  // Without an arena every tensor is inline, whatever its size.
  assert.equal(describeInline([int32('B', 16)], { arena: undefined, threshold: 64 }, blob)?.length, 1);
});

void test('readInlineTensors reads inline lists, defers shared-memory ones, and checks sizes', async () => {
  const blob = Buffer.alloc(24, 7);
  const a: StubTensor = { name: 'A', datatype: 'INT32', shape: [4], in_shm: false, offset: 0, byte_size: 16 };
  const b: StubTensor = { name: 'B', datatype: 'INT32', shape: [2], in_shm: false, offset: 16, byte_size: 8 };
  const read = readInlineTensors([a, b], blob);
  assert.deepEqual(
    read?.map((t) => [t.name, t.shape, t.data.length]),
    [
      ['A', [4], 16],
      ['B', [2], 8],
    ],
  );
  // The same result the general reader gives.
  assert.deepEqual(await readTensors([a, b], blob, undefined, []), read);
  assert.deepEqual(readInlineTensors(undefined, blob), []);
  assert.equal(readInlineTensors([a, { ...b, in_shm: true }], blob), undefined);
  assert.throws(() => readInlineTensors([{ ...b, offset: 20 }], blob), /outside its frame/);
  assert.throws(() => readInlineTensors([{ ...b, shape: [3] }], blob), /needs 12/);
  assert.throws(() => readInlineTensors('nope', blob), /malformed tensor list/);
});
