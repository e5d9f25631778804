import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DataType } from '../common/datatype.js';
import { NereidClientError } from './errors.js';
import { InferInput } from './infer-input.js';
import { InferResult, type OutputTensor } from './infer-result.js';
import type { TensorValues } from './tensor-data.js';

function resultOf(outputs: OutputTensor[], parameters: Record<string, boolean> = {}): InferResult {
  return new InferResult({ modelName: 'm', modelVersion: '1', id: '', parameters, outputs, raw: {} });
}

/** Encodes with InferInput, then reads back through InferResult: the two halves must agree. */
function roundTrip(datatype: DataType, values: TensorValues, misalign = false): InferResult {
  const data = new InferInput('X', [values.length], datatype).setData(values).data!;
  // A response blob usually sits at an odd offset behind the JSON header.
  const placed = misalign ? Buffer.concat([Buffer.from([0]), data]).subarray(1) : data;
  return resultOf([{ name: 'X', datatype, shape: [values.length], parameters: {}, data: placed }]);
}

void test('every fixed-size datatype reads back as its typed array and plain array', () => {
  const cases: [DataType, TensorValues, unknown[], string][] = [
    ['BOOL', [true, false, true], [true, false, true], 'Uint8Array'],
    ['UINT8', [0, 255], [0, 255], 'Uint8Array'],
    ['UINT16', [0, 65535], [0, 65535], 'Uint16Array'],
    ['UINT32', [0, 4294967295], [0, 4294967295], 'Uint32Array'],
    ['UINT64', [0n, 2n ** 64n - 1n], [0n, 2n ** 64n - 1n], 'BigUint64Array'],
    ['INT8', [-128, 127], [-128, 127], 'Int8Array'],
    ['INT16', [-32768, 32767], [-32768, 32767], 'Int16Array'],
    ['INT32', [-2147483648, 2147483647], [-2147483648, 2147483647], 'Int32Array'],
    ['INT64', [-(2n ** 63n), 2n ** 63n - 1n], [-(2n ** 63n), 2n ** 63n - 1n], 'BigInt64Array'],
    ['FP16', [1, -2.5, 65504], [1, -2.5, 65504], 'Uint16Array'],
    ['BF16', [1, -2.5, 0.15625], [1, -2.5, 0.15625], 'Uint16Array'],
    ['FP32', [1.5, -0.25], [1.5, -0.25], 'Float32Array'],
    ['FP64', [Math.PI, -1e300], [Math.PI, -1e300], 'Float64Array'],
  ];
  for (const [dt, values, expected, ctor] of cases) {
    for (const misalign of [false, true]) {
      const r = roundTrip(dt, values, misalign);
      const ta = r.asTypedArray('X');
      assert.equal(ta.constructor.name, ctor, `${dt} typed array`);
      assert.equal(ta.length, values.length);
      assert.deepEqual(r.asArray('X'), expected, `${dt} array (misaligned: ${misalign})`);
    }
  }
});

void test('aligned data is a view of the response; misaligned data is copied once', () => {
  const r = roundTrip('INT32', new Int32Array([7, 8]));
  const view = r.asTypedArray('X', 'INT32');
  assert.equal(view.buffer, r.tensor('X').data!.buffer);
  const m = roundTrip('INT32', new Int32Array([7, 8]), true);
  const copy = m.asTypedArray('X', 'INT32');
  assert.notEqual(copy.buffer, m.tensor('X').data!.buffer);
  assert.deepEqual(Array.from(copy), [7, 8]);
});

void test('FP16 typed array is the bit patterns', () => {
  assert.deepEqual(Array.from(roundTrip('FP16', [1, -2]).asTypedArray('X', 'FP16')), [0x3c00, 0xc000]);
});

void test('BYTES reads as UTF-8 strings or as byte views', () => {
  const r = roundTrip('BYTES', ['héllo', new Uint8Array([0xff, 0x00]), '']);
  assert.deepEqual(r.asArray('X', 'BYTES').slice(0, 1), ['héllo']);
  assert.deepEqual(
    r.asBytes('X').map((b) => b.toString('hex')),
    [Buffer.from('héllo').toString('hex'), 'ff00', ''],
  );
  assert.throws(() => r.asTypedArray('X'), /is BYTES: read it with asArray\(\) or asBytes\(\)/);
});

void test('an expected datatype is checked; a missing output is named', () => {
  const r = roundTrip('INT32', [1]);
  assert.throws(() => r.asTypedArray('X', 'FP32'), /output 'X' is INT32, not FP32/);
  assert.throws(
    () => r.asArray('Y'),
    (err: unknown) => {
      assert.ok(err instanceof NereidClientError);
      assert.match(err.message, /no output 'Y' \(outputs: 'X'\)/);
      return true;
    },
  );
  assert.equal(r.output('Y'), undefined);
  assert.deepEqual(r.output('X'), { name: 'X', datatype: 'INT32', shape: [1], parameters: {} });
  assert.deepEqual(r.outputs, [{ name: 'X', datatype: 'INT32', shape: [1], parameters: {} }]);
});

void test('shared-memory outputs have no data; final follows triton_final_response', () => {
  const r = resultOf(
    [
      {
        name: 'S',
        datatype: 'FP32',
        shape: [4],
        parameters: {},
        data: undefined,
        sharedMemory: { region: 'out', byteSize: 16, offset: 0 },
      },
    ],
    { triton_final_response: false },
  );
  assert.throws(() => r.asArray('S'), /in shared-memory region 'out'/);
  assert.equal(r.final, false);
  assert.equal(resultOf([]).final, true);
});
