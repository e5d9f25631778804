// The model loading API in Python models (pb_utils.load_model / unload_model / is_model_ready), over the
// real server and real stubs in explicit model control mode: a model that loads and unloads other models
// from execute() (an ONNX model, a Python model whose stub comes and goes, an override config with
// `file:` contents), one that loads another model from initialize(), a model that reloads and then unloads
// itself from execute() without deadlocking, every error as the TritonModelException Triton raises (the
// server keeps serving), and the refusal outside explicit mode. No stub or /dev/shm file is left.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
  waitFor,
} from './harness.js';
import { pythonFlags, pythonModel, shmFiles, stubPids } from './python-support.js';

/** Runs JSON commands ({op, model, ...}) with the model loading API; answers {value} or {error}. */
const CONTROLLER = (initialize = ''): string => `
import base64
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
${initialize}
    def execute(self, requests):
        responses = []
        for request in requests:
            cmd = json.loads(pb_utils.get_input_tensor_by_name(request, "CMD").as_numpy().flat[0])
            try:
                result = {"value": self.run(cmd)}
            except pb_utils.TritonModelException as e:
                result = {"error": "TritonModelException: " + str(e)}
            except Exception as e:
                result = {"error": type(e).__name__ + ": " + str(e)}
            out = np.array([json.dumps(result).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("RESULT", out)]))
        return responses

    def run(self, cmd):
        op = cmd["op"]
        if op == "load":
            kwargs = {}
            if "config" in cmd:
                kwargs["config"] = cmd["config"]
            if "files" in cmd:
                files = cmd["files"]
                kwargs["files"] = {k: base64.b64decode(v) for k, v in files.items()} if isinstance(files, dict) else files
            pb_utils.load_model(cmd["model"], **kwargs)
            return pb_utils.is_model_ready(cmd["model"])
        if op == "unload":
            pb_utils.unload_model(cmd["model"], unload_dependents=cmd.get("dependents", False))
            # As Triton's test expects: no longer ready once unload_model returned.
            return pb_utils.is_model_ready(cmd["model"])
        if op == "ready":
            return pb_utils.is_model_ready(cmd["model"], cmd.get("version", ""))
        if op == "init":
            return self.init_result
        raise ValueError("unknown op " + op)

    def finalize(self):
        try:
            pb_utils.load_model("echo")
        except pb_utils.TritonModelException as e:
            print("finalize:", e)
`;

const INIT_LOADER = `
    def initialize(self, args):
        pb_utils.load_model("echo_init")
        try:
            pb_utils.load_model(args["model_name"])
            self.init_result = "self-load allowed"
        except pb_utils.TritonModelException as e:
            self.init_result = str(e)
`;

const controllerConfig = (name: string, extra = ''): string => `
name: "${name}"
backend: "python"
max_batch_size: 0
input [ { name: "CMD" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "RESULT" data_type: TYPE_STRING dims: [ 1 ] } ]
${extra}`;

const ECHO = `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())]) for r in requests]
`;
const echoConfig = (name: string): string => `
name: "${name}"
backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]`;

const SIMPLE_CONFIG = readFileSync(path.join(EXAMPLES, 'simple/config.pbtxt'), 'utf8');
const SIMPLE_ONNX = readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx'));

/** The ONNX `simple` model's config as JSON, for a load with overrides (and another name). */
const simpleJson = (name: string): string =>
  JSON.stringify({
    name,
    backend: 'onnxruntime',
    max_batch_size: 8,
    input: ['INPUT0', 'INPUT1'].map((n) => ({ name: n, data_type: 'TYPE_INT32', dims: [16] })),
    output: ['OUTPUT0', 'OUTPUT1'].map((n) => ({ name: n, data_type: 'TYPE_INT32', dims: [16] })),
  });

interface Result {
  value?: unknown;
  error?: string;
}

