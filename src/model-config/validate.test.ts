import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../common/errors.js';
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
import { normalizeModelConfig } from './normalize.js';
import { parseModelConfigText } from './pbtxt/parser.js';
import { validateModelConfig } from './validate.js';
import type { ModelConfig } from './model-config.js';

const parse = (text: string): ModelConfig => parseModelConfigText(text, 'config.pbtxt');
const prepared = (text: string): ModelConfig => normalizeModelConfig(parse(text));

function problem(cfg: ModelConfig, code = 'INVALID_ARG'): string {
  try {
    validateModelConfig(cfg);
  } catch (err) {
    assert.ok(err instanceof NereidError, `not a NereidError: ${String(err)}`);
    assert.equal(err.code, code);
    return err.message;
  }
  assert.fail(`expected a validation error for ${cfg.name}`);
}
const invalid = (text: string): string => problem(prepared(text));

/** A valid batching model to which each test adds one mistake. */
const BASE = `
name: "m"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
const NOBATCH = BASE.replace('max_batch_size: 8', 'max_batch_size: 0');

void test('the documented examples are valid once normalised (also when frozen)', () => {
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
    BASE,
  ]) {
    const cfg = prepared(text);
    assert.doesNotThrow(() => validateModelConfig(cfg), cfg.name);
    assert.doesNotThrow(() => validateModelConfig(freezeModelConfig(cfg)), cfg.name);
  }
  // A non-batching model may still use the dynamic batcher (for its queue policies).
  assert.doesNotThrow(() => validateModelConfig(prepared(`${NOBATCH} dynamic_batching { }`)));
});

void test('identity: name, platform/backend pairing, max_batch_size', () => {
  const unnamed = normalizeModelConfig(parse(BASE.replace('name: "m"', '')));
  assert.equal(problem(unnamed), "model configuration must specify 'name'");
  assert.equal(
    invalid('name: "m" platform: "tensorflow_onnx"'),
    "unexpected platform type 'tensorflow_onnx' for m",
  );
  assert.equal(
    invalid('name: "e" platform: "ensemble" backend: "onnxruntime"'),
    "Ensemble model 'e' must have platform type 'ensemble' and empty backend type",
  );
  assert.equal(
    invalid(
      `name: "invalid_platform" platform: "onnxruntim" default_model_filename: "model.onnx" max_batch_size: 8`,
    ),
    "unexpected 'platform' and 'backend' pair, got:onnxruntim, onnxruntime",
  );
  assert.equal(
    invalid(BASE.replace('max_batch_size: 8', 'max_batch_size: -1')),
    "'max_batch_size' must be non-negative value for m",
  );
});

void test('version policy', () => {
  const noPolicy = prepared(BASE);
  noPolicy.version_policy = {};
  assert.equal(problem(noPolicy), "must specify 'version policy' for m");
  assert.equal(
    invalid(`${BASE} version_policy { latest { num_versions: 0 } }`),
    "version policy 'latest' must have 'num_versions' >= 1 for m",
  );
  assert.equal(
    invalid(`${BASE} version_policy { specific { } }`),
    "version policy 'specific' must list at least one version for m",
  );
  assert.equal(
    invalid(`${BASE} version_policy { specific { versions: [1, -2] } }`),
    "version policy 'specific' lists invalid version -2 for m",
  );
});

void test('dynamic batching (Triton QA wording)', () => {
  assert.equal(
    invalid(`${BASE} dynamic_batching { preferred_batch_size: [ 0 ] }`),
    'dynamic batching preferred size must be positive for m',
  );
  assert.equal(
    invalid(`${BASE} dynamic_batching { preferred_batch_size: [ 4, 16 ] }`),
    'dynamic batching preferred size must be <= max batch size for m',
  );
  assert.equal(
    invalid(`${NOBATCH} dynamic_batching { preferred_batch_size: [ 4 ] }`),
    'dynamic batching preferred size must be <= max batch size for m',
  );
  assert.equal(
    invalid(`${BASE} dynamic_batching { priority_levels: 3 }`),
    'default priority level must be in range [1, 3] for m',
  );
  assert.equal(
    invalid(`${BASE} dynamic_batching { priority_levels: 3 default_priority_level: 4 }`),
    'default priority level must be in range [1, 3] for m',
  );
  assert.equal(
    invalid(
      `${BASE} dynamic_batching { priority_levels: 3 default_priority_level: 2 priority_queue_policy { key: 0 value: { } } }`,
    ),
    'priority queue policy must have priority level in range [1, 3] for m',
  );
  assert.equal(
    invalid(
      `${BASE} dynamic_batching { priority_levels: 3 default_priority_level: 2 priority_queue_policy { key: 4 value: { } } }`,
    ),
    'priority queue policy must have priority level in range [1, 3] for m',
  );
  assert.equal(
    invalid(
      `${BASE} dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }`,
    ),
    "Only one priority level is allowed when 'preserve_ordering' is true for m",
  );
  assert.equal(
    invalid(
      `${BASE} dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 1000 } }`,
    ),
    "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m",
  );
  assert.equal(
    invalid(
      `${BASE} dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1
        priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 5 } } }`,
    ),
    "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m",
  );
});

const control = (name: string, body: string) => `{ name: "${name}" control [ { ${body} } ] }`;

void test('sequence batching controls (Triton QA wording)', () => {
  const seq = (inputs: string[], extra = '') =>
    `${BASE} sequence_batching { ${extra} control_input [ ${inputs.join(', ')} ] }`;
  const start = control('START', 'kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ]');
  assert.equal(
    invalid(
      seq([
        start,
        control('END0', 'kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1]'),
        control('END1', 'kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1]'),
      ]),
    ),
    'sequence batching specifies multiple CONTROL_SEQUENCE_END tensors for m',
  );
  assert.equal(
    invalid(seq([start, control('START', 'kind: CONTROL_SEQUENCE_READY int32_false_true: [0, 1]')])),
    "sequence batching control tensor 'START' is specified for multiple control kinds for m",
  );
  assert.equal(
    invalid(seq([start, control('READY', 'kind: CONTROL_SEQUENCE_READY')])),
    "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_READY for m",
  );
  assert.equal(
    invalid(
      seq([
        control('START', 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] fp32_false_true: [0, 1]'),
      ]),
    ),
    "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_START for m",
  );
  assert.equal(
    invalid(seq([control('START', 'kind: CONTROL_SEQUENCE_START bool_false_true: [false, true, true]')])),
    "sequence batching control 'bool_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_START for m",
  );
  assert.equal(
    invalid(seq([control('', 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1]')])),
    'sequence batching control tensor must have a name for m',
  );
  assert.equal(
    invalid(seq([control('CORRID', 'kind: CONTROL_SEQUENCE_CORRID int32_false_true: [0, 1]')])),
    "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for m",
  );
  assert.equal(
    invalid(seq([control('CORRID', 'kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32')])),
    'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
  );
  assert.doesNotThrow(() =>
    validateModelConfig(
      prepared(seq([control('CORRID', 'kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING')])),
    ),
  );
  assert.equal(
    invalid(seq([start], 'oldest { preferred_batch_size: [ 16 ] }')),
    'sequence batching preferred batch size must be <= max batch size for m',
  );
  assert.equal(
    invalid(seq([start], 'oldest { preferred_batch_size: [ -1 ] }')),
    'sequence batching preferred batch size must be positive for m',
  );
  assert.equal(
    invalid(seq([start], 'direct { minimum_slot_utilization: 1.5 }')),
    'sequence batching minimum slot utilization must be in range (0.0, 1.0] for m',
  );
  assert.equal(
    invalid(`${seq([start])} response_cache { enable: true }`),
    'Response Cache does not currently support model m with sequence batching scheduler. Please disable the response cache.',
  );
});

void test('decoupled models cannot use the response cache; model_metrics must be complete', () => {
  assert.equal(
    invalid(`${BASE} model_transaction_policy { decoupled: true } response_cache { enable: true }`),
    "Response Cache does not currently support model m with 'decoupled' transaction policy. Please disable the response cache.",
  );
  const metrics = (body: string) => invalid(`${BASE} model_metrics { metric_control: [ { ${body} } ] }`);
  assert.equal(
    metrics('histogram_options { buckets: [1] }'),
    "metric control must specify 'metric_identifier'",
  );
  assert.equal(
    metrics('metric_identifier: {} histogram_options { buckets: [1] }'),
    "metric identifier must specify non-empty 'family'",
  );
  assert.equal(
    metrics('metric_identifier: { family: "f" }'),
    "metric control must specify 'histogram_options'",
  );
  assert.equal(
    metrics('metric_identifier: { family: "f" } histogram_options: { buckets: [] }'),
    "histogram options must specify non-empty 'buckets'",
  );
});

const ENS_IO = `
name: "e"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;
const step = (model: string, inputs: Record<string, string>, outputs: Record<string, string>) =>
  `{ model_name: "${model}" model_version: -1 ${Object.entries(inputs)
    .map(([k, v]) => `input_map { key: "${k}" value: "${v}" }`)
    .join(' ')} ${Object.entries(outputs)
    .map(([k, v]) => `output_map { key: "${k}" value: "${v}" }`)
    .join(' ')} }`;
