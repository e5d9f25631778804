// Issue 23 item 6, over real sockets against a real server process: many kept-alive connections hammering
// a dynamic-batching model with max_queue_size (fast 503 refusals) must not starve the listen queue. Every
// accepted request gets its own answer, refusals are clean 503s that keep the connection, and health
// checks on NEW connections (the main port and --http-health-port) are answered while it lasts. Also the
// connection cap (--http-max-connections) and its clean refusal. Timing is measured in bench/overload, not
// asserted here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeRepository, removeRepository, request, startServer, waitFor } from './harness.js';
import { connect, requestHead, type Outcome, type RawConnection } from './raw-http.js';
import { spawnServer, type SpawnedServer } from './spawned-server.js';

const QUEUED = `name: "queued"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { default_queue_policy { max_queue_size: 8 } }
parameters { key: "execute_delay_ms" value: { string_value: "50" } }
`;

/** More than Node's default listen backlog (511), all opened at once. */
const CONNECTIONS = 600;
const REQUESTS_PER_CONNECTION = 4;

function inferRequest(values: number[]): Buffer[] {
  const json = Buffer.from(
    JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: values }] }),
  );
  return [
    requestHead('POST', '/v2/models/queued/infer', json.length, { 'Content-Type': 'application/json' }),
    json,
  ];
}

const header = (o: Extract<Outcome, { kind: 'response' }>, name: string): string | undefined =>
  new RegExp(`\\r\\n${name}:[ \\t]*([^\\r]*)`, 'i').exec(o.head)?.[1];

/** Health checks on a new connection each, back to back, until `done` says stop. */
async function probeUntil(
  port: number,
  done: () => boolean,
): Promise<{ answered: number; failures: string[] }> {
  let answered = 0;
  const failures: string[] = [];
  while (!done()) {
    const c = await connect(port, '127.0.0.1', 120_000);
    if (typeof c === 'string') {
      failures.push(`connect: ${c}`);
      continue;
    }
    const o = await c.send(requestHead('GET', '/v2/health/ready', 0, { Connection: 'close' }));
    c.close();
    if (o.kind === 'lost') failures.push(o.reason);
    else if (o.status !== 200) failures.push(`status ${o.status}`);
    else answered++;
  }
  return { answered, failures };
}

describe('fast refusals do not starve the accept queue', () => {
  let s: SpawnedServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ queued: { config: QUEUED } });
    s = await spawnServer([`--model-repository=${repo}`, '--http-health-port=0']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('every accepted request is answered, 503s keep their connection, new-connection health checks are answered', async () => {
    let finished = false;
    const mainProbes = probeUntil(s.port, () => finished);
    const portProbes = probeUntil(s.healthPort!, () => finished);

    const problems: string[] = [];
    let ok = 0;
    let refused = 0;
    const client = async (index: number): Promise<void> => {
      const c = await connect(s.port, '127.0.0.1', 120_000);
      if (typeof c === 'string') {
        problems.push(`connection ${index}: connect failed: ${c}`);
        return;
      }
      try {
        for (let r = 0; r < REQUESTS_PER_CONNECTION; r++) {
          const values = Array.from({ length: 16 }, (_, i) => index * 1000 + r * 16 + i);
          const o = await c.send(inferRequest(values));
          if (o.kind === 'lost') {
            problems.push(`connection ${index}, request ${r}: lost (${o.reason})`);
            return;
          }
          if (o.status === 200) {
            const doc = JSON.parse(o.body.toString()) as { outputs: { name: string; data: number[] }[] };
            if (JSON.stringify(doc.outputs[0].data) !== JSON.stringify(values))
              problems.push(`connection ${index}, request ${r}: answered with another request's data`);
            ok++;
          } else if (o.status === 503) {
            refused++;
            if (o.closes) problems.push(`connection ${index}, request ${r}: the 503 closed the connection`);
            if (header(o, 'content-type') !== 'application/json') problems.push(`503 without a JSON body`);
            const doc = JSON.parse(o.body.toString()) as { error?: string };
            if (doc.error !== 'Exceeds maximum queue size')
              problems.push(`503 with an unexpected error: ${o.body.toString()}`);
          } else {
            problems.push(`connection ${index}, request ${r}: status ${o.status} ${o.body.toString()}`);
          }
        }
      } finally {
        c.close();
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => client(i)));
    finished = true;
    const [main, port] = await Promise.all([mainProbes, portProbes]);

    assert.deepEqual(problems.slice(0, 10), [], `${problems.length} problems`);
    assert.equal(ok + refused, CONNECTIONS * REQUESTS_PER_CONNECTION);
    assert.ok(
      refused > 0,
      'no request was refused: the model was not overloaded and the test proves nothing',
    );
    assert.ok(ok > 0, 'no request was accepted');
    assert.deepEqual(main.failures, [], 'health checks on new connections to the HTTP port failed');
    assert.deepEqual(port.failures, [], 'health checks on --http-health-port failed');
    assert.ok(main.answered > 0, 'no health check on a new connection was answered during the load');
    assert.ok(port.answered > 0, 'no health check on the health port was answered during the load');
  });

  it('the health port answers live and ready, and nothing else', async () => {
    const base = `http://127.0.0.1:${s.healthPort}`;
    assert.equal((await request(`${base}/v2/health/live`)).status, 200);
    assert.equal((await request(`${base}/v2/health/ready`)).status, 200);
    // HEAD as on the HTTP port and in Triton: 405 (test/differential/test_diff_head.py).
    assert.equal((await request(`${base}/v2/health/live`, { method: 'HEAD' })).status, 405);
    assert.equal((await request(`${base}/v2/health/ready`, { method: 'HEAD' })).status, 405);
    const other = await request(`${base}/v2/models/queued/infer`, { method: 'POST', body: '{}' });
    assert.equal(other.status, 404);
    assert.deepEqual(other.json(), { error: 'Not Found' });
  });
});

