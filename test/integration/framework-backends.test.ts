// Nereid's own framework backends (python/backends/pytorch, python/backends/openvino) as the server finds
// them for Triton's configs, over the real server: `platform: "pytorch_libtorch"`, `platform: "torch_aoti"`
// and `backend: "openvino"` reach those folders, and with no venv installed the load fails naming the one
// command that installs it, while the server keeps serving. (Serving on the installed frameworks is
// test/compat/test_pytorch_backend.py and test_openvino_backend.py.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { pythonFlags } from './python-support.js';

const io =
  'max_batch_size: 8\ninput [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n' +
  'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n';

async function loadError(url: string, model: string): Promise<{ status: number; error: string }> {
  const res = await post(`${url}/v2/repository/models/${model}/load`, {});
  return { status: res.status, error: res.json<{ error?: string }>().error ?? '' };
}

describe('framework backends without their venvs', () => {
  let venvs: string;
  let repo: string;
  let s: TestServer;

  before(async () => {
    venvs = mkdtempSync(path.join(os.tmpdir(), 'nereid-fw-venvs-'));
    repo = makeRepository({
      scripted: {
        config: `name: "scripted"\nplatform: "pytorch_libtorch"\n${io}`,
        files: { '1/model.pt': 'x' },
      },
      exported: { config: `name: "exported"\nplatform: "torch_aoti"\n${io}`, files: { '1/model.pt2': 'x' } },
      ir: { config: `name: "ir"\nbackend: "openvino"\n${io}`, files: { '1/model.xml': '<net/>' } },
      identity: {
        config:
          'name: "identity"\nbackend: "identity"\nmax_batch_size: 0\n' +
          'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
          'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
        files: { '1/.keep': '' },
      },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=identity',
      `--backend-venv-directory=${venvs}`,
      ...pythonFlags(`nereid_fwb_${process.pid}_`),
    ]);
  });

  after(async () => {
    await s.stop();
    removeRepository(repo);
    rmSync(venvs, { recursive: true, force: true });
  });

  for (const [model, backend] of [
    ['scripted', 'pytorch'],
    ['exported', 'pytorch'],
    ['ir', 'openvino'],
  ] as const) {
    it(`${model}: names 'npx nereid backends install ${backend}'`, async () => {
      const { status, error } = await loadError(s.url, model);
      assert.notEqual(status, 200);
      assert.match(error, new RegExp(`backend '${backend}' of model '${model}' is not installed`));
      assert.match(error, new RegExp(`npx nereid backends install ${backend}`));
      assert.doesNotMatch(error, new RegExp(venvs), 'the server folder is not shown to clients');
    });
  }

  it('keeps serving the other models', async () => {
    const ready = await request(`${s.url}/v2/models/identity/ready`);
    assert.equal(ready.status, 200);
  });
});
