import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
} from '../../../model-config/index.js';
import type { FrozenModelConfig } from '../../../model-config/model-config.js';
import { compileControls, controlTensors, encodeCorrelationId, NOT_READY } from './controls.js';

function config(controls: string, maxBatch = 8): FrozenModelConfig {
  return freezeModelConfig(
    normalizeModelConfig(
      parseModelConfigText(
        `name: "m" platform: "onnxruntime_onnx" max_batch_size: ${maxBatch}
         input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         sequence_batching { control_input [ ${controls} ] }`,
        'config.pbtxt',
      ),
    ),
  );
}

const control = (name: string, kind: string, values: string): string =>
  `{ name: "${name}" control [ { kind: ${kind} ${values} } ] }`;

test('controls: each encoding gives its false/true element, [1,1] with a batch dim and [1] without', () => {
  const spec = compileControls(
    config(
      [
        control('S', 'CONTROL_SEQUENCE_START', 'int32_false_true: [ 5, 9 ]'),
        control('E', 'CONTROL_SEQUENCE_END', 'fp32_false_true: [ 0.5, 1.5 ]'),
        control('R', 'CONTROL_SEQUENCE_READY', 'bool_false_true: [ false, true ]'),
        control('C', 'CONTROL_SEQUENCE_CORRID', 'data_type: TYPE_UINT64'),
      ].join(','),
    ),
  );
  const read = (values: Parameters<typeof controlTensors>[1]) =>
    Object.fromEntries(
      controlTensors(spec, values).map((t) => {
        const v =
          t.datatype === 'INT32'
            ? t.data.readInt32LE(0)
            : t.datatype === 'FP32'
              ? t.data.readFloatLE(0)
              : t.datatype === 'BOOL'
                ? t.data[0]
                : t.data.readBigUInt64LE(0);
        return [t.name, { datatype: t.datatype, shape: t.shape, v }];
      }),
    );
  const table: [string, Parameters<typeof controlTensors>[1], Record<string, number | bigint>][] = [
    ['start', { start: true, end: false, ready: true, correlationId: 7n }, { S: 9, E: 0.5, R: 1, C: 7n }],
    ['middle', { start: false, end: false, ready: true, correlationId: 7n }, { S: 5, E: 0.5, R: 1, C: 7n }],
    ['end', { start: false, end: true, ready: true, correlationId: 7n }, { S: 5, E: 1.5, R: 1, C: 7n }],
    ['start+end', { start: true, end: true, ready: true, correlationId: 8n }, { S: 9, E: 1.5, R: 1, C: 8n }],
    ['padding', NOT_READY, { S: 5, E: 0.5, R: 0, C: 0n }],
  ];
  for (const [name, values, expected] of table) {
    const got = read(values);
    for (const [tensor, v] of Object.entries(expected)) assert.equal(got[tensor].v, v, `${name}: ${tensor}`);
    assert.deepEqual(got.S.shape, [1, 1]);
  }
  assert.deepEqual(
    Object.values(read(NOT_READY)).map((t) => t.datatype),
    ['INT32', 'FP32', 'BOOL', 'UINT64'],
  );

  const unbatched = compileControls(
    config(control('S', 'CONTROL_SEQUENCE_START', 'int32_false_true: [ 0, 1 ]'), 0),
  );
  assert.deepEqual(controlTensors(unbatched, NOT_READY)[0].shape, [1]);
  assert.equal(unbatched.ready, undefined, 'controls the config does not name are not sent');
});

test('controls: CORRID in every allowed datatype, from uint64 and string ids', () => {
  const max = 2n ** 64n - 1n;
  const cases: [Parameters<typeof encodeCorrelationId>[0], bigint | string, string][] = [
    ['UINT64', max, 'ffffffffffffffff'],
    ['INT64', max, 'ffffffffffffffff'],
    ['UINT64', 1000n, 'e803000000000000'],
    ['UINT32', 2n ** 32n + 7n, '07000000'],
    ['INT32', 2n ** 31n, '00000080'],
    ['UINT64', '1002', 'ea03000000000000'],
    ['UINT64', 'not-a-number', '0000000000000000'],
    ['BYTES', 'abc', '03000000616263'],
    ['BYTES', 42n, '020000003432'],
  ];
  for (const [datatype, id, hex] of cases) {
    assert.equal(encodeCorrelationId(datatype, id).toString('hex'), hex, `${datatype} ${String(id)}`);
  }
  const spec = compileControls(config(control('C', 'CONTROL_SEQUENCE_CORRID', 'data_type: TYPE_STRING')));
  const [c] = controlTensors(spec, { start: true, end: false, ready: true, correlationId: 'seq-1' });
  assert.equal(c.datatype, 'BYTES');
  assert.equal(c.data.subarray(4).toString(), 'seq-1');
});
