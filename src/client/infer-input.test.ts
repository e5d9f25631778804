import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DataType } from '../common/datatype.js';
import { InferInput, InferRequestedOutput } from './infer-input.js';

const hex = (b: Buffer | undefined): string => (b === undefined ? 'none' : b.toString('hex'));
const input = (datatype: DataType, n: number): InferInput => new InferInput('X', [n], datatype);

void test('integer datatypes encode little-endian at their extremes', () => {
  const cases: [DataType, number[], string][] = [
    ['UINT8', [0, 255], '00ff'],
    ['INT8', [-128, 127], '807f'],
    ['UINT16', [0, 65535], '0000ffff'],
    ['INT16', [-32768, 32767], '0080ff7f'],
    ['UINT32', [1, 4294967295], '01000000ffffffff'],
    ['INT32', [-2147483648, 2147483647], '00000080ffffff7f'],
  ];
  for (const [dt, values, bytes] of cases) assert.equal(hex(input(dt, 2).setData(values).data), bytes, dt);
});

void test('out-of-range and non-integer values are refused, never wrapped', () => {
  assert.throws(() => input('UINT8', 1).setData([256]), /element 0 \(256\) is not a valid UINT8 value/);
  assert.throws(() => input('INT8', 1).setData([-129]), TypeError);
  assert.throws(() => input('INT32', 1).setData([1.5]), TypeError);
  assert.throws(() => input('UINT32', 1).setData([-1]), TypeError);
  assert.throws(() => input('INT64', 1).setData([2 ** 60]), /not a valid INT64/);
  assert.throws(() => input('INT64', 1).setData([2n ** 63n]), TypeError);
  assert.throws(() => input('UINT64', 1).setData([-1n]), TypeError);
  assert.throws(() => input('FP32', 1).setData(['1'] as string[]), TypeError);
  assert.throws(() => input('BOOL', 1).setData([2]), TypeError);
});

void test('INT64 and UINT64 take bigints (exact over the full range) and safe numbers', () => {
  const i = input('INT64', 3).setData([-(2n ** 63n), 2n ** 63n - 1n, 0n]);
  assert.equal(hex(i.data), '0000000000000080' + 'ffffffffffffff7f' + '0000000000000000');
  const u = input('UINT64', 2).setData([2n ** 64n - 1n, 7n]);
  assert.equal(hex(u.data), 'ffffffffffffffff' + '0700000000000000');
  assert.equal(hex(input('INT64', 1).setData([-2]).data), 'feffffffffffffff');
  assert.equal(hex(input('UINT64', 1).setData([Number.MAX_SAFE_INTEGER]).data), 'ffffffffffff1f00');
});

void test('typed arrays of the tensor type are sent without a copy', () => {
  const cases: [DataType, ArrayBufferView & { length: number }][] = [
    ['INT32', new Int32Array([1, 2, 3])],
    ['UINT8', new Uint8Array([1, 2, 3])],
    ['INT64', new BigInt64Array([1n, 2n, 3n])],
    ['UINT64', new BigUint64Array([1n, 2n, 3n])],
    ['FP32', new Float32Array([1, 2, 3])],
    ['FP64', new Float64Array([1, 2, 3])],
    ['FP16', new Uint16Array([0x3c00, 0, 0])],
    ['BF16', new Uint16Array([0x3f80, 0, 0])],
    ['BOOL', new Uint8Array([1, 0, 1])],
  ];
  for (const [dt, ta] of cases) {
    const data = input(dt, 3).setData(ta as never).data!;
    assert.equal(data.buffer, ta.buffer, `${dt} shares memory`);
    assert.equal(data.byteLength, ta.byteLength);
  }
  // Another typed array type is converted with range checks.
  assert.equal(hex(input('INT8', 2).setData(new Float64Array([-1, 2])).data), 'ff02');
  assert.throws(() => input('UINT8', 1).setData(new Int8Array([-1])), TypeError);
});

