import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
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
} from '../example-configs.testkit.js';
import { parseModelConfigText, parseTextMessage } from './parser.js';

const FILE = '/repo/m/config.pbtxt';
const parse = (text: string) => parseModelConfigText(text, FILE);

function parseError(text: string): string {
  try {
    parse(text);
  } catch (err) {
    assert.ok(err instanceof NereidError, `not a NereidError: ${String(err)}`);
    assert.equal(err.code, 'INVALID_ARG');
    return err.message;
  }
  assert.fail(`expected a parse error for:\n${text}`);
}

void test('densenet_onnx example: values and proto3 defaults', () => {
  const c = parse(DENSENET_ONNX);
  assert.equal(c.name, 'densenet_onnx');
  assert.equal(c.platform, 'onnxruntime_onnx');
  assert.equal(c.backend, '');
  assert.equal(c.max_batch_size, 0);
  assert.deepEqual(c.input, [
    {
      name: 'data_0',
      data_type: 'TYPE_FP32',
      format: 'FORMAT_NCHW',
      dims: [3, 224, 224],
      reshape: { shape: [1, 3, 224, 224] },
      is_shape_tensor: false,
      allow_ragged_batch: false,
      optional: false,
      is_non_linear_format_io: false,
    },
  ]);
  assert.equal(c.output[0].label_filename, 'densenet_labels.txt');
  assert.deepEqual(c.output[0].reshape, { shape: [1, 1000, 1, 1] });
  // Unset lists and maps are empty, unset sub-messages absent, version_policy present but empty.
  assert.deepEqual(c.instance_group, []);
  assert.deepEqual(c.parameters, {});
  assert.deepEqual(c.version_policy, {});
  assert.equal(c.dynamic_batching, undefined);
  assert.equal(c.optimization, undefined);
  assert.equal('sequence_batching' in c, false);
});

void test('simple and simple_identity examples', () => {
  const s = parse(SIMPLE);
  assert.equal(s.max_batch_size, 8);
  assert.deepEqual(
    s.input.map((i) => [i.name, i.data_type, i.dims]),
    [
      ['INPUT0', 'TYPE_INT32', [16]],
      ['INPUT1', 'TYPE_INT32', [16]],
    ],
  );
  const p = parse(SIMPLE_IDENTITY_PYTHON);
  assert.equal(p.backend, 'python');
  assert.deepEqual(p.input[0].dims, [-1]);
  assert.equal(p.output[0].data_type, 'TYPE_STRING');
});

void test('sequence examples: controls, oldest strategy, parameters map in list form', () => {
  const s = parse(SIMPLE_SEQUENCE);
  assert.deepEqual(s.sequence_batching?.control_input[0], {
    name: 'START',
    control: [
      {
        kind: 'CONTROL_SEQUENCE_START',
        int32_false_true: [0, 1],
        fp32_false_true: [],
        bool_false_true: [],
        data_type: 'TYPE_INVALID',
      },
    ],
  });
  assert.equal(s.sequence_batching?.max_sequence_idle_microseconds, 0);
  assert.equal(s.sequence_batching?.direct, undefined);
  assert.equal(s.instance_group[0].kind, 'KIND_CPU');
  assert.equal(s.instance_group[0].count, 0);

  const d = parse(SIMPLE_DYNA_SEQUENCE);
  assert.equal(d.sequence_batching?.max_sequence_idle_microseconds, 10000000);
  assert.deepEqual(d.sequence_batching?.oldest, {
    max_candidate_sequences: 1024,
    preferred_batch_size: [],
    max_queue_delay_microseconds: 10000,
    preserve_ordering: false,
  });
  assert.equal(d.sequence_batching?.control_input[3].control[0].data_type, 'TYPE_UINT64');
  assert.deepEqual(d.parameters, { execute_delay_ms: { string_value: '3' } });
  assert.equal(d.instance_group[0].count, 2);
});

void test('direct strategy and implicit state with initial_state oneof', () => {
  const c = parse(DIRECT_STATEFUL);
  assert.deepEqual(c.sequence_batching?.direct, {
    max_queue_delay_microseconds: 0,
    minimum_slot_utilization: 0,
  });
  assert.deepEqual(c.sequence_batching?.state[0].initial_state, [
    { data_type: 'TYPE_INT32', dims: [1], zero_data: true, name: 'initial state' },
  ]);
  assert.deepEqual(c.sequence_batching?.control_input[0].control[0].fp32_false_true, [0, 1]);
  assert.equal(c.sequence_batching?.state[0].use_growable_memory, false);
});

