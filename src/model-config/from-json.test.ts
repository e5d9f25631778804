import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../common/errors.js';
import { parseModelConfigJson } from './from-json.js';

const ORIGIN = 'config override';
const parse = (v: unknown) => parseModelConfigJson(typeof v === 'string' ? v : JSON.stringify(v), ORIGIN);

function jsonError(v: unknown, options?: { maxLength?: number }): string {
  try {
    parseModelConfigJson(typeof v === 'string' ? v : JSON.stringify(v), ORIGIN, options);
  } catch (err) {
    assert.ok(err instanceof NereidError, `not a NereidError: ${String(err)}`);
    assert.equal(err.code, 'INVALID_ARG');
    return err.message;
  }
  assert.fail(`expected an error for ${JSON.stringify(v)}`);
}

void test('a typical load-API config: proto names, enum names, proto3 defaults', () => {
  const c = parse({
    name: 'm',
    backend: 'onnxruntime',
    max_batch_size: 8,
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] }],
    instance_group: [{ kind: 'KIND_CPU', count: 2 }],
    dynamic_batching: { max_queue_delay_microseconds: 100 },
    parameters: { k: { string_value: 'v' } },
  });
  assert.equal(c.platform, '');
  assert.deepEqual(c.input[0], {
    name: 'INPUT0',
    data_type: 'TYPE_FP32',
    format: 'FORMAT_NONE',
    dims: [16],
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
    is_non_linear_format_io: false,
  });
  assert.equal(c.instance_group[0].name, '');
  assert.deepEqual(c.instance_group[0].gpus, []);
  assert.deepEqual(c.dynamic_batching, {
    preferred_batch_size: [],
    max_queue_delay_microseconds: 100,
    preserve_ordering: false,
    priority_levels: 0,
    default_priority_level: 0,
    priority_queue_policy: {},
  });
  assert.deepEqual(c.parameters, { k: { string_value: 'v' } });
  assert.deepEqual(c.version_policy, {});
  assert.equal(c.sequence_batching, undefined);
});

void test('lowerCamelCase names, 64-bit integers as strings, enums by number or in lower case, null = unset', () => {
  const c = parse({
    maxBatchSize: '4',
    input: [{ name: 'a', dataType: 11, dims: ['3', -1], format: 'format_nchw' }],
    versionPolicy: { specific: { versions: ['1', 2] } },
    dynamicBatching: {
      priorityQueuePolicy: { '2': { defaultTimeoutMicroseconds: '1000' } },
      priorityLevels: 2,
    },
    sequence_batching: null,
    optimization: null,
  });
  assert.equal(c.max_batch_size, 4);
  assert.equal(c.input[0].data_type, 'TYPE_FP32');
  assert.equal(c.input[0].format, 'FORMAT_NCHW');
  assert.deepEqual(c.input[0].dims, [3, -1]);
  assert.deepEqual(c.version_policy, { specific: { versions: [1, 2] } });
  assert.equal(c.dynamic_batching?.priority_queue_policy['2'].default_timeout_microseconds, 1000);
  assert.equal(c.sequence_batching, undefined);
  assert.equal(c.optimization, undefined);
});

void test('floats accept numbers, numeric strings and NaN/Infinity', () => {
  const c = parse({
    sequence_batching: {
      direct: { minimum_slot_utilization: '0.25' },
      control_input: [{ control: [{ fp32_false_true: [0, 'Infinity', '-Infinity', 'NaN', 1.5] }] }],
    },
  });
  assert.equal(c.sequence_batching?.direct?.minimum_slot_utilization, 0.25);
  assert.deepEqual(c.sequence_batching?.control_input[0].control[0].fp32_false_true, [
    0,
    Infinity,
    -Infinity,
    NaN,
    1.5,
  ]);
});

void test('oneof members and map keys', () => {
  const c = parse({
    model_warmup: [{ inputs: { X: { data_type: 'TYPE_INT32', dims: [1], zero_data: false } } }],
    parameters: { __proto__: { string_value: 'p' } },
  });
  assert.deepEqual(c.model_warmup[0].inputs.X, { data_type: 'TYPE_INT32', dims: [1], zero_data: false });
  // JSON.parse makes "__proto__" an own key; it must stay an ordinary entry.
  const d = parse('{"parameters":{"__proto__":{"string_value":"p"}}}');
  assert.deepEqual(Object.keys(d.parameters), ['__proto__']);
  assert.equal(Object.getPrototypeOf(d.parameters), Object.prototype);
  assert.equal(c.name, '');
});

