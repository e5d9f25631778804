// AutoCompleteConfig follows pb_utils.ModelConfig's rules; the lookup helpers read Triton's JSON form.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AutoCompleteConfig,
  dataTypeFromConfig,
  dataTypeToConfig,
  getInputConfigByName,
  getParameter,
  usingDecoupledTransactionPolicy,
  type ModelConfigJson,
} from './config.js';

const base = (): ModelConfigJson => ({
  name: 'm',
  max_batch_size: 0,
  input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [4] }],
  output: [],
  parameters: { k: { string_value: 'v' } },
});

describe('sdk config helpers', () => {
  it('look up tensors, parameters and the transaction policy', () => {
    const c = base();
    assert.deepEqual(getInputConfigByName(c, 'IN')?.dims, [4]);
    assert.equal(getInputConfigByName(c, 'OUT'), undefined);
    assert.equal(getParameter(c, 'k'), 'v');
    assert.equal(usingDecoupledTransactionPolicy(c), false);
    assert.equal(dataTypeFromConfig('TYPE_STRING'), 'BYTES');
    assert.equal(dataTypeToConfig('FP16'), 'TYPE_FP16');
    assert.throws(() => dataTypeFromConfig('TYPE_NOPE'), /unknown config data type/);
  });

  it('AutoCompleteConfig adds tensors, merges agreeing ones and refuses contradictions', () => {
    const a = new AutoCompleteConfig(base());
    a.addInput({ name: 'IN', data_type: 'TYPE_FP32', dims: [4] });
    a.addOutput({ name: 'OUT', data_type: 'TYPE_INT64', dims: [-1] });
    assert.deepEqual(
      a.asObject().output.map((o) => [o.name, o.data_type]),
      [['OUT', 'TYPE_INT64']],
    );
    assert.equal(a.asObject().input.length, 1);
    assert.throws(
      () => a.addInput({ name: 'IN', data_type: 'TYPE_INT32', dims: [4] }),
      /TYPE_INT32 .* but TYPE_FP32/,
    );
    assert.throws(() => a.addInput({ name: 'IN', data_type: 'TYPE_FP32', dims: [5] }), /dims \[5\]/);
  });

  it('AutoCompleteConfig: max_batch_size may not shrink below the config’s; schedulers must agree', () => {
    const a = new AutoCompleteConfig({ ...base(), max_batch_size: 8 });
    assert.throws(() => a.setMaxBatchSize(4), /specified max_batch_size 8/);
    a.setMaxBatchSize(16).setDynamicBatching().setModelTransactionPolicy({ decoupled: true });
    const c = a.asObject();
    assert.equal(c.max_batch_size, 16);
    assert.deepEqual(c.dynamic_batching, {});
    assert.equal(usingDecoupledTransactionPolicy(c), true);
    const seq = new AutoCompleteConfig({ ...base(), sequence_batching: {} });
    assert.throws(() => seq.setDynamicBatching(), /other than dynamic batching/);
  });
});
