// Cancellation end to end on a real server: a client that closes its HTTP connection or cancels its gRPC
// call takes a queued request out of the queue and aborts a running one; the built-in backends stop at
// once (the instance is free again), the request counts as CANCELED, and the server stays healthy and
// stops promptly.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput } from '../../src/client/index.js';
import {
  EXAMPLES,
  makeRepository,
  post,
  postOnAgent,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';
import { postSse } from './sse.js';

const example = (model: string): string => readFileSync(path.join(EXAMPLES, model, 'config.pbtxt'), 'utf8');

// The example identity model, renamed, waiting 3 s per execution on its one instance. The wait is long so
// that "stopped by the cancel" and "waited it out" are told apart by minutes of margin, not by speed.
const SLOW_IDENTITY =
  example('custom_zero_1_float32').replace('name: "custom_zero_1_float32"', 'name: "slow_identity"') +
  'parameters [{ key: "execute_delay_ms" value: { string_value: "3000" } }]\n';

interface Stats {
  execution_count: number;
  inference_stats: { success: { count: number }; fail: { count: number } };
  response_stats: Record<string, { success: { count: number }; cancel: { count: number } }>;
}

const identityBody = (v: number): string =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [v] }] });

describe('cancellation', () => {
  let s: TestServer;
  let repo: string;

  before(async () => {
    repo = makeRepository({
      repeat_int32: { config: example('repeat_int32') },
      slow_identity: { config: SLOW_IDENTITY },
    });
    s = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  const stats = async (model: string): Promise<Stats> =>
    (await request(`${s.url}/v2/models/${model}/stats`)).json<{ model_stats: Stats[] }>().model_stats[0];

  /** A repeat_int32 request that would take 20 s after its first response. */
  const longRepeat = { IN: [1, 2, 3], DELAY: [10, 10_000, 10_000], WAIT: 0 };

  it('a client closing generate_stream mid-stream aborts the request: CANCELED, the instance free at once', async () => {
    const before = await stats('repeat_int32');
    const controller = new AbortController();
    const res = await postSse(
      `${s.url}/v2/models/repeat_int32/generate_stream`,
      longRepeat,
      controller.signal,
    );
    const events = res.events();
    const first = await events.next();
    assert.equal(first.done, false);
    assert.equal(first.value?.data.IDX, 0);
    controller.abort();
    await waitFor(
      async () =>
        (await stats('repeat_int32')).inference_stats.fail.count === before.inference_stats.fail.count + 1,
    );
    const after = await stats('repeat_int32');
    assert.equal(after.inference_stats.success.count, before.inference_stats.success.count);
    assert.equal(after.response_stats['1'].cancel.count, (before.response_stats['1']?.cancel.count ?? 0) + 1);

    // The only instance is free again: the next request is served without waiting out the old DELAYs.
    const start = performance.now();
    const next = await post(`${s.url}/v2/models/repeat_int32/generate`, { IN: [4], DELAY: [0], WAIT: 0 });
    assert.equal(next.status, 200);
    assert.equal(next.json<{ OUT: number }>().OUT, 4);
    // Waiting out the old request's DELAYs would take 20 s.
    assert.ok(performance.now() - start < 15_000, 'the next request did not wait for the cancelled one');
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    assert.equal((await request(`${s.url}/v2/health/ready`)).status, 200);
  });

  it('a client leaving /infer while its request is queued takes it out of the queue', async () => {
    const before = await stats('slow_identity');
    const running = post(`${s.url}/v2/models/slow_identity/infer`, identityBody(1));
    await new Promise((r) => setTimeout(r, 100)); // the first request holds the only instance
    const controller = new AbortController();
    const queued = fetch(`${s.url}/v2/models/slow_identity/infer`, {
      method: 'POST',
      body: identityBody(2),
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await assert.rejects(queued, { name: 'AbortError' });
    const first = await running;
    assert.equal(first.status, 200);
    await waitFor(
      async () =>
        (await stats('slow_identity')).inference_stats.fail.count === before.inference_stats.fail.count + 1,
    );
    const after = await stats('slow_identity');
    assert.equal(after.inference_stats.success.count, before.inference_stats.success.count + 1);
    assert.equal(after.execution_count, before.execution_count + 1, 'the cancelled request never ran');
  });

  it('a client leaving /infer while its request runs aborts it; it counts as CANCELED in the metrics', async () => {
    const before = await stats('slow_identity');
    const controller = new AbortController();
    const start = performance.now();
    const call = fetch(`${s.url}/v2/models/slow_identity/infer`, {
      method: 'POST',
      body: identityBody(3),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(call, { name: 'AbortError' });
    await waitFor(
      async () =>
        (await stats('slow_identity')).inference_stats.fail.count === before.inference_stats.fail.count + 1,
    );
    // identity's wait stopped with the abort: abort (100 ms) + a new request's delay (3 s) is about 3.1 s;
    // had the first execution waited out its delay, the next one could not end before 6 s.
    const next = await post(`${s.url}/v2/models/slow_identity/infer`, identityBody(4));
    assert.equal(next.status, 200);
    assert.ok(performance.now() - start < 5_500, `took ${performance.now() - start} ms`);

    const metrics = s.running.metrics;
    assert.ok(metrics, 'the metrics endpoint runs');
    const text = await (await fetch(`http://127.0.0.1:${metrics.port}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('nv_inference_request_failure{') &&
          l.includes('model="slow_identity"') &&
          l.includes('reason="CANCELED"'),
      );
    assert.ok(line, 'a CANCELED failure series for slow_identity');
    assert.equal(Number(line.split(' ').pop()), 2);
  });

  it("a finished request's connection closing later cancels nothing (request signals are reused)", async () => {
    const before = await stats('slow_identity');
    // Request A on its own keep-alive connection finishes; its signal goes back to the pool.
    const agentA = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const a = await postOnAgent(agentA, `${s.url}/v2/models/slow_identity/infer`, identityBody(5));
    assert.equal(a.status, 200);
    // Request B, on another connection, most likely runs with A's signal; A's connection now closes.
    const agentB = new http.Agent({ keepAlive: false });
    const b = postOnAgent(agentB, `${s.url}/v2/models/slow_identity/infer`, identityBody(6));
    await new Promise((r) => setTimeout(r, 200));
    agentA.destroy();
    const done = await b;
    assert.equal(done.status, 200, done.body);
    assert.deepEqual((JSON.parse(done.body) as { outputs: { data: number[] }[] }).outputs[0].data, [6]);
    const after = await stats('slow_identity');
    assert.equal(after.inference_stats.success.count, before.inference_stats.success.count + 2);
    assert.equal(after.inference_stats.fail.count, before.inference_stats.fail.count);
  });

  it('cancelling a gRPC stream aborts its running requests', async () => {
    const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    try {
      const before = await stats('repeat_int32');
      const controller = new AbortController();
      const stream = client.streamInfer({ signal: controller.signal });
      stream.send({
        model: 'repeat_int32',
        inputs: [
          new InferInput('IN', [3], 'INT32').setData([1, 2, 3]),
          new InferInput('DELAY', [3], 'UINT32').setData([10, 10_000, 10_000]),
          new InferInput('WAIT', [1], 'UINT32').setData([0]),
        ],
      });
      let seen = 0;
      await assert.rejects(async () => {
        for await (const item of stream) {
          assert.equal(item.error, undefined);
          seen++;
          controller.abort();
        }
      });
      assert.equal(seen, 1);
      await waitFor(
        async () =>
          (await stats('repeat_int32')).inference_stats.fail.count === before.inference_stats.fail.count + 1,
      );
      const next = await post(`${s.url}/v2/models/repeat_int32/generate`, { IN: [5], DELAY: [0], WAIT: 0 });
      assert.equal(next.json<{ OUT: number }>().OUT, 5);
    } finally {
      client.close();
    }
  });

  it('cancelling a unary gRPC ModelInfer aborts its running request', async () => {
    const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    try {
      // The connection is up before the request goes, so the request reaches the server well before the
      // cancel (on a fresh client the cancel could otherwise beat the request, and nothing would run).
      assert.equal(await client.isServerReady(), true);
      const before = await stats('slow_identity');
      const controller = new AbortController();
      const start = performance.now();
      setTimeout(() => controller.abort(new Error('gave up')), 300);
      await assert.rejects(
        client.infer('slow_identity', [new InferInput('INPUT0', [1, 1], 'FP32').setData([1])], {
          signal: controller.signal,
        }),
        /gave up/,
      );
      await waitFor(
        async () =>
          (await stats('slow_identity')).inference_stats.fail.count === before.inference_stats.fail.count + 1,
      );
      assert.ok(
        performance.now() - start < 3_000,
        'the request ended with the cancel, not after its 3 s delay',
      );
    } finally {
      client.close();
    }
  });

  it('stopping the server lets a running stream finish, then closes its connection', async () => {
    const own = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=repeat_int32',
    ]);
    const res = await postSse(`${own.url}/v2/models/repeat_int32/generate_stream`, {
      IN: [1, 2, 3],
      DELAY: [50, 200, 200],
      WAIT: 0,
    });
    const events = res.events();
    await events.next();
    const stopping = own.stop();
    const rest: number[] = [];
    for await (const e of events) rest.push(e.data.IDX as number);
    await stopping;
    assert.deepEqual(rest, [1, 2]);
  });

  it('the server stops promptly once the client of a long stream went away', async () => {
    const own = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=repeat_int32',
    ]);
    const controller = new AbortController();
    const res = await postSse(
      `${own.url}/v2/models/repeat_int32/generate_stream`,
      longRepeat,
      controller.signal,
    );
    await res.events().next();
    controller.abort();
    const start = performance.now();
    await own.stop();
    // Waiting for the abandoned stream would take 20 s.
    assert.ok(performance.now() - start < 15_000, `stop took ${performance.now() - start} ms`);
  });
});