describe('python backend: the model loading API', () => {
  let s: TestServer;
  let repo: string;
  const prefix = `nereid_control_${process.pid}_`;

  const run = async (model: string, cmd: Record<string, unknown>): Promise<Result> => {
    const res = await post(`${s.url}/v2/models/${model}/infer`, {
      inputs: [{ name: 'CMD', datatype: 'BYTES', shape: [1], data: [JSON.stringify(cmd)] }],
    });
    assert.equal(res.status, 200, res.body.toString());
    return JSON.parse(res.json<{ outputs: { data: string[] }[] }>().outputs[0].data[0]) as Result;
  };
  const control = (cmd: Record<string, unknown>): Promise<Result> => run('controller', cmd);
  const ready = async (model: string): Promise<boolean> =>
    (await request(`${s.url}/v2/models/${model}/ready`)).status === 200;
  const addOne = async (model: string): Promise<number[]> => {
    const ones = Array.from({ length: 16 }, () => 1);
    const counting = Array.from({ length: 16 }, (_, i) => i);
    const res = await post(`${s.url}/v2/models/${model}/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: counting },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ones },
      ],
      outputs: [{ name: 'OUTPUT0' }],
    });
    assert.equal(res.status, 200, res.body.toString());
    return res.json<{ outputs: { data: number[] }[] }>().outputs[0].data;
  };

  before(async () => {
    repo = makeRepository({
      controller: pythonModel(controllerConfig('controller'), CONTROLLER()),
      selfish: pythonModel(controllerConfig('selfish'), CONTROLLER()),
      init_loader: pythonModel(controllerConfig('init_loader'), CONTROLLER(INIT_LOADER)),
      echo: pythonModel(echoConfig('echo'), ECHO),
      echo_init: pythonModel(echoConfig('echo_init'), ECHO),
      simple: { config: SIMPLE_CONFIG, files: { '1/model.onnx': SIMPLE_ONNX } },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=controller',
      '--load-model=selfish',
      ...pythonFlags(prefix),
    ]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('loads and unloads an ONNX model from execute(); is_model_ready follows, per version', async () => {
    assert.deepEqual(await control({ op: 'ready', model: 'simple' }), { value: false });
    assert.deepEqual(await control({ op: 'load', model: 'simple' }), { value: true });
    assert.equal(await ready('simple'), true);
    assert.deepEqual(
      await addOne('simple'),
      [...Array(16).keys()].map((i) => i + 1),
    );
    assert.deepEqual(await control({ op: 'ready', model: 'simple', version: '1' }), { value: true });
    assert.deepEqual(await control({ op: 'ready', model: 'simple', version: '2' }), { value: false });
    assert.deepEqual(await control({ op: 'unload', model: 'simple' }), { value: false });
    await waitFor(async () => !(await ready('simple')));
    await waitFor(async () => {
      const entries = (await post(`${s.url}/v2/repository/index`, {})).json<
        { name: string; state?: string }[]
      >();
      return entries.find((e) => e.name === 'simple')?.state === 'UNAVAILABLE';
    });
  });

  it('loads a Python model (its stub starts) and unloads it (its stub goes away)', async () => {
    assert.deepEqual(stubPids('echo_0'), []);
    assert.deepEqual(await control({ op: 'load', model: 'echo' }), { value: true });
    assert.equal(stubPids('echo_0').length, 1);
    const res = await post(`${s.url}/v2/models/echo/infer`, {
      inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [42] }],
    });
    assert.deepEqual(res.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [42]);
    assert.deepEqual(await control({ op: 'unload', model: 'echo' }), { value: false });
    await waitFor(() => stubPids('echo_0').length === 0);
  });

  it('loads with an override config and file: contents, under a name of its own', async () => {
    const files = { 'file:1/model.onnx': SIMPLE_ONNX.toString('base64') };
    assert.deepEqual(await control({ op: 'load', model: 'adder', config: simpleJson('adder'), files }), {
      value: true,
    });
    assert.deepEqual(
      await addOne('adder'),
      [...Array(16).keys()].map((i) => i + 1),
    );
    assert.deepEqual(await control({ op: 'unload', model: 'adder' }), { value: false });
    await waitFor(async () => !(await ready('adder')));
  });

  it('raises TritonModelException as Triton does, and the server keeps serving', async () => {
    assert.deepEqual(await control({ op: 'load', model: 'no_such_model' }), {
      error:
        "TritonModelException: Failed to load model: failed to load 'no_such_model', failed to poll from model repository: failed to poll model 'no_such_model': model not found in any model repository.",
    });
    const badConfig = await control({ op: 'load', model: 'simple', config: '{not json' });
    assert.match(
      badConfig.error ?? '',
      /^TritonModelException: Failed to load model: failed to load 'simple', failed to poll from model repository: Invalid config override: /,
    );
    assert.deepEqual(await control({ op: 'load', model: 'simple', files: { 'file:1/model.onnx': '' } }), {
      error:
        "TritonModelException: Failed to load model: failed to load 'simple', failed to poll from model repository: Load parameter 'config' must be specified for model file override",
    });
    assert.deepEqual(
      await control({ op: 'load', model: 'simple', config: simpleJson('simple'), files: [] }),
      {
        error:
          "TritonModelException: failed to load model 'simple', files should be a dictionary of file paths and file contents",
      },
    );
    const unprefixed = await control({
      op: 'load',
      model: 'simple',
      config: simpleJson('simple'),
      files: { '1/model.onnx': SIMPLE_ONNX.toString('base64') },
    });
    assert.equal(
      unprefixed.error,
      "TritonModelException: Failed to load model: Unrecognized load parameter '1/model.onnx' with type 'BYTES'",
    );
    assert.deepEqual(await control({ op: 'ready', model: 'simple', version: 'one' }), {
      error:
        "TritonModelException: Failed to check model readiness: failed to get model version from specified version string 'one', version should be an integral value > 0",
    });
    assert.deepEqual(await control({ op: 'ready', model: 'no_such_model' }), { value: false });
    assert.deepEqual(await control({ op: 'unload', model: 'no_such_model' }), { value: false });
    assert.deepEqual(await control({ op: 'load', model: null }), {
      error: 'TypeError: load_model(): model_name must not be None',
    });
    assert.equal(await ready('simple'), false);
    assert.equal(await ready('controller'), true);
    assert.deepEqual(await control({ op: 'ready', model: 'controller' }), { value: true });
  });

  it('loads another model from initialize(), but not itself', async () => {
    const res = await post(`${s.url}/v2/repository/models/init_loader/load`, {});
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(await ready('echo_init'), true);
    assert.deepEqual(await run('init_loader', { op: 'init' }), {
      value:
        "Failed to load model: model 'init_loader' cannot load itself from initialize(): its own load is still in progress",
    });
  });

  it('a model reloads itself and then unloads itself from execute() without a deadlock', async () => {
    const before = stubPids('selfish_0');
    assert.equal(before.length, 1);
    const config = JSON.stringify({
      name: 'selfish',
      backend: 'python',
      max_batch_size: 0,
      input: [{ name: 'CMD', data_type: 'TYPE_STRING', dims: [1] }],
      output: [{ name: 'RESULT', data_type: 'TYPE_STRING', dims: [1] }],
      parameters: { GENERATION: { string_value: '2' } },
    });
    assert.deepEqual(await run('selfish', { op: 'load', model: 'selfish', config }), { value: true });
    // The new version's stub serves; the old one finished its request (this one) and went away.
    await waitFor(() => {
      const now = stubPids('selfish_0');
      return now.length === 1 && now[0] !== before[0];
    });
    assert.deepEqual(await run('selfish', { op: 'unload', model: 'selfish' }), { value: false });
    await waitFor(() => stubPids('selfish_0').length === 0);
    assert.equal(await ready('selfish'), false);
    assert.ok(
      s.logs.some((l) =>
        l.includes(
          'selfish_0: finalize: the model loading API is not supported in finalize; use it in initialize or execute',
        ),
      ),
      'refused in finalize()',
    );
  });

  it('refuses loading and unloading outside explicit model control mode', async () => {
    const other = makeRepository({ controller: pythonModel(controllerConfig('controller'), CONTROLLER()) });
    const none = await startServer([`--model-repository=${other}`, ...pythonFlags(`${prefix}none_`)]);
    try {
      const res = await post(`${none.url}/v2/models/controller/infer`, {
        inputs: [
          { name: 'CMD', datatype: 'BYTES', shape: [1], data: [JSON.stringify({ op: 'load', model: 'x' })] },
        ],
      });
      const out = JSON.parse(res.json<{ outputs: { data: string[] }[] }>().outputs[0].data[0]) as Result;
      assert.equal(
        out.error,
        'TritonModelException: Failed to load model: explicit model load / unload is not allowed if polling is enabled',
      );
    } finally {
      await none.stop();
      removeRepository(other);
    }
  });

  it('leaves no stub process and no /dev/shm file once the server stopped', async () => {
    await s.stop();
    assert.deepEqual(stubPids(), []);
    assert.deepEqual(shmFiles(prefix), []);
  });
});