/** Answers in ten minutes: a request to it is being served for the whole test (cancelled when its client leaves). */
const HELD = `name: "held"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
parameters { key: "execute_delay_ms" value: { string_value: "600000" } }
`;

function heldRequest(): Buffer[] {
  const json = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', shape: [16], datatype: 'FP32', data: new Array(16).fill(0) }],
    }),
  );
  return [
    requestHead('POST', '/v2/models/held/infer', json.length, { 'Content-Type': 'application/json' }),
    json,
  ];
}

describe('--http-max-connections', () => {
  it('refuses requests on connections over the cap with a clean 503 and Connection: close, health checks excepted', async () => {
    const repo = makeRepository({ queued: { config: QUEUED }, held: { config: HELD } });
    const s = await startServer([`--model-repository=${repo}`, '--http-max-connections=3']);
    const port = Number(new URL(s.url).port);
    const open: RawConnection[] = [];
    try {
      // Three connections, each proven accepted by an answer and then with a request being served, are the
      // cap: none of them may be closed for a newcomer (an idle one would be, see below).
      for (let i = 0; i < 3; i++) {
        const c = await connect(port, '127.0.0.1', 600_000);
        if (typeof c === 'string') assert.fail(`connect: ${c}`);
        const o = await c.send(requestHead('GET', '/v2/health/live', 0));
        assert.equal(o.kind === 'response' && o.status, 200);
        void c.send(heldRequest());
        open.push(c);
      }
      // Until the server has read all three: one runs on the model's one instance, two wait in its queue.
      const metricsUrl = `http://127.0.0.1:${s.running.metrics!.port}/metrics`;
      await waitFor(
        async () =>
          (await (await fetch(metricsUrl)).text()).includes(
            'nv_inference_pending_request_count{model="held",version="1"} 2\n',
          ),
        120_000,
      );
      const over = await connect(port, '127.0.0.1', 30_000);
      assert.ok(typeof over !== 'string');
      const refused = await over.send(inferRequest(new Array<number>(16).fill(1)));
      assert.ok(
        refused.kind === 'response',
        `the request over the cap got no answer: ${JSON.stringify(refused)}`,
      );
      assert.equal(refused.status, 503);
      assert.ok(refused.closes, 'the refusal must close the connection');
      assert.match(
        (JSON.parse(refused.body.toString()) as { error: string }).error,
        /connection limit \(3\).*--http-max-connections/,
      );
      await over.whenClosed();

      // A probe on a connection over the cap is still answered (then closed).
      const probe = await connect(port, '127.0.0.1', 30_000);
      assert.ok(typeof probe !== 'string');
      const ready = await probe.send(requestHead('GET', '/v2/health/ready', 0));
      assert.ok(ready.kind === 'response');
      assert.equal(ready.status, 200);
      assert.ok(ready.closes);
      await probe.whenClosed();

      // Below the cap again, a new connection is served normally.
      open.pop()!.close();
      let served: Outcome | undefined;
      for (let attempt = 0; attempt < 50; attempt++) {
        const c = await connect(port, '127.0.0.1', 30_000);
        assert.ok(typeof c !== 'string');
        served = await c.send(inferRequest(new Array<number>(16).fill(2)));
        c.close();
        if (served.kind === 'response' && served.status === 200) break;
        await new Promise((r) => setTimeout(r, 20)); // the closed socket is counted out when its close lands
      }
      assert.ok(served?.kind === 'response' && served.status === 200, JSON.stringify(served));
      assert.ok(!served.closes);
    } finally {
      for (const c of open) c.close();
      await s.stop();
      removeRepository(repo);
    }
  });
});

describe('--http-max-connections with idle connections', () => {
  it('closes a connection that never sent a request for a newcomer, which is served', async () => {
    const repo = makeRepository({ queued: { config: QUEUED } });
    const s = await startServer([`--model-repository=${repo}`, '--http-max-connections=3']);
    const port = Number(new URL(s.url).port);
    const idle: RawConnection[] = [];
    try {
      // The cap held by connections that send nothing (an attacker's): a newcomer is served at once.
      for (let i = 0; i < 3; i++) {
        const c = await connect(port, '127.0.0.1', 30_000);
        if (typeof c === 'string') assert.fail(`connect: ${c}`);
        idle.push(c);
      }
      const c = await connect(port, '127.0.0.1', 30_000);
      assert.ok(typeof c !== 'string');
      const served = await c.send(inferRequest(new Array<number>(16).fill(3)));
      assert.ok(served.kind === 'response' && served.status === 200, JSON.stringify(served));
      // The idle connection accepted first is the one closed.
      await idle[0].whenClosed();
      assert.ok(!idle[1].closed && !idle[2].closed);
      c.close();
    } finally {
      for (const c of idle) c.close();
      await s.stop();
      removeRepository(repo);
    }
  });
});
