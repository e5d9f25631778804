import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import type { DataType } from '../../common/datatype.js';
import { NereidError } from '../../common/errors.js';
import { joinBytesElements } from '../../common/tensor.js';
import { contentsToRaw } from './contents.js';
import { encodeMessage } from './test-client.testkit.js';

const CONTENTS = 'inference.InferTensorContents';
const contents = (value: object): Buffer => encodeMessage(CONTENTS, value);
const raw = (datatype: DataType, value: object): Buffer =>
  contentsToRaw([contents(value)], datatype, 'IN', 'm');

function typed(array: { buffer: ArrayBufferLike; byteOffset: number; byteLength: number }): Buffer {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

function invalid(fn: () => unknown, text: string): void {
  assert.throws(
    fn,
    (e: unknown) => e instanceof NereidError && e.code === 'INVALID_ARG' && e.message === text,
  );
}

describe('contentsToRaw: every datatype with a typed form', () => {
  it('BOOL from bool_contents, one byte each', () => {
    assert.deepEqual([...raw('BOOL', { bool_contents: [true, false, true] })], [1, 0, 1]);
  });

  it('INT8 and INT16 take the low bytes of int_contents', () => {
    assert.deepEqual(
      raw('INT8', { int_contents: [-128, -1, 0, 127] }),
      typed(new Int8Array([-128, -1, 0, 127])),
    );
    assert.deepEqual(
      raw('INT16', { int_contents: [-32768, -1, 300, 32767] }),
      typed(new Int16Array([-32768, -1, 300, 32767])),
    );
  });

  it('INT32 from int_contents, negatives from their 10-byte varints', () => {
    const values = [-2147483648, -1, 0, 1, 2147483647];
    assert.deepEqual(raw('INT32', { int_contents: values }), typed(new Int32Array(values)));
  });

  it('INT64 from int64_contents, beyond 2^53 exactly', () => {
    const values = [-(2n ** 63n), -1n, 0n, 2n ** 53n + 1n, 2n ** 63n - 1n];
    const out = raw('INT64', { int64_contents: values.map(String) });
    assert.deepEqual(out, typed(new BigInt64Array(values)));
  });

  it('UINT8, UINT16 and UINT32 from uint_contents', () => {
    assert.deepEqual(raw('UINT8', { uint_contents: [0, 200, 255] }), typed(new Uint8Array([0, 200, 255])));
    assert.deepEqual(
      raw('UINT16', { uint_contents: [0, 65535, 4660] }),
      typed(new Uint16Array([0, 65535, 4660])),
    );
    assert.deepEqual(
      raw('UINT32', { uint_contents: [0, 4294967295] }),
      typed(new Uint32Array([0, 4294967295])),
    );
  });

  it('UINT64 from uint64_contents, up to 2^64-1', () => {
    const values = [0n, 2n ** 64n - 1n, 2n ** 53n + 3n];
    assert.deepEqual(
      raw('UINT64', { uint64_contents: values.map(String) }),
      typed(new BigUint64Array(values)),
    );
  });

  it('FP32 and FP64: a single packed run is returned as a view, without a copy', () => {
    const f32 = [1.5, -0, Infinity, 3.4028234663852886e38];
    const msg = contents({ fp32_contents: f32 });
    const out = contentsToRaw([msg], 'FP32', 'IN', 'm');
    assert.deepEqual(out, typed(new Float32Array(f32)));
    assert.equal(out.buffer, msg.buffer, 'a view into the message');
    const f64 = [Math.PI, -1e308, Number.MIN_VALUE];
    assert.deepEqual(raw('FP64', { fp64_contents: f64 }), typed(new Float64Array(f64)));
  });

  it('BYTES from bytes_contents, length-prefixed', () => {
    const elements = [Buffer.from('héllo'), Buffer.alloc(0), Buffer.from([0, 255])];
    assert.deepEqual(raw('BYTES', { bytes_contents: elements }), joinBytesElements(elements));
  });

  it('accepts unpacked encodings and repeated contents messages (merged)', () => {
    const w = protobuf.Writer.create();
    for (const v of [5, -6]) w.uint32((2 << 3) | 0).int32(v); // unpacked int_contents
    const unpacked = Buffer.from(w.finish());
    const second = contents({ int_contents: [7] });
    assert.deepEqual(
      contentsToRaw([unpacked, second], 'INT32', 'IN', 'm'),
      typed(new Int32Array([5, -6, 7])),
    );
    const f = protobuf.Writer.create();
    f.uint32((6 << 3) | 5).float(2.5);
    f.uint32((6 << 3) | 2).bytes(Buffer.from(new Float32Array([4]).buffer));
    assert.deepEqual(
      contentsToRaw([Buffer.from(f.finish())], 'FP32', 'IN', 'm'),
      typed(new Float32Array([2.5, 4])),
    );
  });

  it('empty contents give an empty tensor', () => {
    assert.equal(contentsToRaw([Buffer.alloc(0)], 'FP32', 'IN', 'm').length, 0);
  });
});

describe("contentsToRaw: Triton's errors", () => {
  it('a list that does not match the datatype', () => {
    invalid(
      () => raw('FP32', { int_contents: [1] }),
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'INT32', expected datatype 'FP32'",
    );
    invalid(
      () => raw('FP16', { fp32_contents: [1] }),
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'FP32', expected datatype 'FP16'",
    );
    invalid(
      () => raw('INT8', { uint_contents: [1] }),
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'UINT32', expected datatype 'INT8'",
    );
  });

  it('two non-empty lists', () => {
    invalid(
      () => raw('INT32', { int_contents: [1], fp32_contents: [1] }),
      "unexpected explicit tensor data for input tensor 'IN' for model 'm', binary data was already supplied.",
    );
  });

  it('malformed lists are INVALID_ARG, never a crash', () => {
    const bad = [
      Buffer.from([(6 << 3) | 2, 3, 0, 0, 0]), // packed fp32 with a partial element
      Buffer.from([(2 << 3) | 2, 2, 0x80, 0x80]), // packed varints ending mid-varint
      Buffer.from([(8 << 3) | 0, 1]), // bytes_contents as a varint
      Buffer.from([(1 << 3) | 5, 0, 0, 0, 0]), // bool as fixed32
      Buffer.from([(2 << 3) | 2, 100]), // length beyond the message
    ];
    for (const b of bad) {
      assert.throws(
        () => contentsToRaw([b], 'INT32', 'IN', 'm'),
        (e: unknown) => e instanceof NereidError && e.code === 'INVALID_ARG',
        b.toString('hex'),
      );
    }
  });
});
