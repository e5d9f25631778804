/**
 * A model for a backend or platform Nereid cannot serve (TensorRT, DALI; PyTorch is served since the
 * Python-based backends, test/integration/framework-backends.test.ts) fails to load with Triton's
 * own leading text, so log parsers written for Triton still match, followed by what Nereid serves and the
 * page on moving such a model over (docs/from-triton.md).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, startServer, type TestServer } from './harness.js';

const IO = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]`;

describe('a model for a backend Nereid cannot serve', () => {
  let repo: string;
  let s: TestServer;

  before(async () => {
    repo = makeRepository({
      dali: {
        config: `name: "dali" backend: "dali" max_batch_size: 0 ${IO}`,
        files: { '1/model.dali': 'x' },
      },
      trt: {
        config: `name: "trt" platform: "tensorrt_plan" max_batch_size: 0 ${IO}`,
        files: { '1/model.plan': 'x' },
      },
    });
    s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  for (const [name, backend, triton] of [
    ['dali', 'dali', "unable to find backend 'dali' for model 'dali'"],
    ['trt', 'tensorrt_plan', "unexpected platform type 'tensorrt_plan' for trt"],
  ] as const) {
    it(`'${name}' (${backend}) fails to load saying what Nereid serves and where to read on`, async () => {
      const r = await post(`${s.url}/v2/repository/models/${name}/load`, {});
      assert.equal(r.status, 400, r.body.toString());
      const { error } = r.json<{ error: string }>();
      assert.ok(error.includes(`${triton}; Nereid serves the backends `), error);
      for (const served of [
        'onnxruntime',
        'python',
        'javascript',
        'identity',
        'onnxruntime_onnx',
        'ensemble',
      ]) {
        assert.ok(error.includes(served), `${served} in: ${error}`);
      }
      assert.match(error, /docs\/from-triton\.md/);
    });
  }
});
