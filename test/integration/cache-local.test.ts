// The local response cache on a real server (--cache-config local,size=...): identical requests hit and
// skip the model, different ones miss; statistics (HTTP and gRPC) and metrics count hits and misses as
// Triton does; an ensemble caches at its top level; models without response_cache never touch it; a
// response larger than the cache is answered and not stored; concurrent identical requests all get the
// same answer; a failed request is never cached.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcClient } from '../../src/client/index.js';
import {
  EXAMPLES,
  binaryBody,
  makeRepository,
  post,
  removeRepository,
  request,
  splitBinaryResponse,
  startServer,
  type TestServer,
} from './harness.js';

const CACHED = 'response_cache { enable: true }\n';
const example = (model: string): string => readFileSync(path.join(EXAMPLES, model, 'config.pbtxt'), 'utf8');
const rename = (config: string, from: string, to: string): string =>
  config.replace(`name: "${from}"`, `name: "${to}"`);
const simpleOnnx = readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx'));

// Fails when X[0] is negative: a failed answer must never be cached.
const PICKY = `
import { NereidError } from 'nereid-server';
export default class Picky {
  execute(requests) {
    return requests.map((r) => {
      const x = r.input('X');
      if (x.int32()[0] < 0) return { error: new NereidError('INVALID_ARG', 'negative input refused') };
      return { outputs: [x.withName('Y')] };
    });
  }
}
`;
const PICKY_CONFIG = `
name: "picky"
backend: "javascript"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 2 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 2 ] } ]
${CACHED}`;

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

const simpleBody = (seed: number, extra: Record<string, unknown> = {}) => ({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range(16, (i) => i + seed) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: range(16, () => seed) },
  ],
  ...extra,
});

interface Duration {
  count: number;
  ns: number;
}
interface Stats {
  inference_count: number;
  execution_count: number;
  last_inference: number;
  inference_stats: Record<
    'success' | 'fail' | 'queue' | 'compute_infer' | 'cache_hit' | 'cache_miss',
    Duration
  >;
}

async function stats(url: string, model: string): Promise<Stats> {
  const r = await request(`${url}/v2/models/${model}/stats`);
  assert.equal(r.status, 200);
  return r.json<{ model_stats: Stats[] }>().model_stats[0];
}

async function infer(
  url: string,
  model: string,
  body: unknown,
): Promise<{ id?: string; outputs: { name: string; data: number[] }[] }> {
  const r = await post(`${url}/v2/models/${model}/infer`, body);
  assert.equal(r.status, 200, r.body.toString());
  return r.json();
}

