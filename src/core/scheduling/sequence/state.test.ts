import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
} from '../../../model-config/index.js';
import type { FrozenModelConfig } from '../../../model-config/model-config.js';
import { captureStates, compileStates, initialStates, zeroData } from './state.js';

function config(states: string, maxBatch = 8): FrozenModelConfig {
  return freezeModelConfig(
    normalizeModelConfig(
      parseModelConfigText(
        `name: "m" platform: "onnxruntime_onnx" max_batch_size: ${maxBatch}
         input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
         sequence_batching { state [ ${states} ] }`,
        'config.pbtxt',
      ),
    ),
  );
}

const state = (extra = '', dims = '[ 2, -1 ]', type = 'TYPE_FP32'): string =>
  `{ input_name: "IN_S" output_name: "OUT_S" data_type: ${type} dims: ${dims} ${extra} }`;

test('state: zeros with variable dims as 1 and a batch dim, or initial_state zero_data / data_file', () => {
  const [zero] = compileStates(config(state()));
  assert.deepEqual([zero.inputName, zero.outputName, zero.datatype], ['IN_S', 'OUT_S', 'FP32']);
  assert.deepEqual(zero.initial.shape, [1, 2, 1]);
  assert.deepEqual(zero.initial.data, Buffer.alloc(8));
  assert.equal(zero.initial.name, 'IN_S');

  const [unbatched] = compileStates(config(state(), 0));
  assert.deepEqual(unbatched.initial.shape, [2, 1]);

  const [strings] = compileStates(config(state('', '[ 3 ]', 'TYPE_STRING')));
  assert.deepEqual(strings.initial.data, Buffer.alloc(12), 'three empty strings');

  const init = (body: string): string =>
    state(`initial_state: { data_type: TYPE_FP32 dims: [ 2, 3 ] name: "init" ${body} }`);
  const [zeros] = compileStates(config(init('zero_data: true')));
  assert.deepEqual(zeros.initial.shape, [1, 2, 3]);
  assert.equal(zeros.initial.data.length, 24);

  const file = Buffer.alloc(28);
  for (let i = 0; i < 7; i++) file.writeFloatLE(i + 0.5, i * 4);
  const read: string[] = [];
  const [fromFile] = compileStates(config(init('data_file: "state.bin"')), (name) => {
    read.push(name);
    return file;
  });
  assert.deepEqual(read, ['state.bin']);
  assert.deepEqual(fromFile.initial.data, file.subarray(0, 24), 'the first 24 bytes');
  assert.throws(() => compileStates(config(init('data_file: "state.bin"')), () => Buffer.alloc(10)), {
    message: 'initial_state setting expects 24 bytes, but the data provided from state.binonly has 10 bytes.',
  });
  assert.throws(() => compileStates(config(init('data_file: "state.bin"'))), { code: 'UNSUPPORTED' });
});

test('state: Triton’s checks of initial_state', () => {
  const bad = (initial: string): string => state(`initial_state: { ${initial} }`);
  const cases: [string, string][] = [
    [
      'data_type: TYPE_INT32 dims: [ 2, 1 ] name: "x" zero_data: true',
      "The data type used for 'initial_state' field of state 'IN_S' does not match the state data type.",
    ],
    [
      'data_type: TYPE_FP32 dims: [ 2, 1 ] zero_data: true',
      "Field 'name' must be set when using initial_state for state input 'IN_S'.",
    ],
    [
      'data_type: TYPE_FP32 dims: [ 2 ] name: "x" zero_data: true',
      "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input 'IN_S'. 1 != 2",
    ],
    [
      'data_type: TYPE_FP32 dims: [ 2, -1 ] name: "x" zero_data: true',
      "'initial_state' field for state input name 'IN_S' contains variable dimensions.",
    ],
    [
      'data_type: TYPE_FP32 dims: [ 3, 1 ] name: "x" zero_data: true',
      "'initial_state' dim for input name 'IN_S' doesn't match 'state' dim description. 3 != 2",
    ],
    [
      'data_type: TYPE_FP32 dims: [ 2, 1 ] name: "x"',
      "initial_state setting expects state'IN_S' to have state_data set",
    ],
  ];
  for (const [initial, message] of cases) {
    assert.throws(() => compileStates(config(bad(initial))), { code: 'INVALID_ARG', message }, initial);
  }
  const two = state(
    'initial_state: [ { data_type: TYPE_FP32 dims: [ 2, 1 ] name: "a" zero_data: true }, ' +
      '{ data_type: TYPE_FP32 dims: [ 2, 1 ] name: "b" zero_data: true } ]',
  );
  assert.throws(() => compileStates(config(two)), {
    message:
      "initial_state field for state input 'IN_S' must contain exactly one or zero element. Found '2' elements.",
  });
});

test('state: outputs become the next inputs under the input name; others are ignored', () => {
  const specs = compileStates(config(state()));
  const states = initialStates(specs);
  const grown = {
    name: 'OUT_S',
    datatype: 'FP32' as const,
    shape: [1, 2, 4],
    data: zeroData('FP32', [1, 2, 4]),
  };
  captureStates(
    specs,
    [{ name: 'OUTPUT', datatype: 'INT32', shape: [1, 1], data: Buffer.alloc(4) }, grown],
    states,
  );
  const next = states.get('IN_S')!;
  assert.equal(next.name, 'IN_S');
  assert.deepEqual(next.shape, [1, 2, 4], 'a variable dim may grow');
  assert.equal(next.data, grown.data, 'kept as it is, no copy');
  assert.equal(states.size, 1);
});
