// Triton's Python-based backends over the real server and real stubs: a backend the test writes in a
// temporary --backend-directory (outside this repository) serves a model that names it, with its own
// package name, relative imports, Triton's initialize() args plus backend_config, the config's `runtime`
// choosing another script, and dynamic batching; a native runtime is refused; a format Nereid cannot
// serve (TensorRT) says what to do; a backend whose venv is missing names the install command.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { pythonFlags } from './python-support.js';

const BACKEND = `
import json

import numpy as np
import triton_python_backend_utils as pb_utils

from .helpers import offset


class TritonPythonModel:
    def initialize(self, args):
        self.settings = json.loads(args["backend_config"])
        self.factor = float(self.settings.get("factor", "1"))
        config = json.loads(args["model_config"])
        self.info = json.dumps(
            {
                "module": __name__,
                "model_name": args["model_name"],
                "model_version": args["model_version"],
                "kind": args["model_instance_kind"],
                "repository_is_model_dir": args["model_repository"].endswith(args["model_name"]),
                "config_name": config["name"],
                "model_dir": pb_utils.get_model_dir().endswith(args["model_name"] + "/1"),
            }
        )

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            y = (x * self.factor + offset()).astype(np.float32)
            info = np.array([[self.info.encode()]] * x.shape[0], dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("Y", y), pb_utils.Tensor("INFO", info)])
            )
        return responses
`;

const OTHER = `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            info = np.array([[b"other"]] * x.shape[0], dtype=np.object_)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", -x), pb_utils.Tensor("INFO", info)]))
        return out
`;

// Stands in for a pytorch backend: says which file and platform the server gave the model.
const TORCHLIKE = `
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(0)
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [1]})
        config.add_output({"name": "INFO", "data_type": "TYPE_STRING", "dims": [1]})
        return config

    def initialize(self, args):
        c = json.loads(args["model_config"])
        self.info = f"{c['backend']} {c['platform']} {c['default_model_filename']}".encode()

    def execute(self, requests):
        info = np.array([self.info], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("INFO", info)]) for _ in requests]
`;

const config = (name: string, extra = ''): string => `
name: "${name}"
backend: "scaler"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 2000 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [
  { name: "Y" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] }
]
${extra}`;

interface InferOut {
  outputs: { name: string; data: (number | string)[] }[];
}

async function infer(url: string, model: string, x: number[]): Promise<{ y: number[]; info: string }> {
  const res = await post(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: x }],
  });
  assert.equal(res.status, 200, res.body.toString());
  const body = res.json<InferOut>();
  const y = body.outputs.find((o) => o.name === 'Y')!.data as number[];
  const info = String(body.outputs.find((o) => o.name === 'INFO')!.data[0]);
  return { y, info };
}

async function loadError(url: string, model: string): Promise<{ status: number; error: string }> {
  const res = await post(`${url}/v2/repository/models/${model}/load`, {});
  return { status: res.status, error: res.json<{ error?: string }>().error ?? '' };
}