void test('ensemble examples: map fields with and without commas, max_inflight_requests', () => {
  const e = parse(ENSEMBLE_IMAGE);
  assert.equal(e.platform, 'ensemble');
  assert.equal(e.ensemble_scheduling?.step.length, 3);
  assert.deepEqual(e.ensemble_scheduling?.step[1], {
    model_name: 'classification_model',
    model_version: -1,
    input_map: { FORMATTED_IMAGE: 'preprocessed_image' },
    output_map: { CLASSIFICATION_OUTPUT: 'CLASSIFICATION' },
    model_namespace: '',
  });
  const f = parse(ENSEMBLE_INFLIGHT);
  assert.equal(f.ensemble_scheduling?.max_inflight_requests, 16);
  assert.deepEqual(f.ensemble_scheduling?.step[0].input_map, { RAW_IMAGE: 'IMAGE' });
});

void test('kitchen sink: every remaining section', () => {
  const c = parse(KITCHEN_SINK);
  assert.deepEqual(c.version_policy, { specific: { versions: [1, 3] } });
  assert.equal(c.batch_input[0].kind, 'BATCH_ACCUMULATED_ELEMENT_COUNT');
  assert.deepEqual(c.batch_input[0].source_input, ['INPUT']);
  assert.equal(c.dynamic_batching?.default_queue_policy?.timeout_action, 'DELAY');
  assert.deepEqual(c.dynamic_batching?.priority_queue_policy, {
    '2': {
      timeout_action: 'REJECT',
      default_timeout_microseconds: 0,
      allow_timeout_override: false,
      max_queue_size: 7,
    },
  });
  assert.deepEqual(c.optimization?.execution_accelerators?.cpu_execution_accelerator, [
    { name: 'openvino', parameters: { num_threads: '4' } },
  ]);
  assert.deepEqual(c.optimization?.execution_accelerators?.gpu_execution_accelerator, []);
  assert.deepEqual(c.optimization?.cuda?.graph_spec[0].input, { INPUT: { dim: [8] } });
  assert.equal(c.optimization?.priority, 'PRIORITY_DEFAULT');
  assert.deepEqual(c.instance_group[0].rate_limiter, {
    resources: [
      { name: 'R1', global: false, count: 4 },
      { name: 'R2', global: true, count: 2 },
    ],
    priority: 2,
  });
  assert.deepEqual(c.cc_model_filenames, { '7.5': 'model_T4.onnx' });
  assert.deepEqual(c.metric_tags, { team: 'vision' });
  assert.deepEqual(c.model_warmup[0].inputs.INPUT, { data_type: 'TYPE_FP32', dims: [16], random_data: true });
  assert.equal(c.model_warmup[0].count, 2);
  assert.deepEqual(c.model_operations, { op_library_filename: ['libcustom_ops.so'] });
  assert.deepEqual(c.model_transaction_policy, { decoupled: false });
  assert.deepEqual(c.model_repository_agents?.agents[0].parameters, { 'MD5:1/model.onnx': 'abc' });
  assert.deepEqual(c.response_cache, { enable: true });
  assert.deepEqual(c.model_metrics?.metric_control[0].histogram_options, { buckets: [1, 2, 4, 8] });
});

void test('message bodies with <> and with an optional colon', () => {
  const a = parse('input < name: "a" data_type: TYPE_FP32 dims: 1 >\ninput: { name: "b" }');
  assert.deepEqual(
    a.input.map((i) => i.name),
    ['a', 'b'],
  );
  const b = parse('version_policy: < latest: < num_versions: 2 > >');
  assert.deepEqual(b.version_policy, { latest: { num_versions: 2 } });
  const c = parse('input: [ { name: "x" }, < name: "y" > ]');
  assert.deepEqual(
    c.input.map((i) => i.name),
    ['x', 'y'],
  );
});

void test('repeated fields as lists, as repeated keys, mixed, and empty', () => {
  const c = parse('input { dims: 1 dims: [2, 3] dims: [] dims: 4 }');
  assert.deepEqual(c.input[0].dims, [1, 2, 3, 4]);
  const d = parse('input { dims: [ ] }');
  assert.deepEqual(d.input[0].dims, []);
});

