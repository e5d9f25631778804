import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../common/errors.js';
import {
  DENSENET_ONNX,
  DENSENET_ONNX_TRITON_JSON,
  DIRECT_STATEFUL,
  ENSEMBLE_IMAGE,
  SIMPLE,
  SIMPLE_DYNA_SEQUENCE,
  SIMPLE_IDENTITY_PYTHON,
  SIMPLE_SEQUENCE,
} from './example-configs.testkit.js';
import { normalizeModelConfig, SEQUENCE_IDLE_DEFAULT_MICROSECONDS } from './normalize.js';
import { parseModelConfigText } from './pbtxt/parser.js';
import { modelConfigToJson } from './to-json.js';
import type { JsonObject } from './json.js';

const parse = (text: string) => parseModelConfigText(text, 'config.pbtxt');

void test('densenet_onnx normalises to what Triton returns on a CPU-only host, field by field', () => {
  const json = modelConfigToJson(normalizeModelConfig(parse(DENSENET_ONNX)));
  const expected: JsonObject = DENSENET_ONNX_TRITON_JSON;
  assert.deepEqual(Object.keys(json), Object.keys(expected));
  for (const key of Object.keys(expected)) assert.deepEqual(json[key], expected[key], `field ${key}`);
});

void test('the argument is not modified', () => {
  const raw = parse(SIMPLE);
  const before = structuredClone(raw);
  normalizeModelConfig(raw);
  assert.deepEqual(raw, before);
});

void test('version policy: latest 1 by default, kept when given', () => {
  assert.deepEqual(normalizeModelConfig(parse(SIMPLE)).version_policy, { latest: { num_versions: 1 } });
  const all = normalizeModelConfig(parse(`${SIMPLE} version_policy: { all { }}`));
  assert.deepEqual(all.version_policy, { all: {} });
  const latest = normalizeModelConfig(parse(`${SIMPLE} version_policy: { latest: { num_versions: 2}}`));
  assert.deepEqual(latest.version_policy, { latest: { num_versions: 2 } });
});

void test('default instance group: named after the model, KIND_CPU, count 2 for onnxruntime and 1 for python', () => {
  const onnx = normalizeModelConfig(parse(SIMPLE));
  assert.deepEqual(onnx.instance_group, [
    {
      name: 'simple',
      kind: 'KIND_CPU',
      count: 2,
      gpus: [],
      secondary_devices: [],
      profile: [],
      passive: false,
      host_policy: '',
    },
  ]);
  const py = normalizeModelConfig(parse(SIMPLE_IDENTITY_PYTHON));
  assert.equal(py.instance_group[0].name, 'simple_identity');
  assert.equal(py.instance_group[0].kind, 'KIND_CPU');
  assert.equal(py.instance_group[0].count, 1);
});

void test('explicit groups: unnamed ones become <model>_<index>, KIND_AUTO becomes KIND_CPU, counts default', () => {
  const c = normalizeModelConfig(
    parse(`${SIMPLE}
      instance_group [ { count: 3 kind: KIND_CPU }, { name: "mine" }, { kind: KIND_MODEL }, { kind: KIND_AUTO count: 1 } ]`),
  );
  assert.deepEqual(
    c.instance_group.map((g) => [g.name, g.kind, g.count]),
    [
      ['simple_0', 'KIND_CPU', 3],
      ['mine', 'KIND_CPU', 2],
      ['simple_2', 'KIND_MODEL', 1],
      ['simple_3', 'KIND_CPU', 1],
    ],
  );
  // simple_sequence's group has kind KIND_CPU and no count.
  assert.equal(normalizeModelConfig(parse(SIMPLE_SEQUENCE)).instance_group[0].name, 'simple_sequence_0');
  assert.equal(normalizeModelConfig(parse(SIMPLE_SEQUENCE)).instance_group[0].count, 2);
});