const ensemble = (...steps: string[]) => `${ENS_IO} ensemble_scheduling { step [ ${steps.join(', ')} ] }`;

void test('ensembles (Triton wording)', () => {
  assert.doesNotThrow(() => validateModelConfig(prepared(ensemble(step('a', { x: 'IN' }, { y: 'OUT' })))));
  assert.equal(invalid(ENS_IO), 'ensemble scheduling must be set for ensemble e whose platform is ensemble');
  assert.equal(
    invalid(`${BASE} ensemble_scheduling { step [ ${step('a', { x: 'INPUT' }, { y: 'OUTPUT' })} ] }`),
    "ensemble scheduling cannot be set for model 'm' whose platform is not ensemble",
  );
  assert.equal(
    invalid(`${ensemble(step('a', { x: 'IN' }, { y: 'OUT' }))} instance_group { kind: KIND_CPU }`),
    "instance group should not be specified for ensemble 'e'",
  );
  assert.equal(
    invalid(`${ensemble(step('a', { x: 'IN' }, { y: 'OUT' }))} optimization { }`),
    "optimization should not be specified for ensemble 'e'",
  );
  assert.equal(
    invalid(`${ensemble(step('a', { x: 'IN' }, { y: 'OUT' }))} model_warmup { name: "w" }`),
    "model_warmup can not be specified for ensemble 'e'",
  );
  assert.equal(invalid(`${ENS_IO} ensemble_scheduling { }`), "must specify 'step' for ensemble 'e'");
  assert.equal(
    invalid(ensemble(step('', { x: 'IN' }, { y: 'OUT' }))),
    "must specify 'model_name' in step 0 of ensemble 'e'",
  );
  assert.equal(
    invalid(ensemble(step('a', {}, { y: 'OUT' }))),
    "must specify 'input_map' in step 0 of ensemble 'e'",
  );
  assert.equal(
    invalid(ensemble(step('a', { x: 'IN' }, { y: 'OUT' }), step('b', { x: 'IN' }, {}))),
    "must specify 'output_map' in step 1 of ensemble 'e'",
  );
  assert.equal(
    invalid(ensemble(step('a', { x: 'IN' }, { y: 'OUT' }), step('b', { x: 'IN' }, { y: 'OUT' }))),
    "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'e' step 1",
  );
  assert.equal(
    invalid(ensemble(step('a', { x: 'OTHER' }, { y: 'OUT' }))),
    "ensemble input 'IN' for ensemble e' is not used",
  );
  assert.equal(
    invalid(ensemble(step('a', { x: 'IN' }, { y: 'mid' }))),
    "ensemble output 'OUT' for ensemble e' is not used",
  );
  assert.equal(
    invalid(
      ensemble(step('a', { x: 'IN' }, { y: 'mid' }), step('b', { x: 'mid', z: 'loose' }, { y: 'OUT' })),
    ),
    "output 'OUT' for ensemble 'e' is not written: at least one of its depending tensors, 'loose', is not connected",
  );
  assert.equal(
    invalid(ensemble(step('a', { x: 'IN' }, { y: 'OUT', z: 'spare' }))),
    "ensemble tensor 'spare' is unused in ensemble 'e'",
  );
});

