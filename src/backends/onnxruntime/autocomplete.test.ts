import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NereidError } from '../../common/errors.js';
import { autoCompleteFromModel, defaultMaxBatchSize } from './autocomplete.js';
import type { IoMeta, ModelIo } from './protocol.js';
import { modelConfig } from './onnxruntime.testkit.js';
import { validateAgainstModel } from './validate.js';

const t = (name: string, ortType: string, shape: number[]): IoMeta => ({
  name,
  isTensor: true,
  ortType,
  shape,
});
const dynamic: ModelIo = {
  inputs: [t('INPUT0', 'float32', [-1, 16]), t('INPUT1', 'int64', [-1, -1])],
  outputs: [t('OUTPUT0', 'string', [-1, 16]), t('SCALAR', 'bool', [-1])],
};
const fixed: ModelIo = { inputs: [t('X', 'float16', [1, 16])], outputs: [t('Y', 'uint8', [])] };
const code = (c: string, text: string) => (e: NereidError) => e.code === c && e.message.includes(text);

void test('dynamic first dims: max_batch_size from default-max-batch-size, batch dim stripped', () => {
  const { config, notes } = autoCompleteFromModel(modelConfig({ name: 'm' }), dynamic, 4);
  assert.equal(config.max_batch_size, 4);
  assert.deepEqual(config.input, [
    { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] },
    { name: 'INPUT1', data_type: 'TYPE_INT64', dims: [-1] },
  ]);
  assert.deepEqual(config.output, [
    { name: 'OUTPUT0', data_type: 'TYPE_STRING', dims: [16] },
    // A per-item scalar is [1] reshaped to [], as Triton writes it.
    { name: 'SCALAR', data_type: 'TYPE_BOOL', dims: [1], reshape: { shape: [] } },
  ]);
  assert.ok(config.dynamic_batching, 'batching model gets a dynamic batcher');
  assert.equal(notes.length, 1);
});

void test('fixed shapes: max_batch_size 0 and the full dims', () => {
  const { config } = autoCompleteFromModel(modelConfig({ name: 'm' }), fixed, 4);
  assert.equal(config.max_batch_size, 0);
  assert.deepEqual(config.input, [{ name: 'X', data_type: 'TYPE_FP16', dims: [1, 16] }]);
  assert.deepEqual(config.output, [{ name: 'Y', data_type: 'TYPE_UINT8', dims: [1] }]);
  assert.equal(config.dynamic_batching, undefined);
});

void test('only what is missing is filled; a given max_batch_size is kept', () => {
  const given = modelConfig({
    name: 'm',
    max_batch_size: 2,
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] }],
    sequence_batching: { max_sequence_idle_microseconds: 0, control_input: [], state: [] },
  });
  const { config } = autoCompleteFromModel(given, dynamic, 4);
  assert.equal(config.max_batch_size, 2);
  assert.deepEqual(config.input, given.input);
  assert.equal(config.output.length, 2);
  assert.equal(config.dynamic_batching, undefined, 'no dynamic batcher beside a sequence batcher');
  assert.equal(given.output.length, 0, 'the caller’s config is not modified');
});

void test('a config with inputs and outputs is returned as it is', () => {
  const full = modelConfig({
    name: 'm',
    input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [1] }],
    output: [{ name: 'B', data_type: 'TYPE_FP32', dims: [1] }],
  });
  assert.equal(autoCompleteFromModel(full, dynamic, 4).config, full);
});

void test('non-zero max_batch_size on a model that cannot batch fails like Triton', () => {
  assert.throws(
    () => autoCompleteFromModel(modelConfig({ name: 'm', max_batch_size: 8 }), fixed, 4),
    code('INVALID_ARG', 'model does not support batching while non-zero max_batch_size is specified'),
  );
});

void test('default-max-batch-size comes from the backend config', () => {
  assert.equal(defaultMaxBatchSize({}), 4);
  assert.equal(defaultMaxBatchSize({ 'default-max-batch-size': '16' }), 16);
  assert.throws(
    () => defaultMaxBatchSize({ 'default-max-batch-size': 'x' }),
    code('INVALID_ARG', 'default-max-batch-size'),
  );
  assert.equal(autoCompleteFromModel(modelConfig({ name: 'm' }), dynamic, 0).config.max_batch_size, 0);
});

void test('types Triton has no name for are refused', () => {
  const odd: ModelIo = { inputs: [t('Q', 'int4', [-1])], outputs: [t('R', 'float32', [-1])] };
  assert.throws(() => autoCompleteFromModel(modelConfig({ name: 'm' }), odd, 4), code('UNSUPPORTED', "'Q'"));
});

void test('validation accepts what auto-complete produced', () => {
  validateAgainstModel(autoCompleteFromModel(modelConfig({ name: 'm' }), dynamic, 4).config, dynamic);
  validateAgainstModel(autoCompleteFromModel(modelConfig({ name: 'm' }), fixed, 4).config, fixed);
});

void test('validation names the tensor that disagrees with the model', () => {
  const base = autoCompleteFromModel(modelConfig({ name: 'm' }), dynamic, 4).config;
  const withInput = (i: number, patch: object) => ({
    ...base,
    input: base.input.map((x, j) => (j === i ? { ...x, ...patch } : x)),
  });
  assert.throws(
    () => validateAgainstModel(withInput(0, { data_type: 'TYPE_INT32' }), dynamic),
    code(
      'INVALID_ARG',
      "configuration expects datatype TYPE_INT32 for input 'INPUT0', model provides TYPE_FP32",
    ),
  );
  assert.throws(
    () => validateAgainstModel(withInput(0, { dims: [8] }), dynamic),
    code('INVALID_ARG', "tensor 'INPUT0'"),
  );
  assert.throws(
    () => validateAgainstModel(withInput(0, { name: 'NOPE' }), dynamic),
    code('INVALID_ARG', "unexpected inference input 'NOPE', allowed inputs are: INPUT0, INPUT1"),
  );
  // A model -1 accepts a fixed input dim; outputs must match exactly.
  validateAgainstModel(withInput(1, { dims: [5] }), dynamic);
  const out = { ...base, output: [{ ...base.output[0], dims: [-1] }, base.output[1]] };
  assert.throws(() => validateAgainstModel(out, dynamic), code('INVALID_ARG', "tensor 'OUTPUT0'"));
  const missing = { ...base, input: base.input.slice(0, 1) };
  assert.throws(
    () => validateAgainstModel(missing, dynamic),
    code('INVALID_ARG', 'configuration expects 1 inputs, model provides 2'),
  );
  const unbatched = { ...base, max_batch_size: 0 };
  assert.throws(
    () => validateAgainstModel(unbatched, dynamic),
    code('INVALID_ARG', 'the model expects 2 dimensions'),
  );
  const fixedBatched = {
    ...autoCompleteFromModel(modelConfig({ name: 'm' }), fixed, 4).config,
    max_batch_size: 4,
  };
  assert.throws(
    () => validateAgainstModel(fixedBatched, fixed),
    code('INVALID_ARG', 'first dimension must be -1'),
  );
});
