// KIND_GPU instance groups on this server without GPUs. By default they run on the CPU, visibly: one
// warning per model at load, and the config the server serves shows the kind it really runs (KIND_CPU), so
// a tool reading it (Model Analyzer) does not take it for a GPU model. With --strict-gpu-kind=true the model
// is refused with Triton's message, as Triton refuses it on a machine without GPUs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { decodeLogMessage } from '../../src/common/logger.js';

const io = `
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`;

const MODELS = {
  // An unnamed KIND_GPU group (named gpu_model_0 by normalisation) beside a CPU one.
  gpu_model: {
    config: `name: "gpu_model"\nbackend: "onnxruntime"${io}\ninstance_group [ { kind: KIND_GPU }, { kind: KIND_CPU count: 1 } ]`,
    onnx: 'identity_fp32.onnx',
  },
  // Two named GPU groups, one of them with explicit GPU ids.
  gpu_named: {
    config: `name: "gpu_named"\nbackend: "onnxruntime"${io}\ninstance_group [ { name: "g" count: 2 kind: KIND_GPU }, { name: "h" kind: KIND_GPU gpus: [ 0 ] } ]`,
    onnx: 'identity_fp32.onnx',
  },
  cpu_model: {
    config: `name: "cpu_model"\nbackend: "onnxruntime"${io}\ninstance_group [ { kind: KIND_CPU count: 1 } ]`,
    onnx: 'identity_fp32.onnx',
  },
};

interface GroupJson {
  name: string;
  kind: string;
  count: number;
  gpus?: number[];
}

describe('KIND_GPU groups run on the CPU by default, and say so', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository(MODELS);
    s = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('loads the models and serves them', async () => {
    for (const m of ['gpu_model', 'gpu_named']) {
      assert.equal((await request(`${s.url}/v2/models/${m}/ready`)).status, 200, m);
      const r = await post(`${s.url}/v2/models/${m}/infer`, {
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [1.5, -2] }],
      });
      assert.equal(r.status, 200, r.body.toString());
      assert.deepEqual(r.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [1.5, -2]);
    }
  });

  it('the config shows the kind each group runs with: KIND_CPU, no GPU ids', async () => {
    const groups = async (m: string): Promise<GroupJson[]> =>
      (await request(`${s.url}/v2/models/${m}/config`)).json<{ instance_group: GroupJson[] }>()
        .instance_group;
    assert.deepEqual(
      (await groups('gpu_model')).map((g) => [g.name, g.kind, g.count, g.gpus ?? []]),
      [
        ['gpu_model_0', 'KIND_CPU', 2, []],
        ['gpu_model_1', 'KIND_CPU', 1, []],
      ],
    );
    assert.deepEqual(
      (await groups('gpu_named')).map((g) => [g.name, g.kind, g.count, g.gpus ?? []]),
      [
        ['g', 'KIND_CPU', 2, []],
        ['h', 'KIND_CPU', 2, []],
      ],
    );
  });

  it('one load-time warning per model names its GPU groups and the strict flag', () => {
    const warnings = s.logs
      .map(decodeLogMessage)
      .filter((l) => l.includes('has kind KIND_GPU') || l.includes('have kind KIND_GPU'));
    assert.deepEqual(
      warnings.map((l) => l.slice(l.indexOf("model '"))).sort(),
      [
        "model 'gpu_model': instance group gpu_model_0 has kind KIND_GPU but no GPUs are available; running on " +
          'the CPU instead (the config shows KIND_CPU). Triton refuses such a model here: --strict-gpu-kind=true ' +
          'does too',
        "model 'gpu_named': instance groups g, h have kind KIND_GPU but no GPUs are available; running on the " +
          'CPU instead (the config shows KIND_CPU). Triton refuses such a model here: --strict-gpu-kind=true ' +
          'does too',
      ].sort(),
      s.logs.join('\n'),
    );
    assert.ok(
      warnings.every((l) => l.startsWith('W')),
      'logged as warnings',
    );
  });
});

describe('--strict-gpu-kind=true refuses KIND_GPU models as Triton does without GPUs', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository(MODELS);
    s = await startServer([`--model-repository=${repo}`, '--strict-gpu-kind=true', '--exit-on-error=false']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it("the index shows each refused with Triton's reason; a CPU model still loads", async () => {
    const index = (await post(`${s.url}/v2/repository/index`, {})).json<Record<string, string>[]>();
    const byName = Object.fromEntries(index.map((e) => [e.name, e]));
    assert.deepEqual(byName.gpu_model, {
      name: 'gpu_model',
      version: '1',
      state: 'UNAVAILABLE',
      reason:
        'Invalid argument: instance group gpu_model_0 of model gpu_model has kind KIND_GPU but no GPUs are available',
    });
    assert.deepEqual(byName.gpu_named, {
      name: 'gpu_named',
      version: '1',
      state: 'UNAVAILABLE',
      reason:
        'Invalid argument: instance group g of model gpu_named has kind KIND_GPU but no GPUs are available',
    });
    assert.equal(byName.cpu_model.state, 'READY');
    assert.equal((await request(`${s.url}/v2/models/gpu_model/ready`)).status, 400);
    assert.ok(!s.logs.some((l) => l.includes('running on the CPU instead')), 'nothing runs on the CPU');
  });

  it('explicit GPU ids get Triton\'s "invalid or unsupported gpu id" message', async () => {
    const solo = makeRepository({
      gpu_ids: {
        config: `name: "gpu_ids"\nbackend: "onnxruntime"${io}\ninstance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]`,
        onnx: 'identity_fp32.onnx',
      },
    });
    try {
      await assert.rejects(
        startServer([`--model-repository=${solo}`, '--strict-gpu-kind=true']),
        (err: Error) =>
          err.message.includes(
            'instance group gpu_ids_0 of model gpu_ids specifies invalid or unsupported gpu id 0. GPUs with ' +
              'at least the minimum required CUDA compute compatibility of 6.000000 are: ',
          ),
      );
    } finally {
      removeRepository(solo);
    }
  });
});
