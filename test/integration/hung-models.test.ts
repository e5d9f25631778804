// Hung and runaway models recover on their own (issue 23, item 8), over real sockets against a real server
// with real stub processes and worker threads:
// - a Python model whose execute hangs: the request fails after the execution timeout with a clear 503,
//   the stub is replaced, the next request succeeds on the new stub;
// - unloading or reloading a Python or JavaScript model whose instance is stuck (timeouts turned off)
//   finishes after --model-unload-timeout-secs: the stuck request fails with a clear 503, no stub or
//   worker is left behind, a reload's new version serves;
// - a JavaScript model that spins: the request fails after execution_timeout_ms, the worker is replaced,
//   the next request succeeds;
// - a Python model that leaks memory is restarted when its stub passes stub_memory_limit_mb, and the
//   server stays healthy.
// Timeouts are short and deadlines generous: nothing here measures how long anything took.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EXAMPLES,
  ROOT,
  addModel,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type HttpResult,
  type TestServer,
  waitFor,
} from './harness.js';
import { pythonFlags, stubPids } from './python-support.js';

const HANGING_PY = `
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            if value < 0:
                time.sleep(3600)
            out = np.array([os.getpid()], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
`;

const LEAKING_PY = `
import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.hoard = []

    def execute(self, requests):
        responses = []
        for request in requests:
            mib = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            if mib > 0:
                # np.ones writes every page, so the memory is resident, not just reserved.
                self.hoard.append(np.ones(mib * 1024 * 1024 // 8))
            out = np.array([os.getpid()], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
`;

const pyConfig = (name: string, params: Record<string, string> = {}): string =>
  `name: "${name}"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
${Object.entries(params)
  .map(([k, v]) => `parameters { key: "${k}" value: { string_value: "${v}" } }`)
  .join('\n')}
`;

const jsConfig = (name: string, timeoutMs: number): string =>
  JSON.stringify({
    name,
    backend: 'javascript',
    max_batch_size: 0,
    input: [{ name: 'MODE', data_type: 'TYPE_STRING', dims: [1] }],
    output: [
      { name: 'OUT', data_type: 'TYPE_INT32', dims: [1] },
      { name: 'TIMES', data_type: 'TYPE_FP64', dims: [3] },
    ],
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    parameters: { execution_timeout_ms: { string_value: String(timeoutMs) } },
  });

const inferPy = (s: TestServer, model: string, value: number): Promise<HttpResult> =>
  post(`${s.url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [value] }],
  });

const inferJs = (s: TestServer, model: string, mode: string): Promise<HttpResult> =>
  post(`${s.url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'MODE', datatype: 'BYTES', shape: [1], data: [mode] }],
  });

const pidOf = (res: HttpResult): number => {
  assert.equal(res.status, 200, res.body.toString());
  return res.json<{ outputs: { data: number[] }[] }>().outputs[0].data[0];
};

const errorOf = (res: HttpResult): string => (JSON.parse(res.body.toString()) as { error: string }).error;

/** Threads of this process (the server runs in it): a JavaScript instance is a worker thread. */
const threads = (): number => readdirSync('/proc/self/task').length;