void test('KIND_GPU groups move to the CPU and are named (no GPUs here)', () => {
  const moved: string[][] = [];
  const c = normalizeModelConfig(
    parse(
      `${SIMPLE} instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0, 1 ] }, { kind: KIND_CPU }, { name: "g" kind: KIND_GPU } ]`,
    ),
    { onGpuGroupsMoved: (groups) => moved.push([...groups]) },
  );
  assert.deepEqual(
    c.instance_group.map((g) => [g.name, g.kind, g.count, g.gpus]),
    [
      ['simple_0', 'KIND_CPU', 1, []],
      ['simple_1', 'KIND_CPU', 2, []],
      ['g', 'KIND_CPU', 2, []],
    ],
  );
  assert.deepEqual(moved, [['simple_0', 'g']], 'one report per config');
  // A config without KIND_GPU groups reports nothing.
  normalizeModelConfig(parse(`${SIMPLE} instance_group [ { kind: KIND_CPU } ]`), {
    onGpuGroupsMoved: (groups) => moved.push([...groups]),
  });
  assert.equal(moved.length, 1);
});

void test("gpuGroups 'keep' leaves KIND_GPU groups for validation to refuse, as Triton does", () => {
  const moved: string[][] = [];
  const c = normalizeModelConfig(
    parse(`${SIMPLE} instance_group [ { kind: KIND_GPU gpus: [ 0 ] }, { name: "g" kind: KIND_GPU } ]`),
    { gpuGroups: 'keep', onGpuGroupsMoved: (groups) => moved.push([...groups]) },
  );
  assert.deepEqual(
    c.instance_group.map((g) => [g.name, g.kind, g.count, g.gpus]),
    [
      ['simple_0', 'KIND_GPU', 1, [0]],
      ['g', 'KIND_GPU', 1, []],
    ],
  );
  assert.deepEqual(moved, []);
});

void test('preferred instance groups of a backend: GPU ones skipped, CPU count used', () => {
  const c = normalizeModelConfig(parse(SIMPLE_IDENTITY_PYTHON), {
    preferredInstanceGroups: [
      { kind: 'KIND_GPU', count: 4 },
      { kind: 'KIND_CPU', count: 3 },
    ],
  });
  assert.deepEqual(
    c.instance_group.map((g) => [g.name, g.kind, g.count]),
    [['simple_identity', 'KIND_CPU', 3]],
  );
});

void test('dynamic batching: preferred size defaults to max_batch_size; default_queue_policy stays absent', () => {
  const c = normalizeModelConfig(parse(`${SIMPLE} dynamic_batching { }`));
  assert.deepEqual(c.dynamic_batching?.preferred_batch_size, [8]);
  assert.equal(c.dynamic_batching?.default_queue_policy, undefined);
  const kept = normalizeModelConfig(parse(`${SIMPLE} dynamic_batching { preferred_batch_size: [ 4, 8 ] }`));
  assert.deepEqual(kept.dynamic_batching?.preferred_batch_size, [4, 8]);
  const noBatch = normalizeModelConfig(parse(`${DENSENET_ONNX} dynamic_batching { }`));
  assert.deepEqual(noBatch.dynamic_batching?.preferred_batch_size, []);
});

void test('sequence batching: idle time defaults to 1 s, oldest gets preferred sizes, no strategy is added', () => {
  const s = normalizeModelConfig(parse(SIMPLE_SEQUENCE));
  assert.equal(s.sequence_batching?.max_sequence_idle_microseconds, SEQUENCE_IDLE_DEFAULT_MICROSECONDS);
  assert.equal(SEQUENCE_IDLE_DEFAULT_MICROSECONDS, 1000000);
  assert.equal(s.sequence_batching?.direct, undefined);
  assert.equal(s.sequence_batching?.oldest, undefined);
  const d = normalizeModelConfig(parse(SIMPLE_DYNA_SEQUENCE));
  assert.equal(d.sequence_batching?.max_sequence_idle_microseconds, 10000000);
  assert.deepEqual(d.sequence_batching?.oldest?.preferred_batch_size, [8]);
  assert.equal(d.instance_group[0].count, 2);
  const direct = normalizeModelConfig(parse(DIRECT_STATEFUL));
  assert.deepEqual(direct.sequence_batching?.direct, {
    max_queue_delay_microseconds: 0,
    minimum_slot_utilization: 0,
  });
});