void test('instance groups on a GPU-less server (Triton wording)', () => {
  assert.equal(
    invalid(`${BASE.replace('"m"', '"invalid_cpu"')} instance_group [ { kind: KIND_CPU gpus: [ 0 ] } ]`),
    'instance group invalid_cpu_0 of model invalid_cpu has kind KIND_CPU but specifies one or more GPUs',
  );
  assert.equal(
    invalid(`${BASE} instance_group [ { kind: KIND_AUTO gpus: [ 0 ] } ]`),
    'instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs',
  );
  assert.equal(
    invalid(`${BASE} instance_group [ { kind: KIND_MODEL gpus: [ 1 ] } ]`),
    'instance group m_0 of model m has kind KIND_MODEL but specifies one or more GPUs',
  );
  assert.equal(
    invalid(`${BASE} instance_group [ { kind: KIND_CPU profile: "0" } ]`),
    'instance group m_0 of model m and platform onnxruntime_onnx specifies profile field which is only supported for TensorRT models',
  );
  // Checks that only fire when validate() sees a config normalize() did not prepare.
  const raw = prepared(BASE);
  raw.instance_group[0].kind = 'KIND_GPU';
  assert.equal(problem(raw), 'instance group m of model m has kind KIND_GPU but no GPUs are available');
  raw.instance_group[0].gpus = [1, 0];
  assert.equal(
    problem(raw),
    'instance group m of model m specifies invalid or unsupported gpu id 1. GPUs with at least the minimum ' +
      'required CUDA compute compatibility of 6.000000 are: ',
  );
  raw.instance_group[0].gpus = [];
  raw.instance_group[0].kind = 'KIND_AUTO';
  assert.equal(problem(raw, 'INTERNAL'), 'instance group m of model m has unexpected kind KIND_AUTO');
  raw.instance_group[0].kind = 'KIND_CPU';
  raw.instance_group[0].count = 0;
  assert.equal(problem(raw), "instance group m of model m must have 'count' >= 1, got 0");
  raw.instance_group = [];
  assert.equal(problem(raw), "must specify one or more 'instance group's for m");
});