void test('BOOL takes booleans or 0/1 as one byte each', () => {
  assert.equal(hex(input('BOOL', 3).setData([true, false, true]).data), '010001');
  assert.equal(hex(input('BOOL', 2).setData([0, 1]).data), '0001');
});

void test('FP16 and BF16 take numbers (converted) or Uint16Array bit patterns (raw)', () => {
  assert.equal(hex(input('FP16', 3).setData([1, -2, 65504]).data), '003c00c0ff7b');
  assert.equal(hex(input('BF16', 2).setData([1, -2]).data), '803f00c0');
  assert.equal(hex(input('FP16', 1).setData(new Uint16Array([0x7e00])).data), '007e');
  assert.equal(hex(input('FP32', 2).setData([1, -0.5]).data), '0000803f000000bf');
  assert.equal(hex(input('FP64', 1).setData([1]).data), '000000000000f03f');
});

void test('BYTES takes strings and byte arrays, length-prefixed', () => {
  const x = input('BYTES', 3).setData(['ab', new Uint8Array([0xff, 0x00]), '']);
  assert.equal(hex(x.data), '020000006162' + '02000000ff00' + '00000000');
  assert.equal(hex(input('BYTES', 2).setData(['é', 'x']).data), '02000000c3a9' + '0100000078');
});

void test('element count must match the shape; validate() catches a later setShape', () => {
  const x = new InferInput('X', [2, 3], 'INT32');
  assert.throws(() => x.setData([1, 2, 3]), /got 3 elements for shape \[2,3\], which has 6/);
  assert.throws(() => x.validate(), /no data set/);
  x.setData([1, 2, 3, 4, 5, 6]);
  x.validate();
  x.setShape([3, 2]);
  x.validate();
  x.setShape([1, 2]);
  assert.throws(() => x.validate(), /got 6 elements for shape \[1,2\]/);
  assert.throws(() => new InferInput('X', [-1], 'INT32'), RangeError);
  assert.throws(() => new InferInput('X', [1], 'FLOAT' as DataType), /unknown datatype 'FLOAT'/);
  assert.throws(() => new InferInput('', [1], 'INT32'), TypeError);
});

void test('setRawData checks sizes and BYTES framing', () => {
  const x = new InferInput('X', [2], 'INT16');
  assert.throws(() => x.setRawData(new Uint8Array(3)), /not a whole number of INT16 elements/);
  assert.throws(() => x.setRawData(new Uint8Array(6)), /got 3 elements/);
  assert.equal(hex(x.setRawData(new Uint8Array([1, 0, 2, 0])).data), '01000200');
  const s = new InferInput('S', [1], 'BYTES');
  assert.throws(() => s.setRawData(new Uint8Array([5, 0, 0, 0, 1])), /element length exceeds the data/);
  assert.equal(hex(s.setRawData(new Uint8Array([1, 0, 0, 0, 0x41])).data), '0100000041');
});

void test('binary by default; shared memory and data replace each other', () => {
  const x = input('INT32', 1).setData([1]);
  assert.equal(x.binary, true);
  assert.equal(x.setData([1], { binary: false }).binary, false);
  x.setSharedMemory('region', 4, 8);
  assert.deepEqual(x.sharedMemory, { region: 'region', byteSize: 4, offset: 8 });
  assert.equal(x.data, undefined);
  x.validate();
  x.setData([2]);
  assert.equal(x.sharedMemory, undefined);
  assert.throws(() => x.setSharedMemory('r', -1), RangeError);
});

void test('InferRequestedOutput: binary by default, classification count checked', () => {
  const o = new InferRequestedOutput('OUT');
  assert.equal(o.binary, true);
  assert.equal(o.classCount, 0);
  assert.equal(new InferRequestedOutput('OUT', { binary: false, classCount: 3 }).classCount, 3);
  assert.throws(() => new InferRequestedOutput('OUT', { classCount: -1 }), RangeError);
  assert.deepEqual(o.setSharedMemory('r', 16).sharedMemory, { region: 'r', byteSize: 16, offset: 0 });
  assert.equal(o.unsetSharedMemory().sharedMemory, undefined);
});