/** The value of one sample of the scrape (`name{labels} value`), or undefined. */
function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('local response cache', () => {
  let repo: string;
  let server: TestServer;
  let metricsUrl: string;

  before(async () => {
    repo = makeRepository({
      simple: { config: example('simple') + CACHED, files: { '1/model.onnx': simpleOnnx } },
      simple_plain: {
        config: rename(example('simple'), 'simple', 'simple_plain'),
        files: { '1/model.onnx': simpleOnnx },
      },
      // The ensemble caches at its top level over an uncached member.
      member: {
        config: rename(example('simple'), 'simple', 'member'),
        files: { '1/model.onnx': simpleOnnx },
      },
      ens: {
        config:
          rename(example('simple_ensemble'), 'simple_ensemble', 'ens').replace(
            'model_name: "simple"',
            'model_name: "member"',
          ) + CACHED,
      },
      picky: { config: PICKY_CONFIG, files: { '1/model.mjs': PICKY } },
    });
    server = await startServer([
      `--model-repository=${repo}`,
      '--cache-config=local,size=1048576',
      '--metrics-config=summary_latencies=true',
    ]);
    metricsUrl = `http://127.0.0.1:${server.running.metrics!.port}/metrics`;
  });

  after(async () => {
    await server?.stop();
    removeRepository(repo);
  });

  it('answers an identical request from the cache without running the model', async () => {
    const first = await infer(server.url, 'simple', simpleBody(1, { id: 'one' }));
    const afterMiss = await stats(server.url, 'simple');
    const second = await infer(server.url, 'simple', simpleBody(1, { id: 'two' }));
    const afterHit = await stats(server.url, 'simple');
    assert.deepEqual(second.outputs, first.outputs);
    // Each response carries its own request's id, hit or not.
    assert.equal(first.id, 'one');
    assert.equal(second.id, 'two');
    assert.equal(afterMiss.inference_stats.cache_miss.count, 1);
    assert.equal(afterMiss.inference_stats.cache_hit.count, 0);
    assert.equal(afterHit.inference_stats.cache_hit.count, 1);
    assert.equal(afterHit.inference_stats.cache_miss.count, 1);
    // A hit is a success with a queue time, not an inference or an execution, and no compute.
    assert.equal(afterHit.inference_stats.success.count, 2);
    assert.equal(afterHit.inference_stats.queue.count, 2);
    assert.equal(afterHit.inference_count, 1);
    assert.equal(afterHit.execution_count, 1);
    assert.equal(afterHit.inference_stats.compute_infer.count, 1);
    assert.equal(afterHit.last_inference, afterMiss.last_inference);
    assert.ok(afterHit.inference_stats.cache_hit.ns > 0);
    assert.ok(afterHit.inference_stats.cache_miss.ns > 0);
  });

  it('misses on different input bytes, and on a different set of requested outputs', async () => {
    const before = await stats(server.url, 'simple');
    await infer(server.url, 'simple', simpleBody(2));
    await infer(server.url, 'simple', simpleBody(1, { outputs: [{ name: 'OUTPUT1' }] }));
    const only = await infer(server.url, 'simple', simpleBody(1, { outputs: [{ name: 'OUTPUT1' }] }));
    // The cached answer has exactly the outputs asked for (Triton would return both here).
    assert.deepEqual(
      only.outputs.map((o) => o.name),
      ['OUTPUT1'],
    );
    const after = await stats(server.url, 'simple');
    assert.equal(after.inference_stats.cache_miss.count - before.inference_stats.cache_miss.count, 2);
    assert.equal(after.inference_stats.cache_hit.count - before.inference_stats.cache_hit.count, 1);
  });

  it('returns the same bytes in binary form on a hit', async () => {
    const blobs = [
      Buffer.from(new Int32Array(range(16, (i) => i * 7)).buffer),
      Buffer.from(new Int32Array(16).fill(3).buffer),
    ];
    const header = {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: { binary_data: true } },
        { name: 'OUTPUT1', parameters: { binary_data: true } },
      ],
    };
    const { body, headers } = binaryBody(header, blobs);
    const miss = await request(`${server.url}/v2/models/simple/infer`, { method: 'POST', body, headers });
    const hit = await request(`${server.url}/v2/models/simple/infer`, { method: 'POST', body, headers });
    assert.equal(miss.status, 200);
    assert.ok(hit.body.equals(miss.body));
    const out = splitBinaryResponse(hit).blobs.get('OUTPUT0')!;
    assert.deepEqual(
      [...new Int32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.length))],
      range(16, (i) => i * 7 + 3),
    );
  });

  it('counts hits and misses in the metrics, per model and for the cache as a whole', async () => {
    const s = await stats(server.url, 'simple');
    const text = (await request(metricsUrl)).body.toString();
    const labels = 'model="simple",version="1"';
    assert.equal(metric(text, 'nv_cache_num_hits_per_model', labels), s.inference_stats.cache_hit.count);
    assert.equal(metric(text, 'nv_cache_num_misses_per_model', labels), s.inference_stats.cache_miss.count);
    assert.equal(
      metric(text, 'nv_cache_hit_duration_per_model', labels),
      Math.floor(s.inference_stats.cache_hit.ns / 1000),
    );
    assert.equal(
      metric(text, 'nv_cache_miss_duration_per_model', labels),
      Math.floor(s.inference_stats.cache_miss.ns / 1000),
    );
    assert.match(text, /# TYPE nv_cache_num_hits_per_model counter/);
    // Summaries (summary_latencies=true): cache hit/miss observations, and no request summary with a cache.
    assert.equal(
      metric(text, 'nv_cache_hit_summary_per_model_count', labels),
      s.inference_stats.cache_hit.count,
    );
    assert.equal(
      metric(text, 'nv_cache_miss_summary_per_model_count', labels),
      s.inference_stats.cache_miss.count,
    );
    assert.equal(metric(text, 'nv_inference_request_summary_us_count', labels), undefined);
    // Models without response_cache have no cache series.
    assert.equal(metric(text, 'nv_cache_num_hits_per_model', 'model="simple_plain",version="1"'), undefined);
    // The cache itself (Triton's local cache families): every lookup is a hit or a miss.
    const hits = metric(text, 'nv_cache_num_hits')!;
    const misses = metric(text, 'nv_cache_num_misses')!;
    assert.equal(metric(text, 'nv_cache_num_lookups'), hits + misses);
    assert.ok(hits >= s.inference_stats.cache_hit.count);
    assert.ok(metric(text, 'nv_cache_num_entries')! >= 3);
    const util = metric(text, 'nv_cache_util')!;
    assert.ok(util > 0 && util < 1);
    assert.equal(metric(text, 'nv_cache_num_evictions'), 0);
    assert.equal(metric(text, 'nereid_cache_errors_total'), 0);
    assert.match(text, /# TYPE nv_cache_util gauge/);
  });

  it('reports the cache in gRPC ModelStatistics too', async () => {
    const client = new GrpcClient(`127.0.0.1:${server.running.grpc!.port}`);
    try {
      const [grpc] = await client.modelStatistics('simple');
      const http = await stats(server.url, 'simple');
      assert.ok(http.inference_stats.cache_hit.count > 0);
      assert.equal(Number(grpc.inference_stats.cache_hit.count), http.inference_stats.cache_hit.count);
      assert.equal(Number(grpc.inference_stats.cache_miss.count), http.inference_stats.cache_miss.count);
      assert.equal(Number(grpc.inference_stats.cache_hit.ns), http.inference_stats.cache_hit.ns);
    } finally {
      client.close();
    }
  });

  it('leaves a model without response_cache alone, even on a server with a cache', async () => {
    await infer(server.url, 'simple_plain', simpleBody(5));
    await infer(server.url, 'simple_plain', simpleBody(5));
    const s = await stats(server.url, 'simple_plain');
    assert.equal(s.execution_count, 2);
    assert.equal(s.inference_stats.cache_hit.count + s.inference_stats.cache_miss.count, 0);
  });

  it('caches an ensemble at its top level: a hit skips its steps', async () => {
    const memberBefore = await stats(server.url, 'member');
    const miss = await infer(server.url, 'ens', simpleBody(9));
    const hit = await infer(server.url, 'ens', simpleBody(9));
    assert.deepEqual(hit.outputs, miss.outputs);
    const memberAfter = await stats(server.url, 'member');
    assert.equal(memberAfter.execution_count - memberBefore.execution_count, 1, 'the member ran once');
    const e = await stats(server.url, 'ens');
    assert.equal(e.inference_stats.cache_hit.count, 1);
    assert.equal(e.inference_stats.cache_miss.count, 1);
    assert.equal(e.inference_stats.success.count, 2);
  });

  it('gives concurrent identical requests the same answer, each counted as a hit or a miss', async () => {
    const before = await stats(server.url, 'simple');
    const answers = await Promise.all(
      Array.from({ length: 24 }, () => infer(server.url, 'simple', simpleBody(42))),
    );
    for (const a of answers) assert.deepEqual(a.outputs, answers[0].outputs);
    assert.deepEqual(
      answers[0].outputs[0].data,
      range(16, (i) => i + 84),
    );
    const after = await stats(server.url, 'simple');
    const hits = after.inference_stats.cache_hit.count - before.inference_stats.cache_hit.count;
    const misses = after.inference_stats.cache_miss.count - before.inference_stats.cache_miss.count;
    assert.equal(hits + misses, 24);
    assert.ok(misses >= 1);
    assert.equal(after.inference_count - before.inference_count, misses);
  });

  it('never caches a failed request', async () => {
    const bad = { inputs: [{ name: 'X', shape: [2], datatype: 'INT32', data: [-1, 0] }] };
    for (let i = 0; i < 2; i++) {
      const r = await post(`${server.url}/v2/models/picky/infer`, bad);
      assert.equal(r.status, 400);
      assert.match(r.json<{ error: string }>().error, /negative input refused/);
    }
    const s = await stats(server.url, 'picky');
    // Both answered by the model (a failure is neither stored nor counted as a cache miss).
    assert.equal(s.inference_stats.fail.count, 2);
    assert.equal(s.inference_stats.cache_hit.count, 0);
    assert.equal(s.inference_stats.cache_miss.count, 0);
    const good = { inputs: [{ name: 'X', shape: [2], datatype: 'INT32', data: [1, 2] }] };
    await infer(server.url, 'picky', good);
    assert.deepEqual((await infer(server.url, 'picky', good)).outputs[0].data, [1, 2]);
    assert.equal((await stats(server.url, 'picky')).inference_stats.cache_hit.count, 1);
  });
});

describe('local response cache smaller than a response', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    repo = makeRepository({
      simple: { config: example('simple') + CACHED, files: { '1/model.onnx': simpleOnnx } },
    });
    // 128 bytes of outputs and a header cannot fit in 100 bytes.
    server = await startServer([`--model-repository=${repo}`, '--response-cache-byte-size=100']);
  });

  after(async () => {
    await server?.stop();
    removeRepository(repo);
  });

  it('answers every request, stores nothing, and says so once', async () => {
    const first = await infer(server.url, 'simple', simpleBody(1));
    const second = await infer(server.url, 'simple', simpleBody(1));
    assert.deepEqual(second.outputs, first.outputs);
    const s = await stats(server.url, 'simple');
    assert.equal(s.inference_stats.cache_miss.count, 2);
    assert.equal(s.inference_stats.cache_hit.count, 0);
    assert.equal(s.execution_count, 2);
    const warnings = server.logs.filter((l) => l.includes('larger than the whole response cache'));
    assert.equal(warnings.length, 1);
  });
});