void test('enums by name or number', () => {
  const c = parse('input { data_type: 11 format: FORMAT_NHWC } instance_group { kind: 2 }');
  assert.equal(c.input[0].data_type, 'TYPE_FP32');
  assert.equal(c.input[0].format, 'FORMAT_NHWC');
  assert.equal(c.instance_group[0].kind, 'KIND_CPU');
});

void test('maps: message values, scalar values, list form, uint64 keys, later key wins, missing key/value', () => {
  const c = parse(`
    parameters { key: "k" value { string_value: "v" } }
    parameters: { key: "k2", value: { string_value: "v2" } }
    parameters [ { key: "k" value { string_value: "again" } } ]
    ensemble_scheduling { step { input_map { key: "a" value: "b" } input_map < key: 'c' value: 'd' > output_map {} } }
  `);
  assert.deepEqual(c.parameters, { k: { string_value: 'again' }, k2: { string_value: 'v2' } });
  const step = c.ensemble_scheduling?.step[0];
  assert.deepEqual(step?.input_map, { a: 'b', c: 'd' });
  assert.deepEqual(step?.output_map, { '': '' });
  const d = parse(
    'dynamic_batching { priority_queue_policy { key: 3 value { max_queue_size: 1 } } priority_queue_policy { value { } } }',
  );
  assert.deepEqual(Object.keys(d.dynamic_batching?.priority_queue_policy ?? {}), ['0', '3']);
  assert.equal(d.dynamic_batching?.priority_queue_policy['3'].max_queue_size, 1);
});

void test('map key __proto__ stays an ordinary entry', () => {
  const c = parse('parameters { key: "__proto__" value { string_value: "x" } }');
  assert.deepEqual(Object.keys(c.parameters), ['__proto__']);
  assert.equal(Object.getPrototypeOf(c.parameters), Object.prototype);
});

void test('comments, separators and whitespace', () => {
  const c = parse(`# leading comment
name: "m"; # trailing comment
max_batch_size: 4,
input { name: "a", data_type: TYPE_FP32; dims: [1] };
`);
  assert.equal(c.name, 'm');
  assert.equal(c.max_batch_size, 4);
  assert.deepEqual(c.input[0].dims, [1]);
});

void test('strings: escapes, single quotes, adjacent concatenation, UTF-8', () => {
  const c = parse(String.raw`name: 'a' "b" 'c\''`);
  assert.equal(c.name, "abc'");
  const d = parse(String.raw`name: "tab\there\nnl \x41\101 \u00e9 é"`);
  assert.equal(d.name, 'tab\there\nnl AA é é');
});

void test('numbers: negatives, hex, octal, floats, inf and nan', () => {
  const c = parse(`
    max_batch_size: 0x10
    input { dims: [-1, 010, - 2] }
    sequence_batching { direct { minimum_slot_utilization: 0.5 } control_input { control { fp32_false_true: [1e-3, 2.5f, -inf, inf, nan, 3] } } }
    model_metrics { metric_control { histogram_options { buckets: [ 1.5, -Infinity, 7 ] } } }
  `);
  assert.equal(c.max_batch_size, 16);
  assert.deepEqual(c.input[0].dims, [-1, 8, -2]);
  assert.equal(c.sequence_batching?.direct?.minimum_slot_utilization, 0.5);
  const f = c.sequence_batching?.control_input[0].control[0].fp32_false_true ?? [];
  assert.deepEqual(f.slice(0, 5), [0.001, 2.5, -Infinity, Infinity, NaN]);
  assert.equal(f[5], 3);
  assert.deepEqual(c.model_metrics?.metric_control[0].histogram_options?.buckets, [1.5, -Infinity, 7]);
});

void test('booleans: true/True/t/1 and false/False/f/0', () => {
  const c = parse(`
    sequence_batching { control_input { control { bool_false_true: [false, True, t, 1, False, f, 0, true] } } }
  `);
  assert.deepEqual(c.sequence_batching?.control_input[0].control[0].bool_false_true, [
    false,
    true,
    true,
    true,
    false,
    false,
    false,
    true,
  ]);
});

void test('int64 values up to 2^53 are kept exactly', () => {
  const c = parse('input { dims: [9007199254740991, -9007199254740991] }');
  assert.deepEqual(c.input[0].dims, [9007199254740991, -9007199254740991]);
});

