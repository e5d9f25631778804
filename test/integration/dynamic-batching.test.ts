// The dynamic batcher and the rate limiter against a real server: batches that form under concurrency
// (checked in /v2/models/<m>/stats), preferred sizes, the queue delay (and early dispatch, Nereid's
// extension), max_batch_size, priorities, queue
// policies (REJECT, DELAY, max_queue_size), preserve_ordering, cancellation of a queued request, and two
// models serialised by a shared rate-limiter resource. Timing comes from `busy` requests (a model whose
// run time is set by the input's values, test/integration/tiny-onnx.ts) that keep an instance occupied
// far longer than any pause the test makes, so the orderings asserted here do not depend on machine load.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseFlags } from '../../src/compose/flags.js';
import type { ModelStatistics } from '../../src/core/types.js';
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
import { busyModel } from './tiny-onnx.js';

/** Keeps an instance busy for about 3 s on an idle 2-core AVX-512 machine (4·k³ flops; longer when loaded). */
const BUSY = 4800;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function identityConfig(name: string, maxBatch: number, dynamicBatching: string, instances = 1): string {
  return `name: "${name}" backend: "onnxruntime" max_batch_size: ${maxBatch}
    input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
    instance_group [ { kind: KIND_CPU count: ${instances} } ]
    dynamic_batching { ${dynamicBatching} }`;
}

function busyConfig(name: string, maxBatch: number, scheduling: string, group = 'count: 1'): string {
  const dims = maxBatch > 0 ? '[ 16 ]' : '[ -1, 16 ]';
  return `name: "${name}" backend: "onnxruntime" max_batch_size: ${maxBatch}
    input [ { name: "INPUT0" data_type: TYPE_FP32 dims: ${dims} } ]
    output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: ${dims} } ]
    instance_group [ { kind: KIND_CPU ${group} } ]
    ${scheduling}`;
}

/** Adds a model folder holding the busy model. */
function addBusy(repo: string, name: string, config: string): void {
  addModel(repo, name, { config });
  writeFileSync(path.join(repo, name, '1', 'model.onnx'), busyModel());
}

interface Timed {
  readonly status: number;
  readonly body: { error?: string; outputs?: { data: number[] }[] };
  /** ms since the test's start when the answer was complete */
  readonly at: number;
}

const t0 = performance.now();

async function infer(
  url: string,
  model: string,
  opts: {
    k?: number;
    batch?: number;
    n?: number;
    params?: Record<string, number>;
    signal?: AbortSignal;
  } = {},
): Promise<Timed> {
  const batch = opts.batch ?? 1;
  const n = opts.n ?? 16;
  const data = Array.from({ length: batch * n }, (_, i) => (i === 0 ? (opts.k ?? 1) : 1));
  const shape = [batch, n];
  const res = await fetch(`${url}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [{ name: 'INPUT0', shape, datatype: 'FP32', data }],
      parameters: opts.params,
    }),
    signal: opts.signal,
  });
  const body = (await res.json()) as Timed['body'];
  return { status: res.status, body, at: performance.now() - t0 };
}

async function stats(url: string, model: string): Promise<ModelStatistics> {
  const res = await request(`${url}/v2/models/${model}/stats`);
  assert.equal(res.status, 200);
  return res.json<{ model_stats: ModelStatistics[] }>().model_stats[0];
}

/** Requests the model's scheduler holds (nv_inference_pending_request_count). */
async function pending(s: TestServer, model: string): Promise<number> {
  const res = await request(`http://127.0.0.1:${s.running.metrics!.port}/metrics`);
  const re = new RegExp(`^nv_inference_pending_request_count\\{[^}]*model="${model}"[^}]*\\} (\\d+)$`, 'm');
  return Number(re.exec(res.body.toString('utf8'))?.[1] ?? -1);
}

/** Waits until `n` requests of `model` are queued (so the instance is busy with an earlier one). */
async function untilQueued(s: TestServer, model: string, n: number): Promise<void> {
  await waitFor(async () => (await pending(s, model)) === n);
}

/** Starts a request that keeps the model's instance busy, and gives it time to arrive. */
async function startBusy(s: TestServer, model: string): Promise<{ readonly done: Promise<Timed> }> {
  const done = infer(s.url, model, { k: BUSY });
  await sleep(300);
  return { done };
}

/** batch size → number of executions of that size */
function batches(s: ModelStatistics): Record<number, number> {
  return Object.fromEntries(s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]));
}