const io = (input: string, output = '{ name: "output" data_type: TYPE_FP32 dims: [ 1 ] }', mbs = 4) =>
  `name: "m" backend: "onnxruntime" max_batch_size: ${mbs} input [ ${input} ] output [ ${output} ]`;

void test('inputs and outputs (Triton QA wording)', () => {
  assert.equal(
    invalid(io('{ name: "input" dims: [ 2, -1 ] }')),
    "model input 'input' must specify 'data_type' for m",
  );
  assert.equal(invalid(io('{ data_type: TYPE_FP32 dims: [ 1 ] }')), "model input must specify 'name' for m");
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 }')),
    "model input 'input' must specify 'dims' for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 1, 0, 28 ] }')),
    "model input 'input' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 1, -2 ] }')),
    "model input 'input' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  );
  assert.equal(
    invalid(
      io(
        '{ name: "input" data_type: TYPE_FP32 dims: [ 1 ] }',
        '{ name: "output" data_type: TYPE_FP32 dims: [ 0 ] }',
      ),
    ),
    "model output 'output' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 1, 3, 2 ] reshape { shape: [ 5 ] } }')),
    "model input 'input' has different size for dims and reshape for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } }', undefined, 0)),
    "model input 'input' cannot have empty reshape for non-batching model as scalar tensors are not supported for m",
  );
  assert.equal(
    invalid(
      io(
        '{ name: "input" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ 2, -1, -1 ] } }',
        undefined,
        0,
      ),
    ),
    "model input 'input' has different number of variable-size dimensions for dims and reshape for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ 2, 2 ] } }')),
    "model input 'input' has different size for dims and reshape for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 2, -1, 3 ] reshape { shape: [ 2, -1, 4 ] } }')),
    "model input 'input' has different size for dims and reshape for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape { shape: [ 0 ] } }')),
    "model input 'input' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  );
  assert.equal(
    invalid(
      io(
        '{ name: "input" data_type: TYPE_FP32 dims: [ 9007199254740991, 9007199254740991 ] reshape { shape: [ -1 ] } }',
      ),
    ),
    "element count for tensor 'input dims' exceeds maximum size of 9223372036854775807 for m",
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 224, 224 ] }')),
    'model input NHWC/NCHW require 3 dims for m',
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true }')),
    'shape tensors are only supported for TensorRT platform for m',
  );
  assert.equal(
    invalid(io('{ name: "input" data_type: TYPE_FP16 dims: [ 3, 4, 4 ] is_non_linear_format_io: true }')),
    'Non-linear IO format is only supported for the TensorRT platform for m',
  );
  assert.equal(
    invalid(
      io('{ name: "a" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "a" data_type: TYPE_FP32 dims: [ 2 ] }'),
    ),
    "model input 'a' is specified more than once for m",
  );
  // Reshapes Triton accepts: [1] ↔ [] on a batching model, and equal runs between variable dims.
  for (const ok of [
    '{ name: "in" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } }',
    '{ name: "in" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] reshape: { shape: [ 8, -1, 1, 6 ] } }',
  ]) {
    assert.doesNotThrow(() => validateModelConfig(prepared(io(ok))), ok);
  }
});