void test('unknown fields, with file, line and column', () => {
  assert.equal(
    parseError('name: "m"\ninput {\n  name: "a"\n  dimz: [1]\n}'),
    "/repo/m/config.pbtxt:4:3: unknown field 'dimz' in message ModelInput; did you mean 'dims'?",
  );
  assert.equal(
    parseError('platfrom: "x"'),
    "/repo/m/config.pbtxt:1:1: unknown field 'platfrom' in message ModelConfig; did you mean 'platform'?",
  );
  assert.equal(
    parseError('instance_group { rate_limiter { resources { nme: "x" } } }'),
    "/repo/m/config.pbtxt:1:45: unknown field 'nme' in message ModelRateLimiter.Resource; did you mean 'name'?",
  );
  // A word near no field gets no suggestion; case alone is a near miss.
  assert.equal(
    parseError('colour_scheme: "x"'),
    "/repo/m/config.pbtxt:1:1: unknown field 'colour_scheme' in message ModelConfig",
  );
  assert.equal(
    parseError('Max_Batch_Size: 4'),
    "/repo/m/config.pbtxt:1:1: unknown field 'Max_Batch_Size' in message ModelConfig; did you mean 'max_batch_size'?",
  );
  assert.equal(
    parseError('parameters { key: "a" val: "b" }'),
    "/repo/m/config.pbtxt:1:23: expected 'key' or 'value' in an entry of map 'parameters', got 'val'",
  );
});

void test('wrong value types', () => {
  assert.equal(
    parseError('max_batch_size: "8"'),
    `/repo/m/config.pbtxt:1:17: field 'max_batch_size' expects an integer (int32), got string "8"`,
  );
  assert.equal(parseError('name: 5'), "/repo/m/config.pbtxt:1:7: field 'name' expects a string, got '5'");
  assert.equal(
    parseError('input { dims: [1.5] }'),
    "/repo/m/config.pbtxt:1:16: field 'dims' expects an integer (int64), got '1.5'",
  );
  assert.equal(
    parseError('input { optional: yes }'),
    "/repo/m/config.pbtxt:1:19: field 'optional' expects a bool (true/false), got 'yes'",
  );
  assert.equal(
    parseError('input { data_type: TYPE_FLOAT32 }'),
    "/repo/m/config.pbtxt:1:20: unknown enumeration value 'TYPE_FLOAT32' for field 'data_type' (enum DataType)",
  );
  assert.equal(
    parseError('input { data_type: 99 }'),
    "/repo/m/config.pbtxt:1:20: unknown enumeration value 99 for field 'data_type' (enum DataType)",
  );
  assert.equal(
    parseError('input { data_type: "TYPE_FP32" }'),
    `/repo/m/config.pbtxt:1:20: expected an enumeration value of DataType for field 'data_type', got string "TYPE_FP32"`,
  );
  assert.equal(
    parseError('input { reshape: 5 }'),
    "/repo/m/config.pbtxt:1:18: expected '{' or '<' to start message ModelTensorReshape, got '5'",
  );
});

void test('out-of-range integers and int64 beyond 2^53', () => {
  assert.equal(
    parseError('max_batch_size: 2147483648'),
    "/repo/m/config.pbtxt:1:17: value 2147483648 is out of range for int32 (field 'max_batch_size')",
  );
  assert.equal(
    parseError('max_batch_size: -2147483649'),
    "/repo/m/config.pbtxt:1:18: value -2147483649 is out of range for int32 (field 'max_batch_size')",
  );
  assert.equal(
    parseError('ensemble_scheduling { max_inflight_requests: -1 }'),
    "/repo/m/config.pbtxt:1:47: value -1 is out of range for uint32 (field 'max_inflight_requests')",
  );
  assert.match(
    parseError('input { dims: [9007199254740993] }'),
    /^\/repo\/m\/config\.pbtxt:1:16: value 9007199254740993 is beyond 2\^53 and cannot be represented exactly/,
  );
  assert.match(parseError('dynamic_batching { priority_levels: 18446744073709551615 }'), /is beyond 2\^53/);
  assert.match(
    parseError('dynamic_batching { priority_levels: 18446744073709551616 }'),
    /is out of range for uint64/,
  );
  assert.equal(
    parseError(`max_batch_size: ${'9'.repeat(100000)}`),
    '/repo/m/config.pbtxt:1:17: integer literal 999999999999999999999999… is out of range',
  );
  assert.equal(
    parseError('sequence_batching { direct { minimum_slot_utilization: 1e39 } }'),
    "/repo/m/config.pbtxt:1:56: value 1e39 is out of range for float field 'minimum_slot_utilization'",
  );
});

