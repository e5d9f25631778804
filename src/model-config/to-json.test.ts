import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DENSENET_ONNX,
  DIRECT_STATEFUL,
  ENSEMBLE_IMAGE,
  ENSEMBLE_INFLIGHT,
  KITCHEN_SINK,
  SIMPLE,
  SIMPLE_DYNA_SEQUENCE,
  SIMPLE_IDENTITY_PYTHON,
  SIMPLE_SEQUENCE,
} from './example-configs.testkit.js';
import { freezeModelConfig } from './freeze.js';
import { parseModelConfigJson } from './from-json.js';
import { normalizeModelConfig } from './normalize.js';
import { parseModelConfigText } from './pbtxt/parser.js';
import { modelConfigToJson } from './to-json.js';
import type { JsonObject } from './json.js';

const parse = (text: string) => parseModelConfigText(text, 'config.pbtxt');
const jsonText = (text: string): string =>
  JSON.stringify(modelConfigToJson(normalizeModelConfig(parse(text))));
const count = (haystack: string, needle: string): number => haystack.split(needle).length - 1;

void test('top-level keys print in proto declaration order; unset sub-messages are left out', () => {
  const j = modelConfigToJson(normalizeModelConfig(parse(SIMPLE)));
  assert.deepEqual(Object.keys(j), [
    'name',
    'platform',
    'backend',
    'runtime',
    'version_policy',
    'max_batch_size',
    'input',
    'output',
    'batch_input',
    'batch_output',
    'optimization',
    'instance_group',
    'default_model_filename',
    'cc_model_filenames',
    'metric_tags',
    'parameters',
    'model_warmup',
  ]);
  const sink = modelConfigToJson(normalizeModelConfig(parse(KITCHEN_SINK)));
  assert.deepEqual(Object.keys(sink).slice(-5), [
    'model_operations',
    'model_transaction_policy',
    'model_repository_agents',
    'response_cache',
    'model_metrics',
  ]);
  assert.deepEqual(sink.model_transaction_policy, { decoupled: false });
});

void test('dims, reshape, versions, queue delays and timeouts print as numbers (as Triton QA L0_config_json checks)', () => {
  const base = `
    name: "m" backend: "onnxruntime"
    input [ { name: "I0" data_type: TYPE_FP32 dims: [ 16 ] reshape: { shape: [ 16 ] } } ]
    output [ { name: "O0" data_type: TYPE_FP32 dims: [ 16 ] reshape: { shape: [ 16 ] } } ]
    version_policy: { specific: { versions: [1] }}`;
  const db = jsonText(`${base}
    dynamic_batching: { max_queue_delay_microseconds: 42
      default_queue_policy: { default_timeout_microseconds: 123 }
      priority_queue_policy: { key: 1  value: { default_timeout_microseconds: 123 }}
      priority_queue_policy: { key: 2  value: { default_timeout_microseconds: 123 }}}`);
  assert.equal(count(db, '"dims":[16]'), 2);
  assert.equal(count(db, '"reshape":{"shape":[16]}'), 2);
  assert.equal(count(db, '"version_policy":{"specific":{"versions":[1]}}'), 1);
  assert.equal(count(db, '"max_queue_delay_microseconds":42'), 1);
  assert.equal(count(db, '"default_timeout_microseconds":123'), 3);
  assert.equal(count(db, '"priority_levels":0,"default_priority_level":0'), 1);
  const sb = jsonText(`${base}
    sequence_batching: { max_sequence_idle_microseconds: 42 oldest: { max_queue_delay_microseconds: 987 } }`);
  assert.equal(count(sb, '"max_sequence_idle_microseconds":42'), 1);
  assert.equal(count(sb, '"oldest":{'), 1);
  assert.equal(count(sb, '"max_queue_delay_microseconds":987'), 1);
  assert.equal(count(jsonText(ENSEMBLE_IMAGE), '"model_version":-1'), 3);
  const warm = jsonText(`${base}
    model_warmup [{ name: "w" batch_size: 1 inputs [{ key: "I0" value: { data_type: TYPE_FP32 dims: 16 zero_data: true } }] }]`);
  assert.equal(count(warm, '"dims":[16]'), 3);
});

