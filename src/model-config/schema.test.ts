import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ENUMS,
  MESSAGES,
  enumValueByName,
  enumValueByNumber,
  findField,
  isPackable,
  mapEntryFields,
  messageDescriptor,
} from './schema.js';

const numbers = (msg: string): Record<string, number> =>
  Object.fromEntries(messageDescriptor(msg).fields.map((f) => [f.name, f.number]));

void test('every referenced type exists; names and numbers are unique per message', () => {
  for (const msg of MESSAGES.values()) {
    assert.equal(new Set(msg.fields.map((f) => f.name)).size, msg.fields.length, msg.name);
    assert.equal(new Set(msg.fields.map((f) => f.number)).size, msg.fields.length, msg.name);
    for (const f of msg.fields) {
      if (f.type === 'message') assert.ok(MESSAGES.has(f.typeName ?? ''), `${msg.name}.${f.name}`);
      if (f.type === 'enum') assert.ok(ENUMS.has(f.typeName ?? ''), `${msg.name}.${f.name}`);
      assert.equal(f.label === 'map', f.keyType !== undefined, `${msg.name}.${f.name}`);
      assert.ok(f.number >= 1 && f.number < 2 ** 29);
    }
  }
  for (const en of ENUMS.values()) {
    assert.deepEqual(
      en.values.map((v) => v.number),
      en.values.map((_v, i) => i),
      en.name,
    );
  }
});

void test('ModelConfig field numbers match model_config.proto', () => {
  assert.deepEqual(numbers('ModelConfig'), {
    name: 1,
    platform: 2,
    backend: 17,
    runtime: 25,
    version_policy: 3,
    max_batch_size: 4,
    input: 5,
    output: 6,
    batch_input: 20,
    batch_output: 21,
    optimization: 12,
    dynamic_batching: 11,
    sequence_batching: 13,
    ensemble_scheduling: 15,
    instance_group: 7,
    default_model_filename: 8,
    cc_model_filenames: 9,
    metric_tags: 10,
    parameters: 14,
    model_warmup: 16,
    model_operations: 18,
    model_transaction_policy: 19,
    model_repository_agents: 23,
    response_cache: 24,
    model_metrics: 26,
  });
  const cfg = messageDescriptor('ModelConfig');
  assert.deepEqual(cfg.oneofs, ['scheduling_choice']);
  assert.equal(findField(cfg, 'parameters')?.typeName, 'ModelParameter');
  assert.equal(findField(cfg, 'max_batch_size')?.type, 'int32');
});

void test('nested message field numbers match model_config.proto', () => {
  assert.deepEqual(numbers('ModelInput'), {
    name: 1,
    data_type: 2,
    format: 3,
    dims: 4,
    reshape: 5,
    is_shape_tensor: 6,
    allow_ragged_batch: 7,
    optional: 8,
    is_non_linear_format_io: 9,
  });
  assert.deepEqual(numbers('ModelOutput'), {
    name: 1,
    data_type: 2,
    dims: 3,
    reshape: 5,
    label_filename: 4,
    is_shape_tensor: 6,
    is_non_linear_format_io: 7,
  });
  assert.deepEqual(numbers('ModelInstanceGroup'), {
    name: 1,
    kind: 4,
    count: 2,
    rate_limiter: 6,
    gpus: 3,
    secondary_devices: 8,
    profile: 5,
    passive: 7,
    host_policy: 9,
  });
  assert.deepEqual(numbers('ModelDynamicBatching'), {
    preferred_batch_size: 1,
    max_queue_delay_microseconds: 2,
    preserve_ordering: 3,
    priority_levels: 4,
    default_priority_level: 5,
    default_queue_policy: 6,
    priority_queue_policy: 7,
  });
  assert.deepEqual(numbers('ModelQueuePolicy'), {
    timeout_action: 1,
    default_timeout_microseconds: 2,
    allow_timeout_override: 3,
    max_queue_size: 4,
  });
  assert.deepEqual(numbers('ModelSequenceBatching'), {
    direct: 3,
    oldest: 4,
    max_sequence_idle_microseconds: 1,
    control_input: 2,
    state: 5,
    iterative_sequence: 6,
  });
  assert.deepEqual(numbers('ModelSequenceBatching.Control'), {
    kind: 1,
    int32_false_true: 2,
    fp32_false_true: 3,
    bool_false_true: 5,
    data_type: 4,
  });
  assert.deepEqual(numbers('ModelEnsembling.Step'), {
    model_name: 1,
    model_version: 2,
    input_map: 3,
    output_map: 4,
    model_namespace: 5,
  });
  assert.deepEqual(numbers('ModelWarmup.Input'), {
    data_type: 1,
    dims: 2,
    zero_data: 3,
    random_data: 4,
    input_data_file: 5,
  });
  assert.equal(findField(messageDescriptor('ModelWarmup.Input'), 'random_data')?.oneof, 'input_data_type');
  assert.equal(
    findField(messageDescriptor('ModelDynamicBatching'), 'priority_queue_policy')?.keyType,
    'uint64',
  );
});

void test('enums by name and number', () => {
  assert.equal(enumValueByName('DataType', 'TYPE_STRING'), 13);
  assert.equal(enumValueByName('DataType', 'TYPE_BF16'), 14);
  assert.equal(enumValueByNumber('ModelInstanceGroup.Kind', 2), 'KIND_CPU');
  assert.equal(enumValueByNumber('ModelSequenceBatching.Control.Kind', 3), 'CONTROL_SEQUENCE_CORRID');
  assert.equal(enumValueByName('ModelQueuePolicy.TimeoutAction', 'DELAY'), 1);
  assert.equal(enumValueByName('DataType', 'FP32'), undefined);
});

void test('wire helpers: JSON names, packing, map entries', () => {
  const input = messageDescriptor('ModelInput');
  assert.equal(findField(input, 'allow_ragged_batch')?.jsonName, 'allowRaggedBatch');
  assert.equal(findField(messageDescriptor('ModelConfig'), 'max_batch_size')?.jsonName, 'maxBatchSize');
  const dims = findField(input, 'dims');
  const name = findField(input, 'name');
  assert.ok(dims && name);
  assert.equal(isPackable(dims), true);
  assert.equal(isPackable(name), false);
  const params = findField(messageDescriptor('ModelConfig'), 'parameters');
  assert.ok(params);
  const [k, v] = mapEntryFields(params);
  assert.deepEqual(
    [k.number, k.type, v.number, v.type, v.typeName],
    [1, 'string', 2, 'message', 'ModelParameter'],
  );
  assert.throws(() => mapEntryFields(dims));
});