void test('duplicate singular fields and oneof conflicts', () => {
  assert.equal(
    parseError('name: "a"\nname: "b"'),
    "/repo/m/config.pbtxt:2:1: non-repeated field 'name' is specified multiple times in message ModelConfig",
  );
  assert.equal(
    parseError('input { reshape { } reshape { } }'),
    "/repo/m/config.pbtxt:1:21: non-repeated field 'reshape' is specified multiple times in message ModelInput",
  );
  assert.equal(
    parseError('dynamic_batching { }\nsequence_batching { }'),
    "/repo/m/config.pbtxt:2:1: field 'sequence_batching' is specified along with field 'dynamic_batching', another member of oneof 'scheduling_choice' in message ModelConfig",
  );
  assert.equal(
    parseError('version_policy { latest { } all { } }'),
    "/repo/m/config.pbtxt:1:29: field 'all' is specified along with field 'latest', another member of oneof 'policy_choice' in message ModelVersionPolicy",
  );
  assert.equal(
    parseError('name: ["a", "b"]'),
    "/repo/m/config.pbtxt:1:7: field 'name' in message ModelConfig is not repeated",
  );
});

void test('structural errors: missing colon, unclosed blocks, bad lists, stray tokens', () => {
  assert.equal(
    parseError('name "a"'),
    `/repo/m/config.pbtxt:1:6: expected ':' after field 'name', got string "a"`,
  );
  assert.equal(
    parseError('input {\n  name: "a"\n'),
    "/repo/m/config.pbtxt:3:1: unexpected end of input, expected '}' to close message ModelInput",
  );
  assert.equal(
    parseError('input { name: "a" >'),
    "/repo/m/config.pbtxt:1:19: expected a field name in message ModelInput, got '>'",
  );
  assert.equal(
    parseError('input { dims: [1 2] }'),
    "/repo/m/config.pbtxt:1:18: expected ',' or ']' in list 'dims', got '2'",
  );
  assert.equal(
    parseError('}'),
    "/repo/m/config.pbtxt:1:1: expected a field name in message ModelConfig, got '}'",
  );
  assert.equal(
    parseError('[ext.field]: 1'),
    '/repo/m/config.pbtxt:1:1: extension and Any fields are not supported in message ModelConfig',
  );
  assert.equal(parseError('name: "unterminated'), '/repo/m/config.pbtxt:1:7: unterminated string literal');
});

void test('invalid UTF-8 in a string field is refused', () => {
  assert.equal(
    parseError(String.raw`name: "\xff\xfe"`),
    "/repo/m/config.pbtxt:1:7: string field 'name' contains invalid UTF-8",
  );
});

void test('a string value keeps a leading byte order mark (found by the fuzzer)', () => {
  // U+FEFF as the first character of a value is data, not a marker: TextDecoder drops it unless told not to.
  assert.equal(parse(String.raw`name: "\357\273\277m"`).name, '\uFEFFm');
  assert.equal(parse('name: "\uFEFF"').name, '\uFEFF');
  assert.deepEqual(parse(String.raw`input { name: "\xef\xbb\xbf" }`).input[0].name, '\uFEFF');
});

void test('the deepest nesting the schema allows parses (the proto has no recursive message)', () => {
  const nested =
    'optimization { cuda { graph_spec { graph_lower_bound { input { key: "a" value { dim: 1 } } } } } }';
  const c = parse(nested);
  assert.deepEqual(c.optimization?.cuda?.graph_spec[0].graph_lower_bound?.input, { a: { dim: [1] } });
});

void test('empty input is an all-default config', () => {
  const c = parse('  # nothing but a comment\n');
  assert.equal(c.name, '');
  assert.equal(c.max_batch_size, 0);
  assert.deepEqual(c.input, []);
  assert.deepEqual(c.version_policy, {});
});

void test('any message of the schema can be parsed on its own', () => {
  assert.deepEqual(parseTextMessage('kind: KIND_CPU count: 3', 'g.pbtxt', 'ModelInstanceGroup'), {
    name: '',
    kind: 'KIND_CPU',
    count: 3,
    gpus: [],
    secondary_devices: [],
    profile: [],
    passive: false,
    host_policy: '',
  });
  assert.throws(
    () => parseTextMessage('bogus: 1', 'g.pbtxt', 'ModelParameter'),
    /g\.pbtxt:1:1: unknown field 'bogus'/,
  );
});