describe('hung and runaway models recover', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    repo = makeRepository({
      hang_py: {
        config: pyConfig('hang_py', { execution_timeout_seconds: '1' }),
        files: { '1/model.py': HANGING_PY },
      },
      stuck_py: {
        config: pyConfig('stuck_py', { execution_timeout_seconds: '0' }),
        files: { '1/model.py': HANGING_PY },
      },
      reload_py: {
        config: pyConfig('reload_py', { execution_timeout_seconds: '0' }),
        files: { '1/model.py': HANGING_PY },
      },
      leak_py: {
        config: pyConfig('leak_py', { stub_memory_limit_mb: '300' }),
        files: { '1/model.py': LEAKING_PY },
      },
    });
    for (const name of ['repeat_int32_python', 'repeat_int32']) {
      cpSync(path.join(EXAMPLES, name), path.join(repo, name), { recursive: true });
    }
    for (const name of ['spin_js', 'stuck_js']) {
      addModel(repo, name, { versions: [] });
      cpSync(path.join(ROOT, 'test/fixtures/javascript/faults_js/1'), path.join(repo, name, '1'), {
        recursive: true,
      });
    }
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=hang_py',
      '--load-model=stuck_py',
      '--load-model=reload_py',
      '--load-model=leak_py',
      '--load-model=repeat_int32_python',
      '--load-model=repeat_int32',
      '--model-unload-timeout-secs=2',
      ...pythonFlags('nereid_hung_'),
    ]);
  });

  after(async () => {
    await server?.stop();
    if (repo) removeRepository(repo);
  });

  const live = async (): Promise<void> => {
    assert.equal((await request(`${server.url}/v2/health/live`)).status, 200);
  };

  it('a hung Python execute fails after execution_timeout_seconds, the stub restarts, the next request succeeds', async () => {
    const first = pidOf(await inferPy(server, 'hang_py', 5));
    assert.deepEqual(stubPids('hang_py_0_0'), [first]);
    const hung = await inferPy(server, 'hang_py', -1);
    assert.equal(hung.status, 503, hung.body.toString());
    assert.match(
      errorOf(hung),
      /Python model instance 'hang_py_0_0' made no progress for 1 s \(execution_timeout_seconds\); its stub was stopped and is being restarted/,
    );
    const next = pidOf(await inferPy(server, 'hang_py', 6));
    assert.notEqual(next, first);
    assert.equal(existsSync(`/proc/${first}`), false, 'the hung stub is gone');
    assert.ok(server.logs.some((l) => /made no progress for 1 s/.test(l)));
    assert.equal((await post(`${server.url}/v2/repository/models/hang_py/unload`, {})).status, 200);
    assert.deepEqual(stubPids('hang_py_0_0'), []);
    await live();
  });

  it('unloading a Python model stuck in execute (no execution timeout) finishes after the unload timeout', async () => {
    const pid = pidOf(await inferPy(server, 'stuck_py', 1));
    const stuck = inferPy(server, 'stuck_py', -1);
    await waitFor(() => server.logs.some((l) => l.includes('stuck_py')), 10_000).catch(() => undefined);
    // Give the request time to reach the stub; the unload must then still finish.
    await new Promise((r) => setTimeout(r, 300));
    const unload = await post(`${server.url}/v2/repository/models/stuck_py/unload`, {});
    assert.equal(unload.status, 200, unload.body.toString());
    const res = await stuck;
    assert.equal(res.status, 503, res.body.toString());
    assert.match(
      errorOf(res),
      /model 'stuck_py' version 1 was unloaded and its requests did not finish within 2 s \(--model-unload-timeout-secs\)/,
    );
    await waitFor(() => !existsSync(`/proc/${pid}`), 10_000);
    assert.deepEqual(stubPids('stuck_py_0_0'), []);
    const index = (await post(`${server.url}/v2/repository/index`, {})).json<
      { name: string; state?: string }[]
    >();
    assert.equal(index.find((e) => e.name === 'stuck_py')?.state, 'UNAVAILABLE');
    // And it loads and serves again.
    assert.equal((await post(`${server.url}/v2/repository/models/stuck_py/load`, {})).status, 200);
    pidOf(await inferPy(server, 'stuck_py', 2));
    await live();
  });

  it('reloading a Python model stuck in execute finishes; the new version serves, the stuck request fails', async () => {
    const oldPid = pidOf(await inferPy(server, 'reload_py', 1));
    const stuck = inferPy(server, 'reload_py', -1);
    await new Promise((r) => setTimeout(r, 300));
    const reload = await post(`${server.url}/v2/repository/models/reload_py/load`, {
      parameters: {
        config: JSON.stringify({
          name: 'reload_py',
          backend: 'python',
          max_batch_size: 0,
          input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
          output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
          instance_group: [{ count: 1, kind: 'KIND_CPU' }],
          parameters: { execution_timeout_seconds: { string_value: '5' } },
        }),
      },
    });
    assert.equal(reload.status, 200, reload.body.toString());
    const newPid = pidOf(await inferPy(server, 'reload_py', 2));
    assert.notEqual(newPid, oldPid);
    const res = await stuck;
    assert.equal(res.status, 503, res.body.toString());
    assert.match(errorOf(res), /--model-unload-timeout-secs/);
    await waitFor(() => !existsSync(`/proc/${oldPid}`), 10_000);
    assert.deepEqual(stubPids('reload_py_0_0'), [newPid]);
    pidOf(await inferPy(server, 'reload_py', 3));
    await live();
  });

  it('a JavaScript model that spins fails after execution_timeout_ms, its worker restarts, the next request succeeds', async () => {
    const load = await post(`${server.url}/v2/repository/models/spin_js/load`, {
      parameters: { config: jsConfig('spin_js', 1000) },
    });
    assert.equal(load.status, 200, load.body.toString());
    const ok = (res: HttpResult): number => {
      assert.equal(res.status, 200, res.body.toString());
      return res
        .json<{ outputs: { name: string; data: number[] }[] }>()
        .outputs.find((o) => o.name === 'TIMES')!.data[2];
    };
    const firstThread = ok(await inferJs(server, 'spin_js', 'ok'));
    const spun = await inferJs(server, 'spin_js', 'spin');
    assert.equal(spun.status, 503, spun.body.toString());
    assert.match(
      errorOf(spun),
      /made no progress for 1000 ms \(execution_timeout_ms\); its worker was restarted/,
    );
    const nextThread = ok(await inferJs(server, 'spin_js', 'ok'));
    assert.notEqual(nextThread, firstThread);
    assert.equal((await post(`${server.url}/v2/repository/models/spin_js/unload`, {})).status, 200);
    await live();
  });

  it('unloading a JavaScript model stuck in a busy loop (no execution timeout) finishes after the unload timeout', async () => {
    const baseline = threads();
    const load = await post(`${server.url}/v2/repository/models/stuck_js/load`, {
      parameters: { config: jsConfig('stuck_js', 0) },
    });
    assert.equal(load.status, 200, load.body.toString());
    assert.equal((await inferJs(server, 'stuck_js', 'ok')).status, 200);
    assert.ok(threads() > baseline, 'the instance runs a worker thread');
    const stuck = inferJs(server, 'stuck_js', 'spin');
    await new Promise((r) => setTimeout(r, 300));
    const unload = await post(`${server.url}/v2/repository/models/stuck_js/unload`, {});
    assert.equal(unload.status, 200, unload.body.toString());
    const res = await stuck;
    assert.equal(res.status, 503, res.body.toString());
    assert.match(errorOf(res), /model 'stuck_js' version 1 was unloaded.*--model-unload-timeout-secs/);
    // The spinning worker is gone: the process is back to the threads it had before the model loaded.
    await waitFor(() => threads() <= baseline, 10_000).catch(() =>
      assert.fail(`threads: ${baseline} before the load, ${threads()} after the unload`),
    );
    await live();
  });

  it('the bundled repeat examples refuse a WAIT that would hold their instance for an hour', async () => {
    for (const model of ['repeat_int32_python', 'repeat_int32']) {
      const res = await post(`${server.url}/v2/models/${model}/generate_stream`, {
        IN: [1],
        DELAY: [0],
        WAIT: [3_600_000],
      });
      assert.match(
        res.body.toString(),
        /WAIT must be at most 10000 ms and each DELAY at most 60000 ms/,
        model,
      );
      const ok = await post(`${server.url}/v2/models/${model}/generate_stream`, {
        IN: [4],
        DELAY: [0],
        WAIT: [0],
      });
      assert.equal(ok.status, 200, ok.body.toString());
      assert.match(ok.body.toString(), /"OUT":4/, model);
    }
  });

  it('a leaking Python model is restarted at stub_memory_limit_mb and the server stays healthy', async () => {
    const first = pidOf(await inferPy(server, 'leak_py', 0));
    let failed: string | undefined;
    await waitFor(async () => {
      const res = await inferPy(server, 'leak_py', 64);
      if (res.status !== 200) {
        failed = errorOf(res);
        assert.equal(res.status, 503, failed);
      } else if (pidOf(res) !== first) {
        return true;
      }
      // Paced so the watchdog (one sample a second) sees the stub grow by a few steps at a time.
      await new Promise((r) => setTimeout(r, 200));
      return !existsSync(`/proc/${first}`);
    }, 60_000);
    if (failed !== undefined) assert.match(failed, /stub_memory_limit_mb/);
    assert.ok(server.logs.some((l) => /over its limit of 300 MiB \(stub_memory_limit_mb\)/.test(l)));
    const next = pidOf(await inferPy(server, 'leak_py', 0));
    assert.notEqual(next, first);
    assert.deepEqual(stubPids('leak_py_0_0'), [next]);
    await live();
    assert.equal((await inferPy(server, 'hang_py', 1)).status, 404, 'hang_py stays unloaded');
  });
});
