// What a Kubernetes rollout relies on when a pod is told to stop (docs/kubernetes.md): on SIGTERM the server
// is not ready at once yet still serves for --exit-delay-secs (so the endpoints controller can take it out of
// rotation first), then refuses new connections and exits 0. (Draining what is in flight when the listeners
// close is responsiveness-and-shutdown.test.ts's.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, ROOT } from './harness.js';

const IDENTITY = `
name: "identity"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const body = { inputs: [{ name: 'INPUT0', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] };

// Long enough that the checks made inside the window finish in it even on a loaded 2-core machine; the
// test only asserts lower bounds on it (the server cannot close early, however slow the machine is).
const DELAY_SECS = 6;

/** A GET on a fresh connection: the status, or the socket error's code (ECONNREFUSED once closed). */
function freshGet(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('the nereid command with --exit-delay-secs', () => {
  it('fails readiness at once, keeps serving through the delay, then refuses new connections and exits 0', async () => {
    const repo = makeRepository({ identity: { config: IDENTITY, onnx: 'identity_fp32.onnx' } });
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'bin/nereid.js'),
        `--model-repository=${repo}`,
        '--http-port=0',
        '--http-address=127.0.0.1',
        '--allow-grpc=false',
        '--allow-metrics=false',
        `--exit-delay-secs=${DELAY_SECS}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    const port = await new Promise<number>((resolve, reject) => {
      const onData = (c: Buffer): void => {
        log += c.toString();
        const m = /Started HTTPService at [^:]+:(\d+)/.exec(log);
        if (m) resolve(Number(m[1]));
      };
      child.stderr.on('data', onData);
      child.stdout.on('data', onData);
      child.on('exit', (code) => reject(new Error(`exited early with ${code}: ${log}`)));
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      assert.equal((await request(`${url}/v2/health/ready`)).status, 200);
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

      const signalled = Date.now();
      child.kill('SIGTERM');
      // Readiness fails (Triton answers 400 when not ready) while liveness holds: the pod is drained, not
      // restarted.
      let ready = await freshGet(`${url}/v2/health/ready`);
      for (let i = 0; i < 100 && ready === 200; i++) {
        await new Promise((r) => setTimeout(r, 20));
        ready = await freshGet(`${url}/v2/health/ready`);
      }
      assert.equal(ready, 400, 'readiness must fail after SIGTERM');
      assert.equal(await freshGet(`${url}/v2/health/live`), 200);

      // Inside the window a request on a new connection is still served, and the reply asks the client to
      // reconnect (a keep-alive client would otherwise stay on this replica until it closes).
      const during = await post(`${url}/v2/models/identity/infer`, body);
      assert.equal(during.status, 200, 'a request made during the delay must be served');
      assert.equal(during.headers.get('connection'), 'close');

      // After the window: refused at the TCP level, not answered with an error.
      let probe = await freshGet(`${url}/v2/health/live`);
      while (probe === 200) {
        await new Promise((r) => setTimeout(r, 100));
        probe = await freshGet(`${url}/v2/health/live`);
      }
      const refusedAfter = Date.now() - signalled;
      assert.equal(probe, 'ECONNREFUSED');
      assert.ok(
        refusedAfter >= DELAY_SECS * 1000 - 50,
        `connections were refused ${refusedAfter} ms after SIGTERM, before the ${DELAY_SECS} s delay`,
      );
      assert.equal(await exited, 0);
      assert.match(log, /still serving for 6 s \(--exit-delay-secs\)/);
    } finally {
      child.kill('SIGKILL');
      removeRepository(repo);
    }
  });
});