describe('Python-based backends', () => {
  let backends: string;
  let venvs: string;
  let repo: string;
  let s: TestServer;

  before(async () => {
    backends = mkdtempSync(path.join(os.tmpdir(), 'nereid-backends-'));
    venvs = mkdtempSync(path.join(os.tmpdir(), 'nereid-venvs-'));
    mkdirSync(path.join(backends, 'scaler'));
    writeFileSync(path.join(backends, 'scaler', 'model.py'), BACKEND);
    writeFileSync(path.join(backends, 'scaler', 'helpers.py'), 'def offset():\n    return 0.5\n');
    writeFileSync(path.join(backends, 'scaler', 'other.py'), OTHER);
    mkdirSync(path.join(backends, 'pytorch'));
    writeFileSync(path.join(backends, 'pytorch', 'model.py'), TORCHLIKE);
    // A backend with packages of its own: served only from its installed venv.
    mkdirSync(path.join(backends, 'needy'));
    writeFileSync(path.join(backends, 'needy', 'model.py'), OTHER);
    writeFileSync(path.join(backends, 'needy', 'requirements.txt'), 'numpy\n');
    repo = makeRepository({
      scaled: { config: config('scaled'), files: { '1/.keep': '' } },
      other_runtime: { config: config('other_runtime', 'runtime: "other.py"'), files: { '1/.keep': '' } },
      native_runtime: {
        config: config('native_runtime', 'runtime: "libtriton_scaler.so"'),
        files: { '1/.keep': '' },
      },
      escaping_runtime: {
        config: config('escaping_runtime', 'runtime: "../scaler/model.py"'),
        files: { '1/.keep': '' },
      },
      plan: {
        config:
          'name: "plan"\nplatform: "tensorrt_plan"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
        files: { '1/model.plan': 'not a plan' },
      },
      needy: {
        config: config('needy').replace('backend: "scaler"', 'backend: "needy"'),
        files: { '1/.keep': '' },
      },
      trees: {
        config:
          'name: "trees"\nbackend: "fil"\nmax_batch_size: 8\ninput [ { name: "input__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] } ]\nparameters { key: "model_type" value: { string_value: "xgboost_json" } }',
        files: { '1/xgboost.json': '{}' },
      },
      // No config at all: the model files say which backend (Triton's autofill).
      bare_pt: { files: { '1/model.pt': 'a TorchScript archive' } },
      bare_plan: { files: { '1/model.plan': 'a TensorRT engine' } },
      unknown: {
        config:
          'name: "unknown"\nbackend: "no_such_backend"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
        files: { '1/.keep': '' },
      },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      `--backend-directory=${backends}`,
      `--backend-venv-directory=${venvs}`,
      '--backend-config=scaler,factor=3',
      ...pythonFlags(`nereid_pbb_${process.pid}_`),
    ]);
  });

  after(async () => {
    await s.stop();
    removeRepository(repo);
    rmSync(backends, { recursive: true, force: true });
    rmSync(venvs, { recursive: true, force: true });
  });

  it('serves a model with the backend from --backend-directory, with Triton args and backend_config', async () => {
    const loaded = await post(`${s.url}/v2/repository/models/scaled/load`, {});
    assert.equal(loaded.status, 200, loaded.body.toString());
    const { y, info } = await infer(s.url, 'scaled', [1, -2]);
    assert.deepEqual(y, [3.5, -5.5]);
    assert.deepEqual(JSON.parse(info), {
      module: 'nereid_backend_scaler.model',
      model_name: 'scaled',
      model_version: '1',
      kind: 'CPU',
      repository_is_model_dir: true,
      config_name: 'scaled',
      model_dir: true,
    });
    // Batched requests all get their own rows back.
    const many = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => infer(s.url, 'scaled', [i, i + 1])));
    many.forEach((r, i) => assert.deepEqual(r.y, [i * 3 + 0.5, (i + 1) * 3 + 0.5]));
  });

  it("runs the script the config's runtime names", async () => {
    assert.equal((await post(`${s.url}/v2/repository/models/other_runtime/load`, {})).status, 200);
    const { y, info } = await infer(s.url, 'other_runtime', [1, 2]);
    assert.deepEqual(y, [-1, -2]);
    assert.equal(info, 'other');
  });

  it('refuses a native runtime and a runtime outside the backend folder', async () => {
    const native = await loadError(s.url, 'native_runtime');
    assert.equal(native.status, 400);
    assert.match(
      native.error,
      /runtime 'libtriton_scaler.so' of model 'native_runtime' names a native backend library/,
    );
    const escaping = await loadError(s.url, 'escaping_runtime');
    assert.equal(escaping.status, 400);
    assert.match(escaping.error, /must be a file name in the backend's folder/);
  });

  it('says what to do with a TensorRT plan and an unknown backend', async () => {
    const plan = await loadError(s.url, 'plan');
    assert.equal(plan.status, 400);
    assert.match(plan.error, /unexpected platform type 'tensorrt_plan'/);
    assert.match(plan.error, /export the original model to ONNX/);
    assert.match(plan.error, /docs\/from-triton\.md/);
    assert.match(plan.error, /Nereid serves the backends onnxruntime, python, .*fil, .*scaler/);
    const unknown = await loadError(s.url, 'unknown');
    assert.equal(unknown.status, 400);
    assert.match(unknown.error, /^.*unable to find backend 'no_such_backend' for model 'unknown'/);
  });

  it('serves a config-less model.pt with the pytorch backend, as Triton fills in the config', async () => {
    const loaded = await post(`${s.url}/v2/repository/models/bare_pt/load`, {});
    assert.equal(loaded.status, 200, loaded.body.toString());
    const res = await post(`${s.url}/v2/models/bare_pt/infer`, {
      inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [0] }],
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(res.json<InferOut>().outputs[0].data, ['pytorch pytorch_libtorch model.pt']);
    const plan = await loadError(s.url, 'bare_plan');
    assert.equal(plan.status, 400);
    assert.match(
      plan.error,
      /unexpected platform type 'tensorrt_plan' for bare_plan.*export the original model to ONNX/,
    );
  });

  it('fails a model whose backend is not installed with the command that installs it', async () => {
    const needy = await loadError(s.url, 'needy');
    assert.notEqual(needy.status, 200);
    assert.match(needy.error, /backend 'needy' of model 'needy' is not installed/);
    assert.match(needy.error, /npx nereid backends install needy/);
    assert.doesNotMatch(needy.error, new RegExp(venvs), 'the server folder is not shown to clients');
    // Nereid's own fil backend (python/backends/fil), with no venv in this server's venv folder.
    const trees = await loadError(s.url, 'trees');
    assert.notEqual(trees.status, 200);
    assert.match(
      trees.error,
      /backend 'fil' of model 'trees' is not installed.*'npx nereid backends install fil'/,
    );
    // The server keeps serving.
    assert.deepEqual((await infer(s.url, 'scaled', [0, 0])).y, [0.5, 0.5]);
  });
});