void test('optimization: pinned-memory flags default to enabled, other settings kept', () => {
  const c = normalizeModelConfig(
    parse(`${SIMPLE} optimization { input_pinned_memory { enable: false } graph { level: 1 } }`),
  );
  assert.deepEqual(c.optimization, {
    graph: { level: 1 },
    priority: 'PRIORITY_DEFAULT',
    input_pinned_memory: { enable: false },
    output_pinned_memory: { enable: true },
    gather_kernel_buffer_threshold: 0,
    eager_batching: false,
  });
});

void test('ensembles get no instance group, no optimization and no backend', () => {
  const e = normalizeModelConfig(parse(ENSEMBLE_IMAGE), { backend: 'onnxruntime', defaultPlatform: 'x' });
  assert.deepEqual(e.instance_group, []);
  assert.equal(e.optimization, undefined);
  assert.equal(e.backend, '');
  assert.equal(e.platform, 'ensemble');
  assert.equal(e.default_model_filename, '');
  assert.deepEqual(e.version_policy, { latest: { num_versions: 1 } });
});

void test('backend fields: platform ↔ backend pairing and default file names as Triton fills them', () => {
  const fill = (text: string, opts = {}) => {
    const c = normalizeModelConfig(parse(text), opts);
    return [c.backend, c.platform, c.default_model_filename];
  };
  assert.deepEqual(fill('name: "a" platform: "onnxruntime_onnx"'), [
    'onnxruntime',
    'onnxruntime_onnx',
    'model.onnx',
  ]);
  assert.deepEqual(fill('name: "a" backend: "onnxruntime"'), [
    'onnxruntime',
    'onnxruntime_onnx',
    'model.onnx',
  ]);
  assert.deepEqual(fill('name: "a" backend: "python"'), ['python', '', 'model.py']);
  assert.deepEqual(fill('name: "a" default_model_filename: "model.py"'), ['python', '', 'model.py']);
  // Triton fills PyTorch's file name only when it also had to fill the platform.
  assert.deepEqual(fill('name: "a" platform: "pytorch_libtorch"'), ['pytorch', 'pytorch_libtorch', '']);
  assert.deepEqual(fill('name: "a" backend: "pytorch"'), ['pytorch', 'pytorch_libtorch', 'model.pt']);
  assert.deepEqual(fill('name: "a" platform: "tensorflow_savedmodel"'), [
    'tensorflow',
    'tensorflow_savedmodel',
    'model.savedmodel',
  ]);
  assert.deepEqual(fill('name: "a" backend: "onnxruntime" default_model_filename: "net.onnx"'), [
    'onnxruntime',
    'onnxruntime_onnx',
    'net.onnx',
  ]);
  // Triton's autofill guesses from the version folder's files when nothing names the backend.
  assert.deepEqual(fill('name: "a"', { versionFiles: ['model.onnx'] }), [
    'onnxruntime',
    'onnxruntime_onnx',
    'model.onnx',
  ]);
  assert.deepEqual(fill('name: "a"', { versionFiles: ['model.py', 'helper.py'] }), [
    'python',
    '',
    'model.py',
  ]);
  // The loader's resolved backend and its defaults.
  assert.deepEqual(
    fill('name: "a"', { backend: 'javascript', defaultModelFilename: 'model.js', defaultPlatform: '' }),
    ['javascript', '', 'model.js'],
  );
  // A custom backend named by the model name's suffix.
  assert.deepEqual(fill('name: "add.identity"'), ['identity', '', 'model.identity']);
  // The model directory name fills an empty name.
  assert.equal(normalizeModelConfig(parse('backend: "python"'), { modelName: 'dir_name' }).name, 'dir_name');
});

void test('a config with nothing to identify its backend fails like Triton', () => {
  assert.throws(
    () => normalizeModelConfig(parse('name: "plain"')),
    (e: unknown) =>
      e instanceof NereidError &&
      e.code === 'INVALID_ARG' &&
      e.message ===
        "Invalid model name: Could not determine backend for model 'plain' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.",
  );
});
