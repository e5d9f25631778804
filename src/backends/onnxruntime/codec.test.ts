import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Tensor as OrtTensor } from 'onnxruntime-node';
import type { NereidError } from '../../common/errors.js';
import { joinBytesElements, splitBytesElements } from '../../common/tensor.js';
import { encodeStrings, fromOrtTensor, ownArrayBuffer, toOrtTensor } from './codec.js';

const ab = (b: Buffer): ArrayBuffer => new Uint8Array(b).buffer;

void test('numeric inputs are viewed in place, not copied', () => {
  const data = new ArrayBuffer(16);
  new BigInt64Array(data).set([1n, -2n]);
  const t = toOrtTensor({ name: 'X', datatype: 'INT64', shape: [2], data });
  assert.equal(t.type, 'int64');
  assert.equal((t.data as BigInt64Array).buffer, data);
  assert.deepEqual(Array.from(t.data as BigInt64Array), [1n, -2n]);
  const h = toOrtTensor({ name: 'H', datatype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]).buffer });
  assert.equal(h.type, 'float16');
  assert.deepEqual(Array.from(h.data as Uint16Array), [0x3c00]);
});

void test('BYTES inputs decode to strings; invalid UTF-8 and NUL bytes are refused', () => {
  const t = toOrtTensor({
    name: 'S',
    datatype: 'BYTES',
    shape: [3],
    data: ab(joinBytesElements(['a', '', 'žé'])),
  });
  assert.deepEqual(t.data, ['a', '', 'žé']);
  const bad = ab(joinBytesElements([Buffer.from([0x41, 0xff, 0xfe])]));
  assert.throws(
    () => toOrtTensor({ name: 'S', datatype: 'BYTES', shape: [1], data: bad }),
    (e: NereidError) =>
      e.code === 'INVALID_ARG' &&
      e.message.startsWith("input 'S': BYTES element 0 is not valid UTF-8 (byte 0xff at offset 1); ") &&
      e.message.includes('only if it is valid UTF-8 without NUL bytes'),
  );
  // A truncated multi-byte sequence is named where it starts; a complete one before it passes.
  const cut = ab(joinBytesElements([Buffer.from([0xc3, 0xa9, 0xe2, 0x82])]));
  assert.throws(
    () => toOrtTensor({ name: 'S', datatype: 'BYTES', shape: [1], data: cut }),
    (e: NereidError) => /\(byte 0xe2 at offset 2\)/.test(e.message),
  );
  const nul = ab(joinBytesElements(['ok', 'a\0b']));
  assert.throws(
    () => toOrtTensor({ name: 'S', datatype: 'BYTES', shape: [2], data: nul }),
    (e: NereidError) =>
      e.code === 'INVALID_ARG' &&
      e.message.startsWith(
        "input 'S': BYTES element 1 has a NUL byte at offset 1, where onnxruntime would cut",
      ),
  );
});

void test('BF16 and ragged byte counts are refused', () => {
  assert.throws(
    () => toOrtTensor({ name: 'B', datatype: 'BF16', shape: [1], data: new ArrayBuffer(2) }),
    (e: NereidError) => e.code === 'UNSUPPORTED',
  );
  assert.throws(
    () => toOrtTensor({ name: 'F', datatype: 'FP32', shape: [1], data: new ArrayBuffer(6) }),
    (e: NereidError) => e.code === 'INVALID_ARG',
  );
});

void test('string outputs encode to length-prefixed form in a buffer of their own', () => {
  const encoded = encodeStrings(['x', 'ÿz', '']);
  assert.deepEqual(
    splitBytesElements(Buffer.from(encoded)).map((b) => b.toString('utf8')),
    ['x', 'ÿz', ''],
  );
  const w = fromOrtTensor('S', new OrtTensor('string', ['q'], [1]));
  assert.equal(w.datatype, 'BYTES');
  assert.deepEqual(Buffer.from(w.data), joinBytesElements(['q']));
});

void test('ownArrayBuffer keeps a whole buffer and copies a slice', () => {
  const whole = new Float32Array([1, 2]);
  assert.equal(ownArrayBuffer(whole), whole.buffer);
  const big = new Uint8Array([1, 2, 3, 4, 5]);
  const part = ownArrayBuffer(big.subarray(1, 3));
  assert.notEqual(part, big.buffer);
  assert.deepEqual(Array.from(new Uint8Array(part)), [2, 3]);
  const out = fromOrtTensor('Y', new OrtTensor('float32', whole, [2]));
  assert.equal(out.data, whole.buffer);
  assert.deepEqual(out.shape, [2]);
});