describe('dynamic batching', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({
      id_pref: {
        config: identityConfig(
          'id_pref',
          8,
          'preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000000',
        ),
        onnx: 'identity_fp32.onnx',
      },
      id_max: {
        config: identityConfig('id_max', 4, 'max_queue_delay_microseconds: 500000'),
        onnx: 'identity_fp32.onnx',
      },
      id_conc: {
        config: identityConfig('id_conc', 8, 'max_queue_delay_microseconds: 100000'),
        onnx: 'identity_fp32.onnx',
      },
      id_early: {
        config:
          identityConfig('id_early', 8, 'max_queue_delay_microseconds: 2000000') +
          ' parameters { key: "dynamic_batching_early_dispatch" value: { string_value: "true" } }',
        onnx: 'identity_fp32.onnx',
      },
    });
    addBusy(
      repo,
      'busy_prio',
      busyConfig('busy_prio', 0, 'dynamic_batching { priority_levels: 2 default_priority_level: 2 }'),
    );
    addBusy(
      repo,
      'busy_reject',
      busyConfig(
        'busy_reject',
        0,
        'dynamic_batching { default_queue_policy { max_queue_size: 1 default_timeout_microseconds: 300000 } }',
      ),
    );
    addBusy(
      repo,
      'busy_delay',
      busyConfig(
        'busy_delay',
        0,
        'dynamic_batching { default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 60000000 allow_timeout_override: true } }',
      ),
    );
    addBusy(
      repo,
      'busy_order',
      busyConfig('busy_order', 8, 'dynamic_batching { preserve_ordering: true }', 'count: 2'),
    );
    addBusy(repo, 'busy_cancel', busyConfig('busy_cancel', 0, 'dynamic_batching { }'));
    s = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('forms batches under concurrency, never past max_batch_size, and counts them right', async () => {
    const clients = 32;
    const rounds = 4;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let r = 0; r < rounds; r++) {
          const res = await infer(s.url, 'id_conc', { n: 4 });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          assert.deepEqual(res.body.outputs?.[0].data, [1, 1, 1, 1], `client ${c}`);
        }
      }),
    );
    const st = await stats(s.url, 'id_conc');
    const sizes = batches(st);
    const requests = Object.entries(sizes).reduce((sum, [size, count]) => sum + Number(size) * count, 0);
    assert.equal(requests, clients * rounds, `batch_stats ${JSON.stringify(sizes)}`);
    assert.equal(st.inference_count, clients * rounds);
    assert.equal(st.inference_stats.success.count, clients * rounds);
    assert.equal(st.inference_stats.queue.count, clients * rounds, 'queue time is counted per request');
    assert.equal(
      st.execution_count,
      Object.values(sizes).reduce((a, b) => a + b, 0),
      'one execution per formed batch',
    );
    assert.ok(Math.max(...Object.keys(sizes).map(Number)) <= 8, `batch_stats ${JSON.stringify(sizes)}`);
    assert.ok(st.execution_count < clients * rounds, `no batch formed: ${JSON.stringify(sizes)}`);
  });

  it('sends a preferred size at once, and waits max_queue_delay for a smaller batch', async () => {
    const start = performance.now();
    const four = await Promise.all([1, 2, 3, 4].map(() => infer(s.url, 'id_pref')));
    const fourMs = performance.now() - start;
    for (const r of four) assert.equal(r.status, 200);
    assert.ok(fourMs < 1800, `a preferred batch of 4 took ${fourMs.toFixed(0)} ms (the delay is 2000 ms)`);
    assert.deepEqual(batches(await stats(s.url, 'id_pref')), { 4: 1 });

    const start2 = performance.now();
    const two = await Promise.all([1, 2].map(() => infer(s.url, 'id_pref')));
    const twoMs = performance.now() - start2;
    for (const r of two) assert.equal(r.status, 200);
    assert.ok(twoMs >= 1900, `a batch of 2 went after ${twoMs.toFixed(0)} ms, before the 2000 ms delay`);
    assert.deepEqual(batches(await stats(s.url, 'id_pref')), { 2: 1, 4: 1 });
  });

  it('early dispatch: clients that are all waiting are not kept for the 2 s delay', async () => {
    // One client, one request at a time: nobody else can join, so each goes at once.
    const lone = performance.now();
    for (let i = 0; i < 3; i++) assert.equal((await infer(s.url, 'id_early')).status, 200);
    const loneMs = performance.now() - lone;
    assert.ok(loneMs < 1500, `3 requests of a lone client took ${loneMs.toFixed(0)} ms (delay 2000 ms)`);
    assert.deepEqual(batches(await stats(s.url, 'id_early')), { 1: 3 });

    // Four clients in a closed loop, five requests each: once all that were in flight together are back,
    // their batch goes (the last round waits: a client that finished may still come back).
    const loop = performance.now();
    await Promise.all(
      [1, 2, 3, 4].map(async () => {
        for (let i = 0; i < 5; i++) assert.equal((await infer(s.url, 'id_early')).status, 200);
      }),
    );
    const loopMs = performance.now() - loop;
    // Triton's semantics would take 5 rounds x 2 s; one wait for company at the start is allowed.
    assert.ok(loopMs < 6000, `4 clients x 5 requests took ${loopMs.toFixed(0)} ms (delay 2000 ms)`);
    // Still batching: requests that were in flight together went together.
    const formed = batches(await stats(s.url, 'id_early'));
    const shared = Object.entries(formed).filter(([size]) => Number(size) > 1);
    assert.ok(
      shared.reduce((n, [, count]) => n + count, 0) >= 2,
      `batches formed: ${JSON.stringify(formed)}`,
    );
  });

  it('never puts more than max_batch_size rows in a batch', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => infer(s.url, 'id_max', { batch: 3, n: 2 })),
    );
    for (const r of results) assert.equal(r.status, 200);
    const st = await stats(s.url, 'id_max');
    assert.deepEqual(batches(st), { 3: 10 }, 'two requests of 3 never share a batch of at most 4');
    assert.equal(st.inference_count, 30);
  });

  it('lets a high-priority request overtake queued ones (max_batch_size 0: one at a time)', async () => {
    // Expected order: busy, high, low A, low B. Every request but the last is a long one, so each answer
    // comes a whole computation after the one before: two short ones answered back to back reach the client
    // in the sockets' order, whatever order the server answered them in.
    const { done: busy } = await startBusy(s, 'busy_prio');
    const lowA = infer(s.url, 'busy_prio', { k: BUSY });
    await untilQueued(s, 'busy_prio', 1);
    const lowB = infer(s.url, 'busy_prio', { params: { priority: 2 } });
    await untilQueued(s, 'busy_prio', 2);
    const high = infer(s.url, 'busy_prio', { k: BUSY, params: { priority: 1 } });
    const [b, a, lb, h] = await Promise.all([busy, lowA, lowB, high]);
    for (const r of [b, a, lb, h]) assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(h.at < a.at, `high answered at ${h.at.toFixed(0)} ms, after low A at ${a.at.toFixed(0)} ms`);
    assert.ok(a.at < lb.at, 'requests of one level keep their order');
    assert.ok(b.at < h.at);
  });

  it('answers a full queue with 503 at once, and a timed-out request with 503 before a batch forms', async () => {
    const { done: busy } = await startBusy(s, 'busy_reject');
    let busyDone = false;
    void busy.then(() => (busyDone = true));
    const queued = infer(s.url, 'busy_reject');
    await untilQueued(s, 'busy_reject', 1);
    const refused = await infer(s.url, 'busy_reject');
    assert.equal(refused.status, 503);
    assert.match(refused.body.error ?? '', /Exceeds maximum queue size/);
    const timedOut = await queued;
    assert.equal(timedOut.status, 503);
    assert.equal(timedOut.body.error, 'Request timeout expired');
    assert.equal(busyDone, false, 'the timeout was answered while the instance was still busy');
    assert.equal((await busy).status, 200);
    const st = await stats(s.url, 'busy_reject');
    assert.equal(st.inference_stats.fail.count, 2);
    assert.equal(st.inference_stats.success.count, 1);
    assert.equal(st.execution_count, 1);
  });

  it('DELAY moves a timed-out request behind a later one', async () => {
    const { done: busy } = await startBusy(s, 'busy_delay');
    // The delayed request is a long one and the later one short: run in the right order, the short one is
    // answered a whole long computation before the long one; run in the wrong order, after it. Two short
    // ones would be answered back to back, and their order on the client would be the sockets' order.
    const late = infer(s.url, 'busy_delay', { k: BUSY, params: { timeout: 100_000 } });
    await untilQueued(s, 'busy_delay', 1);
    await sleep(200);
    const fresh = infer(s.url, 'busy_delay');
    await untilQueued(s, 'busy_delay', 2);
    const [b, l, f] = await Promise.all([busy, late, fresh]);
    for (const r of [b, l, f]) assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(
      f.at < l.at,
      `the later request answered at ${f.at.toFixed(0)} ms, the delayed one at ${l.at.toFixed(0)} ms`,
    );
  });

  it('preserve_ordering holds back a later answer until the earlier one is out', async () => {
    const slowSent = performance.now() - t0;
    const { done: slow } = await startBusy(s, 'busy_order');
    const quickSent = performance.now() - t0;
    const quick = infer(s.url, 'busy_order');
    const [a, b] = await Promise.all([slow, quick]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    // The two answers leave the server back to back; the clients may see them a few ms apart either way.
    assert.ok(
      b.at > a.at - 100,
      `the quick request (sent at ${quickSent.toFixed(0)} ms) answered at ${b.at.toFixed(0)} ms, the slow one (sent at ${slowSent.toFixed(0)} ms) at ${a.at.toFixed(0)} ms`,
    );
    const st = await stats(s.url, 'busy_order');
    assert.deepEqual(batches(st), { 1: 2 }, 'each ran on its own instance');
  });

  it('a queued request whose client goes away leaves the queue at once', async () => {
    const { done: busy } = await startBusy(s, 'busy_cancel');
    let busyDone = false;
    void busy.then(() => (busyDone = true));
    const controller = new AbortController();
    const gone = infer(s.url, 'busy_cancel', { signal: controller.signal });
    await untilQueued(s, 'busy_cancel', 1);
    controller.abort();
    await assert.rejects(gone);
    await untilQueued(s, 'busy_cancel', 0);
    await waitFor(async () => (await stats(s.url, 'busy_cancel')).inference_stats.fail.count === 1);
    assert.equal(busyDone, false, 'cancelled while the instance was still busy');
    assert.equal((await busy).status, 200);
    const st = await stats(s.url, 'busy_cancel');
    assert.equal(st.execution_count, 1, 'the cancelled request never ran');
    assert.equal(st.inference_stats.success.count, 1);
  });
});