void test('unknown fields and wrong types name the path', () => {
  assert.equal(
    jsonError({ input: [{ name: 'a', dimz: [1] }] }),
    "config override: unknown field 'dimz' in message ModelInput; did you mean 'dims'? (at input[0])",
  );
  assert.equal(
    jsonError({ maxBatch: 1 }),
    "config override: unknown field 'maxBatch' in message ModelConfig",
  );
  assert.equal(
    jsonError({ max_batch_size: 1.5 }),
    "config override: field 'max_batch_size' expects int32, got number 1.5 (at max_batch_size)",
  );
  assert.equal(
    jsonError({ name: 5 }),
    "config override: field 'name' expects string, got number 5 (at name)",
  );
  assert.equal(
    jsonError({ input: [{ optional: 'yes' }] }),
    `config override: field 'optional' expects bool, got string "yes" (at input[0].optional)`,
  );
  assert.equal(
    jsonError({ input: [{ data_type: 'FP32' }] }),
    `config override: invalid value string "FP32" for enum field 'data_type' (enum DataType) (at input[0].data_type)`,
  );
  assert.equal(
    jsonError({ input: { name: 'a' } }),
    "config override: field 'input' must be a JSON array, got object (at input)",
  );
  assert.equal(
    jsonError({ parameters: [] }),
    "config override: map field 'parameters' must be a JSON object, got array (at parameters)",
  );
  assert.equal(
    jsonError({ dynamic_batching: { priority_queue_policy: { one: {} } } }),
    `config override: map field 'priority_queue_policy' has uint64 keys, got "one" (at dynamic_batching.priority_queue_policy)`,
  );
  assert.equal(
    jsonError({ input: [null] }),
    "config override: field 'input' cannot hold null inside a list or map (at input[0])",
  );
  assert.equal(jsonError([1]), 'config override: message ModelConfig must be a JSON object, got array');
});

void test('range checks, 2^53 limit, duplicate and oneof conflicts', () => {
  assert.equal(
    jsonError({ max_batch_size: 2147483648 }),
    "config override: value 2147483648 is out of range for int32 (field 'max_batch_size') (at max_batch_size)",
  );
  assert.equal(
    jsonError({ instance_group: [{ rate_limiter: { priority: -1 } }] }),
    "config override: value -1 is out of range for uint32 (field 'priority') (at instance_group[0].rate_limiter.priority)",
  );
  assert.match(jsonError({ input: [{ dims: [2 ** 60] }] }), /beyond 2\^53/);
  assert.match(
    jsonError({ input: [{ dims: ['9007199254740993'] }] }),
    /value 9007199254740993 is beyond 2\^53/,
  );
  assert.equal(
    jsonError({ max_batch_size: '9'.repeat(100000) }),
    `config override: field 'max_batch_size' expects int32, got string "${'9'.repeat(40)}…" (at max_batch_size)`,
  );
  assert.equal(
    jsonError('{"max_batch_size":1,"maxBatchSize":2}'),
    "config override: non-repeated field 'max_batch_size' is specified multiple times in message ModelConfig",
  );
  assert.equal(
    jsonError({ dynamic_batching: {}, sequence_batching: {} }),
    "config override: field 'sequence_batching' is specified along with field 'dynamic_batching', another member of oneof 'scheduling_choice' in message ModelConfig",
  );
});

void test('malformed, deeply nested and oversized JSON are refused gracefully', () => {
  assert.match(jsonError('{"name": '), /^config override: invalid JSON: /);
  assert.equal(
    jsonError('['.repeat(101) + ']'.repeat(101)),
    'config override: JSON nesting depth exceeds maximum allowed limit (100)',
  );
  // Brackets inside strings do not count as nesting.
  assert.equal(parse({ name: '['.repeat(500) }).name.length, 500);
  assert.equal(
    jsonError('{"name":"abcdef"}', { maxLength: 10 }),
    'config override: model configuration JSON is 17 characters, more than the limit of 10',
  );
});
