// Issue 21 item 2: a request resolves its model once (InferenceServerApi.resolveModel) and the handle holds
// that version, as Triton's InferenceRequest holds the shared_ptr to its model. A reload or unload between
// the lookup and the execution must not move the request to another version: it runs on the version it
// resolved (whose unload waits for it), the next request finds the new version, and when the unload stops
// waiting (--model-unload-timeout-secs) a request that has not run yet fails with Triton's UNAVAILABLE
// error. The window is opened by the test itself (it holds the handle, or holds back the HTTP body after
// the frontend resolved), never by timing.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { NereidError } from '../../src/common/errors.js';
import { Logger } from '../../src/common/logger.js';
import type { InferenceServer } from '../../src/core/server.js';
import type { InferenceRequest } from '../../src/core/types.js';
import { createHttpFrontend } from '../../src/frontends/http/index.js';
import { makeRepository, removeRepository, startServer, type TestServer } from './harness.js';

/** The built-in identity backend (no worker): versions 1 and 2 exist on disk, the policy picks one. */
function config(version: number): string {
  return JSON.stringify({
    name: 'ver',
    backend: 'identity',
    max_batch_size: 0,
    version_policy: { specific: { versions: [version] } },
    input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [1] }],
  });
}

function request(value: number): InferenceRequest {
  const data = Buffer.alloc(4);
  data.writeInt32LE(value);
  return { modelName: 'ver', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data }] };
}

function stateOf(api: InferenceServer, version: string): string | undefined {
  return api.repositoryIndex(false).find((e) => e.name === 'ver' && e.version === version)?.state;
}

/** Waits (on the event loop, no clock) until the repository shows the condition. */
async function until(what: string, condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100_000; i++) {
    if (condition()) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`never happened: ${what}`);
}

describe('a request runs on the version it resolved', () => {
  let repo: string;
  let s: TestServer;
  let api: InferenceServer;

  before(async () => {
    repo = makeRepository({ ver: { versions: [1, 2] } });
    s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit']);
    api = s.running.server;
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('a reload between resolveModel and the execution: the request answers from the old version, the next from the new', async () => {
    await api.loadModel('ver', { config: config(1) });
    const handle = api.resolveModel('ver');
    assert.equal(handle.version, '1');

    // The reload swaps version 2 in and unloads version 1, whose unload waits for the handle.
    await api.loadModel('ver', { config: config(2) });
    assert.equal(stateOf(api, '1'), 'UNLOADING', 'the held version drains instead of disappearing');
    const next = api.resolveModel('ver');
    assert.equal(next.version, '2', 'a new lookup finds the new version');
    next.release();

    const response = await handle.infer(request(7));
    assert.equal(response.modelVersion, '1', 'the request ran on the version its checks used');
    assert.equal(response.outputs[0].data.readInt32LE(0), 7);
    handle.release();

    await until('version 1 unloaded once released', () => stateOf(api, '1') === 'UNAVAILABLE');
    const later = await api.inferOnce(request(8));
    assert.equal(later.modelVersion, '2', 'the new version serves the next request');
    assert.equal(later.outputs[0].data.readInt32LE(0), 8);
  });

  it('a released handle does not hold the version: a request on it after the reload is refused with UNAVAILABLE', async () => {
    await api.loadModel('ver', { config: config(1) });
    const handle = api.resolveModel('ver');
    handle.release();
    await api.loadModel('ver', { config: config(2) });
    await until('version 1 unloaded', () => stateOf(api, '1') === 'UNAVAILABLE');
    await assert.rejects(handle.infer(request(1)), (err: unknown) => {
      assert.ok(err instanceof NereidError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.equal(err.message, "Request for unknown model: 'ver' version 1 is not at ready state");
      return true;
    });
  });

  it('over HTTP: a reload while the request body is still arriving answers from the version resolved when the request began', async () => {
    await api.loadModel('ver', { config: config(1) });
    // The test's hook: the real server behind a proxy that reports when the frontend resolved the model.
    let resolved!: () => void;
    const resolvedNow = new Promise<void>((r) => (resolved = r));
    const hooked = new Proxy(api, {
      get(target, prop) {
        if (prop === 'resolveModel') {
          return (name: string, version?: string) => {
            const handle = target.resolveModel(name, version);
            resolved();
            return handle;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const frontend = createHttpFrontend(hooked, {
      address: '127.0.0.1',
      port: 0,
      log: new Logger({}, () => {}),
    });
    const { port } = await frontend.listen();
    try {
      const body = Buffer.from(
        JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1], datatype: 'INT32', data: [5] }] }),
      );
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v2/models/ver/infer',
            headers: { 'Content-Type': 'application/json', 'Content-Length': body.length },
            agent: false,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
            );
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.write(body.subarray(0, 10));
        // The rest of the body goes only once the model was resolved and reloaded.
        void resolvedNow
          .then(() => api.loadModel('ver', { config: config(2) }))
          .then(() => {
            assert.equal(stateOf(api, '1'), 'UNLOADING');
            req.end(body.subarray(10));
          }, reject);
      });
      const r = await answer;
      assert.equal(r.status, 200, r.body);
      const doc = JSON.parse(r.body) as { model_version: string; outputs: { data: number[] }[] };
      assert.equal(doc.model_version, '1');
      assert.deepEqual(doc.outputs[0].data, [5]);
      await until('version 1 unloaded after the reply', () => stateOf(api, '1') === 'UNAVAILABLE');
      const next = await api.inferOnce(request(6));
      assert.equal(next.modelVersion, '2');
    } finally {
      await frontend.close();
    }
  });
});

describe('an unload that stops waiting fails the held request cleanly', () => {
  let repo: string;
  let s: TestServer;

  before(async () => {
    repo = makeRepository({ ver: { versions: [1, 2] } });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--model-unload-timeout-secs=1',
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it("a handle not yet run when --model-unload-timeout-secs ends the unload gets Triton's UNAVAILABLE error", async () => {
    const api = s.running.server;
    await api.loadModel('ver', { config: config(1) });
    const handle = api.resolveModel('ver');
    await api.unloadModel('ver'); // waits for the hold until the unload timeout gives up on it
    assert.equal(stateOf(api, '1'), 'UNAVAILABLE');
    await assert.rejects(handle.infer(request(3)), (err: unknown) => {
      assert.ok(err instanceof NereidError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.equal(err.message, "Request for unknown model: 'ver' version 1 is not at ready state");
      return true;
    });
    handle.release();
    assert.ok(
      s.logs.some((l) => l.includes("model 'ver' version 1 did not finish its requests within 1 s")),
      'the unload says why it stopped waiting',
    );
  });
});