describe('rate limiter', () => {
  const limited = (name: string, count = 1): string =>
    busyConfig(
      name,
      0,
      '',
      `count: 1 rate_limiter { resources [ { name: "R" global: true count: ${count} } ] }`,
    );

  it('parses --rate-limit and --rate-limit-resource like tritonserver', () => {
    const { options } = parseFlags([
      '--model-repository=/x',
      '--rate-limit=execution_count',
      '--rate-limit-resource=R1:10',
      '--rate-limit-resource=R2:5:1',
    ]);
    assert.equal(options.rateLimit, 'execution_count');
    assert.deepEqual(options.rateLimitResources, [
      { name: 'R1', count: 10, device: -1 },
      { name: 'R2', count: 5, device: 1 },
    ]);
    assert.equal(parseFlags(['--model-repository=/x']).options.rateLimit, 'off');
    assert.throws(
      () => parseFlags(['--model-repository=/x', '--rate-limit=sometimes']),
      /invalid argument for --rate-limit/,
    );
    assert.throws(
      () => parseFlags(['--model-repository=/x', '--rate-limit-resource=R1']),
      /--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'/,
    );
  });

  it('serialises two models that share a resource', async () => {
    const repo = makeRepository({});
    addBusy(repo, 'rl_a', limited('rl_a'));
    addBusy(repo, 'rl_b', limited('rl_b'));
    const s = await startServer([`--model-repository=${repo}`, '--rate-limit=execution_count']);
    try {
      const [a, b] = await Promise.all([
        infer(s.url, 'rl_a', { k: BUSY }),
        infer(s.url, 'rl_b', { k: BUSY }),
      ]);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(b.status, 200, JSON.stringify(b.body));
      const [sa, sb] = await Promise.all([stats(s.url, 'rl_a'), stats(s.url, 'rl_b')]);
      const waited = Math.max(sa.inference_stats.queue.ns, sb.inference_stats.queue.ns);
      const ran = Math.min(sa.inference_stats.compute_infer.ns, sb.inference_stats.compute_infer.ns);
      // The second one waits in the queue while the first holds R: about one execution.
      assert.ok(
        waited >= 0.7 * ran,
        `queued ${(waited / 1e6).toFixed(0)} ms while the other ran ${(ran / 1e6).toFixed(0)} ms`,
      );
    } finally {
      await s.stop();
      removeRepository(repo);
    }
  });

  it('refuses to load a model whose resources the flags cannot satisfy', async () => {
    const repo = makeRepository({});
    addBusy(repo, 'rl_big', limited('rl_big', 2));
    const s = await startServer([
      `--model-repository=${repo}`,
      '--rate-limit=execution_count',
      '--rate-limit-resource=R:1',
      '--exit-on-error=false',
    ]);
    try {
      const index = await post(`${s.url}/v2/repository/index`, {});
      const entry = index
        .json<{ name: string; state: string; reason: string }[]>()
        .find((m) => m.name === 'rl_big');
      assert.equal(entry?.state, 'UNAVAILABLE');
      assert.match(
        entry?.reason ?? '',
        /Resource count for "R" is limited to 1 .* the minimum required count is 2/,
      );
    } finally {
      await s.stop();
      removeRepository(repo);
    }
  });
});