void test('the 64-bit fields Triton does not fix stay strings', () => {
  const j = modelConfigToJson(
    normalizeModelConfig(
      parse(`${DIRECT_STATEFUL}
        optimization { cuda { graph_spec { input { key: "INPUT" value { dim: [ 4, 4 ] } } graph_lower_bound { input { key: "INPUT" value { dim: 2 } } } } } }`),
    ),
  );
  const sb = j.sequence_batching as JsonObject;
  const state = (sb.state as JsonObject[])[0];
  assert.deepEqual(state.dims, [-1]);
  assert.deepEqual((state.initial_state as JsonObject[])[0].dims, ['1']);
  assert.equal(sb.max_sequence_idle_microseconds, 5000000);
  assert.deepEqual(sb.direct, { max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 });
  const spec = ((j.optimization as JsonObject).cuda as JsonObject).graph_spec as JsonObject[];
  assert.deepEqual(spec[0].input, { INPUT: { dim: ['4', '4'] } });
  assert.deepEqual((spec[0].graph_lower_bound as JsonObject).input, { INPUT: { dim: ['2'] } });
  const g = modelConfigToJson(
    parse('instance_group { kind: KIND_CPU secondary_devices { kind: KIND_NVDLA device_id: 3 } }'),
  );
  assert.deepEqual((g.instance_group as JsonObject[])[0].secondary_devices, [
    { kind: 'KIND_NVDLA', device_id: '3' },
  ]);
});

void test('floats print like protobuf prints a 32-bit float; doubles as they are; non-finite as strings', () => {
  const j = modelConfigToJson(
    parse(`
      sequence_batching { direct { minimum_slot_utilization: 0.1 }
        control_input { control { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0.3, nan, -inf ] } } }
      model_metrics { metric_control { histogram_options { buckets: [ 0.1, 16777217, inf ] } } }`),
  );
  const sb = j.sequence_batching as JsonObject;
  assert.equal((sb.direct as JsonObject).minimum_slot_utilization, 0.1);
  const control = ((sb.control_input as JsonObject[])[0].control as JsonObject[])[0];
  assert.deepEqual(control.fp32_false_true, [0.3, 'NaN', '-Infinity']);
  assert.deepEqual(control.bool_false_true, []);
  const mc = ((j.model_metrics as JsonObject).metric_control as JsonObject[])[0];
  assert.deepEqual(mc.histogram_options, { buckets: [0.1, 16777217, 'Infinity'] });
  assert.equal(mc.metric_identifier, undefined);
  // 16777217 is not a float32; the float field prints the float it became.
  const f = modelConfigToJson(parse('sequence_batching { direct { minimum_slot_utilization: 16777217 } }'));
  assert.equal(((f.sequence_batching as JsonObject).direct as JsonObject).minimum_slot_utilization, 16777216);
});

void test('oneof members print only when set, even when set to their default', () => {
  const j = modelConfigToJson(
    parse(
      `model_warmup { inputs { key: "a" value { dims: 1 zero_data: false } } inputs { key: "b" value { dims: 1 } } }`,
    ),
  );
  const inputs = (j.model_warmup as JsonObject[])[0].inputs as JsonObject;
  assert.deepEqual(inputs.a, { data_type: 'TYPE_INVALID', dims: [1], zero_data: false });
  assert.deepEqual(inputs.b, { data_type: 'TYPE_INVALID', dims: [1] });
});

void test('round trip: pbtxt → JSON → parseModelConfigJson gives the same config', () => {
  for (const text of [
    DENSENET_ONNX,
    SIMPLE,
    SIMPLE_IDENTITY_PYTHON,
    SIMPLE_SEQUENCE,
    SIMPLE_DYNA_SEQUENCE,
    DIRECT_STATEFUL,
    ENSEMBLE_IMAGE,
    ENSEMBLE_INFLIGHT,
    KITCHEN_SINK,
  ]) {
    const raw = parse(text);
    assert.deepEqual(parseModelConfigJson(JSON.stringify(modelConfigToJson(raw)), 'rt'), raw);
    const normalized = normalizeModelConfig(raw);
    const back = parseModelConfigJson(JSON.stringify(modelConfigToJson(normalized)), 'rt');
    assert.deepEqual(back, normalized, `round trip of ${normalized.name}`);
    assert.deepEqual(modelConfigToJson(back), modelConfigToJson(normalized));
  }
});

void test('a frozen config prints the same and cannot be changed', () => {
  const cfg = normalizeModelConfig(parse(SIMPLE_DYNA_SEQUENCE));
  const frozen = freezeModelConfig(cfg);
  assert.deepEqual(modelConfigToJson(frozen), modelConfigToJson(cfg));
  assert.ok(Object.isFrozen(frozen));
  assert.ok(Object.isFrozen(frozen.input[0].dims));
  assert.ok(Object.isFrozen(frozen.sequence_batching?.control_input[0].control[0]));
  assert.ok(Object.isFrozen(frozen.parameters.execute_delay_ms));
  assert.throws(() => {
    (frozen.input[0].dims as number[]).push(3);
  }, TypeError);
  assert.throws(() => {
    (frozen as { name: string }).name = 'other';
  }, TypeError);
  // The argument is copied, not frozen in place.
  cfg.name = 'still mutable';
  assert.equal(frozen.name, 'simple_dyna_sequence');
});
