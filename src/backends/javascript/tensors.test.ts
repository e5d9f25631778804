// The two crossing policies: `copy` shares SharedArrayBuffers and otherwise copies once into a buffer that
// moves; `move` moves whole buffers and copies out views into larger ones. And the checks on what a
// model sends back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkedCoreTensor, copyToWire, moveToWire, newCounters } from './tensors.js';

const u8 = (n: number, shared = false): Uint8Array =>
  new Uint8Array(shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n));

describe('javascript backend tensor crossing', () => {
  it('copy: a Buffer is copied into a buffer of its own; a SharedArrayBuffer view is passed as is', () => {
    const counters = newCounters();
    const transfer: ArrayBuffer[] = [];
    const body = Buffer.from('header+payload');
    const slice = body.subarray(7);
    const w = copyToWire({ name: 'a', datatype: 'UINT8', shape: [7], data: slice }, transfer, counters);
    assert.equal(transfer.length, 1);
    assert.equal(w.data.buffer, transfer[0]);
    assert.equal(w.data.byteLength, 7);
    assert.equal(transfer[0].byteLength, 7, 'exactly the tensor, not the body around it');
    const shared = u8(8, true);
    const s = copyToWire({ name: 'b', datatype: 'UINT8', shape: [8], data: shared }, transfer, counters);
    assert.equal(s.data.buffer, shared.buffer);
    assert.equal(transfer.length, 1, 'nothing to move for shared memory');
    assert.deepEqual([counters.inputBytesCopied, counters.inputBytesShared], [7, 8]);
  });

  it('move: a whole buffer moves once; a view into a larger buffer is copied out', () => {
    const counters = newCounters();
    const transfer = new Set<ArrayBuffer>();
    const whole = u8(16);
    const a = moveToWire({ name: 'a', datatype: 'FP32', shape: [4], data: whole }, transfer, counters);
    const b = moveToWire({ name: 'b', datatype: 'FP32', shape: [4], data: whole }, transfer, counters);
    assert.equal(a.data.buffer, whole.buffer);
    assert.equal(b.data.buffer, whole.buffer);
    const part = u8(32).subarray(8, 16);
    const c = moveToWire({ name: 'c', datatype: 'FP32', shape: [2], data: part }, transfer, counters);
    assert.notEqual(c.data.buffer, part.buffer);
    assert.equal(transfer.size, 2);
    assert.deepEqual([counters.outputBytesMoved, counters.outputBytesCopied], [32, 8]);
  });

  it('checks what a model sends: datatype, shape, byte size, BYTES framing', () => {
    const ok = checkedCoreTensor({ name: 'o', datatype: 'INT32', shape: [2], data: u8(8) }, 'output');
    assert.ok(Buffer.isBuffer(ok.data));
    assert.throws(
      () => checkedCoreTensor({ name: 'o', datatype: 'INT99', shape: [1], data: u8(4) }, 'output'),
      /unknown datatype/,
    );
    assert.throws(
      () => checkedCoreTensor({ name: 'o', datatype: 'INT32', shape: [-1], data: u8(4) }, 'output'),
      /invalid shape/,
    );
    assert.throws(
      () => checkedCoreTensor({ name: 'o', datatype: 'INT32', shape: [3], data: u8(8) }, 'output'),
      /8 bytes do not fit/,
    );
    const bytes = new Uint8Array([1, 0, 0, 0, 65]);
    assert.throws(
      () => checkedCoreTensor({ name: 'o', datatype: 'BYTES', shape: [2], data: bytes }, 'output'),
      /holds 1 BYTES elements/,
    );
    assert.throws(() => checkedCoreTensor('nope', 'output'), /is not a tensor/);
  });
});
