// The SDK Tensor: typed-array views without copies, encodings of plain values, BYTES framing, and the
// checks that catch a wrong size or an output whose buffer was already sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { Tensor, decodeBytesElements, encodeBytesElements } from './tensor.js';

describe('sdk Tensor', () => {
  it('wraps a typed array without copying and views it back', () => {
    const values = new Float32Array([1.5, -2, 3]);
    const t = Tensor.from('x', values);
    assert.equal(t.datatype, 'FP32');
    assert.deepEqual(t.shape, [3]);
    assert.equal(t.data.buffer, values.buffer);
    const view = t.float32();
    view[0] = 7;
    assert.equal(values[0], 7, 'float32() is a view of the same memory');
    assert.throws(() => t.int32(), /is FP32, not INT32/);
  });

  it('encodes plain values in the datatype asked for (64-bit as bigints, halves from numbers)', () => {
    assert.deepEqual(Tensor.from('a', [1, 2, 3], { datatype: 'INT64' }).toArray(), [1n, 2n, 3n]);
    assert.deepEqual(Tensor.from('b', [true, false]).toArray(), [true, false]);
    assert.deepEqual(Tensor.from('c', [0.5, -1.25], { datatype: 'FP16' }).toArray(), [0.5, -1.25]);
    assert.deepEqual(Tensor.from('d', [1, 2, 3, 4], { shape: [2, 2] }).shape, [2, 2]);
    assert.throws(() => Tensor.from('e', [1, 2, 3], { shape: [2, 2] }), /do not fit FP32 \[2,2\]/);
    assert.throws(() => Tensor.from('f', new Float64Array(2), { datatype: 'FP32' }), /cannot hold FP32/);
  });

  it('keeps BYTES in Triton’s length-prefixed form and reads elements back as views', () => {
    const t = Tensor.fromStrings('s', ['hé', '', 'xyz']);
    assert.equal(t.datatype, 'BYTES');
    assert.deepEqual([...t.data.subarray(0, 4)], [3, 0, 0, 0], 'a 4-byte little-endian length first');
    assert.deepEqual(t.strings(), ['hé', '', 'xyz']);
    // An element that starts with U+FEFF keeps it: it is data, not a byte order mark to drop.
    assert.deepEqual(Tensor.fromStrings('b', ['\uFEFFx', '\uFEFF']).strings(), ['\uFEFFx', '\uFEFF']);
    const views = t.bytes();
    assert.equal(views[2].buffer, t.data.buffer);
    assert.deepEqual(
      decodeBytesElements(encodeBytesElements([new Uint8Array([0, 255])])).map((b) => [...b]),
      [[0, 255]],
    );
    assert.throws(() => decodeBytesElements(new Uint8Array([9, 0, 0, 0, 1])), /exceeds the data/);
  });

  it('copies only when the bytes are not aligned for the element type', () => {
    const raw = new Uint8Array(9);
    const unaligned = new Tensor('u', 'INT32', [2], raw.subarray(1));
    unaligned.data.set([1, 0, 0, 0, 2, 0, 0, 0]);
    const view = unaligned.int32();
    assert.deepEqual([...view], [1, 2]);
    assert.notEqual(view.buffer, raw.buffer, 'unaligned: a copy');
    const aligned = new Tensor('a', 'INT32', [2], raw.subarray(0, 8));
    assert.equal(aligned.int32().buffer, raw.buffer, 'aligned: a view');
  });

  it('copies unaligned bytes that are a Node Buffer too (Buffer#slice is a view)', () => {
    const pool = Buffer.alloc(9);
    const t = new Tensor('b', 'FP32', [2], pool.subarray(1));
    t.data.set(new Uint8Array(new Float32Array([1.5, -2]).buffer));
    assert.deepEqual([...t.float32()], [1.5, -2]);
  });

  it('allocShared() lives in a SharedArrayBuffer; clone() gets a buffer of its own', () => {
    const s = Tensor.allocShared('s', 'FP32', [2, 2]);
    assert.ok(s.data.buffer instanceof SharedArrayBuffer);
    assert.equal(s.data.byteLength, 16);
    const c = Tensor.from('c', new Int32Array([5])).clone('d');
    assert.equal(c.name, 'd');
    assert.deepEqual(c.toArray(), [5]);
  });

  it('says so when a tensor’s buffer was moved away (sent) before', () => {
    const values = new Float32Array(4);
    new MessageChannel().port1.postMessage(null, [values.buffer]);
    assert.throws(() => Tensor.from('gone', values, { shape: [4] }), /already sent in a response/);
  });
});