void test('batch inputs and outputs (Triton QA wording)', () => {
  const base = (extra: string) =>
    `${io('{ name: "INPUT" data_type: TYPE_INT32 dims: [ -1 ] }', '{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ -1 ] }')} ${extra}`;
  assert.equal(
    invalid(base('batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP32 } ]')),
    "batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0 for m",
  );
  assert.equal(
    invalid(
      base(
        'batch_input [ { kind: BATCH_MAX_ELEMENT_COUNT_AS_SHAPE target_name: "B" data_type: TYPE_FP32 source_input: ["INPUT", "INPUT"] } ]',
      ),
    ),
    "batch input kind 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE' expects 1 source input, got 2 for m",
  );
  assert.equal(
    invalid(
      base(
        'batch_input [ { kind: BATCH_ITEM_SHAPE target_name: "B" data_type: TYPE_INT64 source_input: "INPUT" } ]',
      ),
    ),
    'batch input data type must be TYPE_INT32 or TYPE_FP32 for m',
  );
  assert.equal(
    invalid(
      base(
        'batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP32 source_input: "UNKNOWN_INPUT" } ]',
      ),
    ),
    "unknown source input name 'UNKNOWN_INPUT' for m",
  );
  assert.equal(
    invalid(base('batch_output [ { target_name: "OUTPUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE } ]')),
    "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got 0 for m",
  );
  assert.equal(
    invalid(
      base(
        'batch_output [ { target_name: "UNKNOWN_OUTPUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" } ]',
      ),
    ),
    "unknown target output name 'UNKNOWN_OUTPUT' for m",
  );
  assert.equal(
    invalid(
      base(
        'batch_output [ { target_name: ["OUTPUT", "OUTPUT"] kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" } ]',
      ),
    ),
    "target output name 'OUTPUT' can only be specified once for m",
  );
});

void test('config-driven allocations are refused over their limits, not attempted', () => {
  const seq = (extra: string): string =>
    invalid(`${BASE}
sequence_batching { ${extra} }`);
  assert.match(
    seq('oldest { max_candidate_sequences: 10000000 }'),
    /needs 10000000 slots per instance \(oldest.max_candidate_sequences\) × \d+ instance\(s\), more than the limit of 65536/,
  );
  assert.match(
    invalid(
      BASE.replace('max_batch_size: 8', 'max_batch_size: 100000000') + '\nsequence_batching { direct { } }',
    ),
    /needs 100000000 slots per instance \(max_batch_size\)/,
  );
  const many = Array.from({ length: 2000 }, () => 1).join(', ');
  assert.match(
    invalid(`${BASE}
dynamic_batching { preferred_batch_size: [ ${many} ] }`),
    /dynamic_batching.preferred_batch_size of m has 2000 entries, more than the limit of 1024/,
  );
  assert.match(
    invalid(`${BASE}
model_warmup { name: "w" batch_size: 8 count: 1000000000 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } }`),
    /more than 10000 warmup requests per instance .*sample 'w': count 1000000000, batch_size 8/,
  );
});
