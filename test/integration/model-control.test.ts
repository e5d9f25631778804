// Load, reload, unload and poll while requests run: no accepted request is lost or failed.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  addModel,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';

const config = (name: string, maxBatch: number): string => `
name: "${name}"
backend: "onnxruntime"
max_batch_size: ${maxBatch}
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
`;

const body = {
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', data: Array.from({ length: 16 }, () => 1) },
  ],
};

/** Runs `total` requests with `concurrency` workers; returns the status codes. */
async function load(url: string, total: number, concurrency: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const r = await post(url, body);
        if (r.status === 200) {
          const out = r.json<{ outputs: { name: string; data: number[] }[] }>();
          assert.equal(out.outputs.find((o) => o.name === 'OUTPUT0')?.data[5], 6);
        }
        statuses.push(r.status);
      }
    }),
  );
  return statuses;
}

describe('model control while serving (explicit mode)', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ m: { config: config('m', 8), onnx: 'add_sub_fp32.onnx' } });
    s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=m']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('reloads three times under load without a single failed request', async () => {
    const traffic = load(`${s.url}/v2/models/m/infer`, 300, 8);
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 30));
      const r = await post(`${s.url}/v2/repository/models/m/load`, {});
      assert.equal(r.status, 200, r.body.toString());
    }
    const statuses = await traffic;
    assert.equal(statuses.length, 300);
    assert.deepEqual(
      statuses.filter((c) => c !== 200),
      [],
    );
  });

  it('unload lets accepted requests finish; later ones get a clean error', async () => {
    const traffic = load(`${s.url}/v2/models/m/infer`, 200, 8);
    await new Promise((r) => setTimeout(r, 40));
    const r = await post(`${s.url}/v2/repository/models/m/unload`, {});
    assert.equal(r.status, 200);
    const statuses = await traffic;
    assert.equal(statuses.length, 200);
    for (const c of statuses) assert.ok(c === 200 || c === 503 || c === 404 || c === 400, `status ${c}`);
    assert.ok(statuses.includes(200));
    assert.equal((await request(`${s.url}/v2/models/m/ready`)).status, 400);
    assert.equal((await post(`${s.url}/v2/repository/models/m/load`, {})).status, 200);
    assert.equal((await request(`${s.url}/v2/models/m/ready`)).status, 200);
  });

  it('rejects a load whose file override escapes the model folder', async () => {
    const cfg = JSON.stringify({ name: 'm', backend: 'onnxruntime' });
    const r = await post(`${s.url}/v2/repository/models/m/load`, {
      parameters: { config: cfg, 'file:../../etc/evil': Buffer.from('x').toString('base64') },
    });
    assert.equal(r.status, 500, "Triton's INTERNAL (400 with --load-error-status=client-error)");
    assert.equal((await request(`${s.url}/v2/models/m/ready`)).status, 200);
  });
});

describe('poll mode', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ a: { config: config('a', 8), onnx: 'add_sub_fp32.onnx' } });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=poll',
      '--repository-poll-secs=1',
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('picks up added, changed and removed models; a change under load loses nothing', async () => {
    addModel(repo, 'b', { config: config('b', 4), onnx: 'add_sub_fp32.onnx' });
    await waitFor(async () => (await request(`${s.url}/v2/models/b/ready`)).status === 200);

    const traffic = load(`${s.url}/v2/models/a/infer`, 400, 4);
    writeFileSync(path.join(repo, 'a', 'config.pbtxt'), config('a', 2));
    await waitFor(async () => {
      const c = (await request(`${s.url}/v2/models/a/config`)).json<{ max_batch_size: number }>();
      return c.max_batch_size === 2;
    });
    const statuses = await traffic;
    assert.deepEqual(
      statuses.filter((c) => c !== 200),
      [],
    );

    rmSync(path.join(repo, 'b'), { recursive: true });
    await waitFor(async () => (await request(`${s.url}/v2/models/b/ready`)).status !== 200);
    const r = await post(`${s.url}/v2/repository/models/a/unload`, {});
    assert.equal(r.status, 503);
  });
});