describe('the fil backend (installed by scripts/test.sh: npx nereid backends install fil)', () => {
  it('fails a load with an unknown model_type or a missing model file clearly, and keeps serving', async () => {
    const cols =
      'input [ { name: "input__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] } ]';
    const repo = makeRepository({
      catboost: {
        config: `name: "catboost"\nbackend: "fil"\nmax_batch_size: 8\n${cols}\nparameters { key: "model_type" value: { string_value: "catboost" } }`,
        files: { '1/model.cbm': 'x' },
      },
      no_file: {
        config: `name: "no_file"\nbackend: "fil"\nmax_batch_size: 8\n${cols}\nparameters { key: "model_type" value: { string_value: "lightgbm" } }`,
        files: { '1/.keep': '' },
      },
      broken: {
        config: `name: "broken"\nbackend: "fil"\nmax_batch_size: 8\n${cols}\nparameters { key: "model_type" value: { string_value: "xgboost_json" } }`,
        files: { '1/xgboost.json': '{"not": "a model"' },
      },
    });
    // The checkout's venv root (.cache/backends), where the test setup installed fil.
    const s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit']);
    try {
      const catboost = await loadError(s.url, 'catboost');
      assert.equal(catboost.status, 400);
      assert.match(
        catboost.error,
        /model_type 'catboost' of model 'catboost' is not one of xgboost, xgboost_json, xgboost_ubj, lightgbm, treelite_checkpoint/,
      );
      const noFile = await loadError(s.url, 'no_file');
      assert.equal(noFile.status, 400);
      assert.match(noFile.error, /model 'no_file' has no file 'model.txt' in version 1/);
      const broken = await loadError(s.url, 'broken');
      assert.equal(broken.status, 400);
      assert.match(broken.error, /model 'broken': cannot read 'xgboost.json' as xgboost_json/);
      const ready = await request(`${s.url}/v2/health/live`);
      assert.equal(ready.status, 200);
    } finally {
      await s.stop();
      removeRepository(repo);
    }
  });
});
