// Instance limits over real sockets (issue 23, item 1): a load request whose config override asks for
// more instances than the server allows is refused with a clean 400 that names the limit and its flag,
// before a single worker thread or stub process starts (counted from /proc); the server stays live and
// keeps serving the model it already had. Per-model, server-wide, process-backed (Python stubs), several
// versions, and a reload (old and new versions both count) are each checked. The limits are set by flags
// so the test does not depend on the machine's CPU count or memory.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { pythonFlags, stubPids } from './python-support.js';

const threads = (): number => readdirSync('/proc/self/task').length;

const ONNX_CONFIG = (name: string, count: number, extra = ''): string =>
  JSON.stringify({
    name,
    backend: 'onnxruntime',
    max_batch_size: 0,
    instance_group: [{ kind: 'KIND_CPU', count }],
    ...(extra ? JSON.parse(extra) : {}),
  });

const PY_CONFIG = (name: string, count: number): string =>
  JSON.stringify({
    name,
    backend: 'python',
    max_batch_size: 0,
    input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
    output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    instance_group: [{ kind: 'KIND_CPU', count }],
  });

const PY_MODEL = `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())])
            for r in requests
        ]
`;

const infer = (url: string, model: string): Promise<{ status: number }> =>
  post(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
  });

describe('instance limits refuse a load before anything starts', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    repo = makeRepository({
      serving: { onnx: 'identity_fp32.onnx' },
      onnx_big: { onnx: 'identity_fp32.onnx' },
      onnx_versions: { onnx: 'identity_fp32.onnx', versions: [1, 2, 3] },
      py: { files: { '1/model.py': PY_MODEL } },
      py2: { files: { '1/model.py': PY_MODEL } },
    });
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=serving',
      '--max-instances-per-model=8',
      '--max-instances=12',
      '--max-process-instances-per-model=2',
      '--max-process-instances=3',
      ...pythonFlags('nereid_limits_'),
    ]);
  });

  after(async () => {
    await server?.stop();
    if (repo) removeRepository(repo);
  });

  /** A 400 that names the problem and no path of the server's. */
  const assertRefused = (res: { status: number; body: Buffer }, pattern: RegExp): void => {
    assert.equal(res.status, 400, res.body.toString());
    const message = (JSON.parse(res.body.toString()) as { error: string }).error;
    assert.match(message, pattern);
    assert.ok(!message.includes(repo), message);
    assert.ok(!message.includes(os.tmpdir()), message);
  };

  const stillServing = async (): Promise<void> => {
    assert.equal((await request(`${server.url}/v2/health/live`)).status, 200);
    assert.equal((await infer(server.url, 'serving')).status, 200);
  };

  it('count: 1000000 is refused with INVALID_ARG, no worker thread starts, the server serves on', async () => {
    assert.equal((await infer(server.url, 'serving')).status, 200);
    const before = threads();
    const res = await post(`${server.url}/v2/repository/models/onnx_big/load`, {
      parameters: { config: ONNX_CONFIG('onnx_big', 1_000_000) },
    });
    assertRefused(res, /asks for 1000000 instances.*at most 8 \(--max-instances-per-model\)/);
    // Just over the limit: had the check been missing, 9 worker threads would be running now.
    const res9 = await post(`${server.url}/v2/repository/models/onnx_big/load`, {
      parameters: { config: ONNX_CONFIG('onnx_big', 9) },
    });
    assertRefused(res9, /asks for 9 instances/);
    assert.ok(threads() - before < 4, `threads grew from ${before} to ${threads()}`);
    const index = (await post(`${server.url}/v2/repository/index`, {})).json<
      { name: string; state?: string; reason?: string }[]
    >();
    const big = index.find((e) => e.name === 'onnx_big');
    assert.equal(big?.state, 'UNAVAILABLE');
    assert.match(big?.reason ?? '', /--max-instances-per-model/);
    await stillServing();
  });

  it('every version counts: 3 versions of count 3 exceed a per-model limit of 8', async () => {
    const res = await post(`${server.url}/v2/repository/models/onnx_versions/load`, {
      parameters: {
        config: ONNX_CONFIG('onnx_versions', 3, JSON.stringify({ version_policy: { all: {} } })),
      },
    });
    assertRefused(res, /asks for 9 instances \(3 for each of 3 versions\)/);
    await stillServing();
  });

  it('a Python model asking for 40 instances starts no stub process', async () => {
    const res = await post(`${server.url}/v2/repository/models/py/load`, {
      parameters: { config: PY_CONFIG('py', 40) },
    });
    assertRefused(res, /asks for 40 instances.*--max-instances-per-model/);
    const res3 = await post(`${server.url}/v2/repository/models/py/load`, {
      parameters: { config: PY_CONFIG('py', 3) },
    });
    assertRefused(res3, /asks for 3 instances: a model whose instances are processes may have at most 2/);
    assert.deepEqual(stubPids(), []);
    await stillServing();
  });

  it('the server-wide process limit counts every loaded model; unloading frees its share', async () => {
    const ok = await post(`${server.url}/v2/repository/models/py/load`, {
      parameters: { config: PY_CONFIG('py', 2) },
    });
    assert.equal(ok.status, 200, ok.body.toString());
    assert.equal(stubPids().length, 2);
    const res = await post(`${server.url}/v2/repository/models/py2/load`, {
      parameters: { config: PY_CONFIG('py2', 2) },
    });
    assertRefused(res, /the server runs 2 of at most 3 instance processes \(--max-process-instances\)/);
    assert.equal(stubPids().length, 2);
    assert.equal((await post(`${server.url}/v2/repository/models/py/unload`, {})).status, 200);
    const again = await post(`${server.url}/v2/repository/models/py2/load`, {
      parameters: { config: PY_CONFIG('py2', 2) },
    });
    assert.equal(again.status, 200, again.body.toString());
    assert.equal((await post(`${server.url}/v2/repository/models/py2/unload`, {})).status, 200);
    await stillServing();
  });

  it('a reload counts the old and the new versions; a refused reload leaves the old one serving', async () => {
    // serving has 1 instance; 1 + 8 fits in 12.
    const grow = await post(`${server.url}/v2/repository/models/serving/load`, {
      parameters: { config: ONNX_CONFIG('serving', 8) },
    });
    assert.equal(grow.status, 200, grow.body.toString());
    const before = threads();
    // The 8 old instances still run while 8 new ones would load: 16 > 12.
    const res = await post(`${server.url}/v2/repository/models/serving/load`, {
      parameters: { config: ONNX_CONFIG('serving', 7) },
    });
    assertRefused(res, /the server runs (8|9) of at most 12 instances \(--max-instances\)/);
    assert.ok(threads() - before < 4, `threads grew from ${before} to ${threads()}`);
    await stillServing();
    const shrink = await post(`${server.url}/v2/repository/models/serving/load`, {
      parameters: { config: ONNX_CONFIG('serving', 1) },
    });
    assert.equal(shrink.status, 200, shrink.body.toString());
    await stillServing();
  });
});
