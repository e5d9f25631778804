// The Prometheus endpoint of a real server: counters move by exactly what the HTTP requests did, failures
// carry Triton's reasons, the pending gauge follows the queue, reloads never make a counter go back.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseFlags } from '../../src/compose/flags.js';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import {
  makeRepository,
  post,
  removeRepository,
  request,
  ROOT,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';

const FP = `
name: "fp"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
metric_tags { key: "team" value: "vision" }
`;
const STR = `
name: "str"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
`;
const SLOW = `
name: "slow"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

const fpBody = (batch: number) => ({
  inputs: [{ name: 'INPUT0', shape: [batch, 2], datatype: 'FP32', data: Array(batch * 2).fill(1) }],
});
const slowBody = {
  inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: Array(16).fill(0.5) }],
};

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A small parser for the text format: enough to check names, labels and values. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

class Scrape {
  constructor(
    readonly text: string,
    readonly samples: Sample[],
  ) {}

  /** The one sample with this name whose labels include `labels`; undefined when there is none. */
  find(name: string, labels: Record<string, string> = {}): number | undefined {
    const hits = this.samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
    assert.ok(hits.length <= 1, `${name} ${JSON.stringify(labels)} matches ${hits.length} samples`);
    return hits[0]?.value;
  }

  get(name: string, labels: Record<string, string> = {}): number {
    const v = this.find(name, labels);
    assert.ok(v !== undefined, `no ${name} ${JSON.stringify(labels)}`);
    return v;
  }
}

async function scrape(s: TestServer): Promise<Scrape> {
  const m = s.running.metrics;
  assert.ok(m, 'the metrics endpoint runs');
  const res = await request(`http://127.0.0.1:${m.port}/metrics`);
  assert.equal(res.status, 200);
  const text = res.body.toString('utf8');
  return new Scrape(text, parse(text));
}

const REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

describe('metrics of a running server', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({
      fp: { config: FP, onnx: 'identity_fp32.onnx' },
      str: { config: STR, onnx: 'identity_bytes.onnx' },
      slow: { config: SLOW, onnx: 'slow_fp32.onnx' },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--metrics-config=summary_latencies=true',
      '--metrics-config=histogram_latencies=true',
      '--metrics-config=summary_quantiles=0.5:0.05,0.99:0.001',
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('announces the endpoint like Triton and serves only /metrics', async () => {
    const port = s.running.metrics!.port;
    assert.ok(s.logs.some((l) => l.includes(`Started Metrics Service at 127.0.0.1:${port}`)));
    assert.equal((await request(`http://127.0.0.1:${port}/`)).status, 404);
    assert.equal((await request(`http://127.0.0.1:${port}/v2/health/live`)).status, 404);
  });

  it('successes move the counters by exactly what ran, batch-expanded', async () => {
    const fp = { model: 'fp', version: '1', _team: 'vision' };
    const before = await scrape(s);
    for (let i = 0; i < 3; i++)
      assert.equal((await post(`${s.url}/v2/models/fp/infer`, fpBody(2))).status, 200);
    const after = await scrape(s);
    const delta = (name: string, labels: Record<string, string> = fp): number =>
      after.get(name, labels) - before.get(name, labels);
    assert.equal(delta('nv_inference_request_success'), 3);
    assert.equal(delta('nv_inference_count'), 6);
    assert.equal(delta('nv_inference_exec_count'), 3);
    for (const r of REASONS) assert.equal(delta('nv_inference_request_failure', { ...fp, reason: r }), 0, r);
    assert.ok(delta('nv_inference_request_duration_us') > 0);
    assert.ok(delta('nv_inference_compute_infer_duration_us') > 0);
    assert.ok(delta('nv_inference_queue_duration_us') >= 0);
    assert.equal(after.get('nv_inference_pending_request_count', fp), 0);
    // Summaries count the same requests as the counters; the histogram saw each first response.
    assert.equal(delta('nv_inference_request_summary_us_count'), 3);
    // Each summary observation is whole microseconds; the counter is the exact total in microseconds.
    const sum = after.get('nv_inference_request_summary_us_sum', fp);
    const counter = after.get('nv_inference_request_duration_us', fp);
    assert.ok(
      counter - sum >= 0 && counter - sum <= after.get('nv_inference_request_success', fp),
      `${sum} vs ${counter}`,
    );
    assert.ok(Number.isFinite(after.get('nv_inference_request_summary_us', { ...fp, quantile: '0.99' })));
    assert.equal(after.find('nv_inference_request_summary_us', { ...fp, quantile: '0.9' }), undefined);
    assert.equal(delta('nv_inference_first_response_histogram_ms_count'), 3);
    assert.equal(
      after.get('nv_inference_first_response_histogram_ms_bucket', { ...fp, le: '+Inf' }),
      after.get('nv_inference_first_response_histogram_ms_count', fp),
    );
    // The statistics extension reads the same numbers.
    const stats = (await request(`${s.url}/v2/models/fp/stats`)).json<{
      model_stats: {
        inference_count: number;
        execution_count: number;
        inference_stats: { success: { count: number } };
      }[];
    }>().model_stats[0];
    assert.equal(stats.inference_count, after.get('nv_inference_count', fp));
    assert.equal(stats.execution_count, after.get('nv_inference_exec_count', fp));
    assert.equal(stats.inference_stats.success.count, after.get('nv_inference_request_success', fp));
  });

  it('a request refused before the scheduler is not a failure; a backend error is BACKEND', async () => {
    const str = { model: 'str', version: '1' };
    const before = await scrape(s);
    const bad = await post(`${s.url}/v2/models/str/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [1] }],
    });
    assert.equal(bad.status, 400);
    const mid = await scrape(s);
    for (const r of REASONS) {
      assert.equal(
        mid.get('nv_inference_request_failure', { ...str, reason: r }),
        before.get('nv_inference_request_failure', { ...str, reason: r }),
        r,
      );
    }
    // onnxruntime-node cannot carry a NUL byte in a string: the backend fails the request.
    const nul = await post(`${s.url}/v2/models/str/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'BYTES', data: ['a\u0000b'] }],
    });
    assert.notEqual(nul.status, 200);
    const after = await scrape(s);
    const d = (r: string) =>
      after.get('nv_inference_request_failure', { ...str, reason: r }) -
      before.get('nv_inference_request_failure', { ...str, reason: r });
    assert.equal(d('BACKEND'), 1);
    assert.equal(d('REJECTED') + d('CANCELED') + d('OTHER'), 0);
    assert.equal(
      after.get('nv_inference_request_success', str),
      before.get('nv_inference_request_success', str),
    );
    assert.equal(after.get('nv_inference_exec_count', str), before.get('nv_inference_exec_count', str));
  });

  it('pending counts queued requests during a slow inference; a client leaving the queue is CANCELED', async () => {
    const slow = { model: 'slow', version: '1' };
    const before = await scrape(s);
    const pending = async () => (await scrape(s)).get('nv_inference_pending_request_count', slow);
    const first = post(`${s.url}/v2/models/slow/infer`, slowBody);
    await waitFor(
      async () =>
        (await scrape(s)).get('nv_inference_request_success', slow) ===
          before.get('nv_inference_request_success', slow) && (await pending()) === 0,
    );
    const second = post(`${s.url}/v2/models/slow/infer`, slowBody);
    await waitFor(async () => (await pending()) === 1);
    const abort = new AbortController();
    const third = fetch(`${s.url}/v2/models/slow/infer`, {
      method: 'POST',
      body: JSON.stringify(slowBody),
      signal: abort.signal,
    }).catch((e: unknown) => e);
    await waitFor(async () => (await pending()) === 2);
    abort.abort();
    await third;
    const canceled = { ...slow, reason: 'CANCELED' };
    await waitFor(
      async () =>
        (await scrape(s)).get('nv_inference_request_failure', canceled) ===
        before.get('nv_inference_request_failure', canceled) + 1,
    );
    assert.equal(await pending(), 1, 'the cancelled request left the queue');
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    const after = await scrape(s);
    assert.equal(after.get('nv_inference_pending_request_count', slow), 0);
    assert.equal(
      after.get('nv_inference_request_success', slow) - before.get('nv_inference_request_success', slow),
      2,
    );
    assert.equal(after.get('nv_inference_exec_count', slow) - before.get('nv_inference_exec_count', slow), 2);
    // The second waited in the queue for most of the first's run.
    assert.ok(
      after.get('nv_inference_queue_duration_us', slow) - before.get('nv_inference_queue_duration_us', slow) >
        100_000,
    );
  });

  it('reports every model load time, host and process metrics', async () => {
    const m = await scrape(s);
    for (const model of ['fp', 'str', 'slow']) {
      assert.ok(m.get('nv_model_load_duration_secs', { model, version: '1' }) > 0, model);
    }
    assert.ok(m.text.includes('# TYPE nv_model_load_duration_secs gauge\n'));
    assert.ok(m.text.includes('# TYPE nv_inference_request_failure counter\n'));
    assert.ok(m.get('nv_cpu_utilization') >= 0 && m.get('nv_cpu_utilization') <= 1);
    if (process.platform === 'linux') assert.ok(m.get('nv_cpu_memory_used_bytes') > 0);
    assert.ok(m.get('process_resident_memory_bytes') > 0);
    assert.equal(m.find('nv_cache_num_hits_per_model', { model: 'fp', version: '1' }), undefined);
  });

  it("reports the build, each model version's state, and requests by endpoint and status", async () => {
    const before = await scrape(s);
    const count = (m: Scrape, name: string, labels: Record<string, string>): number =>
      m.find(name, labels) ?? 0;
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(before.get('nereid_build_info', { version: pkg.version, node_version: process.version }), 1);
    for (const model of ['fp', 'str', 'slow']) {
      assert.equal(before.get('nereid_model_state', { model, version: '1', state: 'READY' }), 1, model);
      // The instance gauge agrees with the config the server serves back (its instance_group counts).
      const config = (await request(`${s.url}/v2/models/${model}/config`)).json<{
        instance_group: { count: number }[];
      }>();
      const instances = config.instance_group.reduce((n, g) => n + g.count, 0);
      assert.ok(instances >= 1, model);
      assert.equal(before.get('nereid_model_instances', { model, version: '1' }), instances, model);
    }
    // Two answered inferences, one unknown model, one path no route has, one health check; over gRPC one
    // ModelInfer that works and one for a model that does not exist, and one rpc the service lacks.
    for (let i = 0; i < 2; i++)
      assert.equal((await post(`${s.url}/v2/models/fp/infer`, fpBody(1))).status, 200);
    const missing = await post(`${s.url}/v2/models/nope/infer`, fpBody(1));
    assert.ok(missing.status >= 400 && missing.status < 500);
    assert.equal((await request(`${s.url}/v2/not/a/route`)).status, 404);
    assert.equal((await request(`${s.url}/v2/health/ready`)).status, 200);
    const client = new TestClient(`127.0.0.1:${s.running.grpc!.port}`);
    try {
      await client.call('ModelInfer', {
        model_name: 'fp',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] }],
        raw_input_contents: [Buffer.from(new Float32Array([1, 2]).buffer)],
      });
      await assert.rejects(client.call('ModelInfer', { model_name: 'nope' }));
      await assert.rejects(client.raw('/inference.GRPCInferenceService/NoSuchRpc', Buffer.alloc(0)));
    } finally {
      client.close();
    }
    const after = await scrape(s);
    const delta = (name: string, labels: Record<string, string>): number =>
      count(after, name, labels) - count(before, name, labels);
    const http = 'nereid_http_requests_total';
    assert.equal(delta(http, { endpoint: 'model_infer', code: '200' }), 2);
    assert.equal(delta(http, { endpoint: 'model_infer', code: String(missing.status) }), 1);
    assert.equal(delta(http, { endpoint: 'unmatched', code: '404' }), 1);
    assert.equal(delta(http, { endpoint: 'server_ready', code: '200' }), 1);
    const grpc = 'nereid_grpc_requests_total';
    const infer = 'inference.GRPCInferenceService/ModelInfer';
    assert.equal(delta(grpc, { rpc: infer, code: 'OK' }), 1);
    assert.equal(delta(grpc, { rpc: infer, code: 'NOT_FOUND' }), 1);
    assert.equal(delta(grpc, { rpc: 'unknown', code: 'UNIMPLEMENTED' }), 1);
    // No label value comes from the client: the unknown model and rpc names appear nowhere.
    assert.ok(!after.text.includes('nope') && !after.text.includes('NoSuchRpc'));
    assert.ok(after.text.includes('# TYPE nereid_http_requests_total counter\n'));
    assert.ok(after.text.includes('# TYPE nereid_model_state gauge\n'));
  });

  it('keeps /v2/models/stats Triton-shaped', async () => {
    const all = (await request(`${s.url}/v2/models/stats`)).json<{
      model_stats: Record<string, unknown>[];
    }>();
    assert.deepEqual(
      all.model_stats.map((e) => e.name),
      ['fp', 'slow', 'str'],
    );
    for (const e of all.model_stats) {
      assert.deepEqual(Object.keys(e).sort(), [
        'batch_stats',
        'execution_count',
        'inference_count',
        'inference_stats',
        'last_inference',
        'memory_usage',
        'name',
        'response_stats',
        'version',
      ]);
      assert.deepEqual(Object.keys(e.inference_stats as object).sort(), [
        'cache_hit',
        'cache_miss',
        'compute_infer',
        'compute_input',
        'compute_output',
        'fail',
        'queue',
        'success',
      ]);
      for (const b of e.batch_stats as Record<string, unknown>[]) {
        assert.deepEqual(Object.keys(b).sort(), [
          'batch_size',
          'compute_infer',
          'compute_input',
          'compute_output',
        ]);
      }
      assert.deepEqual(e.response_stats, {});
    }
  });
});

describe('metrics across reloads, with --metrics-config=counter_latencies=false', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ fp: { config: FP, onnx: 'identity_fp32.onnx' } });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=fp',
      '--metrics-config=counter_latencies=false',
      '--metrics-interval-ms=100',
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('drops the latency counters and adds no summaries', async () => {
    await post(`${s.url}/v2/models/fp/infer`, fpBody(1));
    const m = await scrape(s);
    assert.ok(!m.text.includes('_duration_us'));
    assert.ok(!m.text.includes('_summary_us'));
    assert.ok(!m.text.includes('_histogram_ms'));
    assert.ok(m.get('nv_inference_request_success', { model: 'fp' }) >= 1);
  });

  it('counters never go back across a reload; the series goes away with the model', async () => {
    const fp = { model: 'fp', version: '1' };
    const before = (await scrape(s)).get('nv_inference_request_success', fp);
    for (let i = 0; i < 2; i++)
      assert.equal((await post(`${s.url}/v2/models/fp/infer`, fpBody(1))).status, 200);
    // A changed config file makes the load a real reload (a new version object, fresh statistics).
    writeFileSync(path.join(repo, 'fp', 'config.pbtxt'), `${FP}\n# changed\n`);
    assert.equal((await post(`${s.url}/v2/repository/models/fp/load`, {})).status, 200);
    assert.equal((await post(`${s.url}/v2/models/fp/infer`, fpBody(1))).status, 200);
    const m = await scrape(s);
    assert.equal(m.get('nv_inference_request_success', fp), before + 3);
    const stats = (await request(`${s.url}/v2/models/fp/stats`)).json<{
      model_stats: { inference_stats: { success: { count: number } } }[];
    }>();
    assert.equal(
      stats.model_stats[0].inference_stats.success.count,
      1,
      'the statistics extension is per loaded version',
    );
    assert.equal((await post(`${s.url}/v2/repository/models/fp/unload`, {})).status, 200);
    await waitFor(async () => (await scrape(s)).find('nv_inference_request_success', fp) === undefined);
  });
});

describe('--metrics-config on the command line', () => {
  it("collects repeated <setting>=<value> pairs and refuses other forms with Triton's message", () => {
    const { options } = parseFlags([
      '--model-repository=/m',
      '--metrics-config=summary_latencies=true',
      '--metrics-config',
      'summary_quantiles=0.5:0.05,0.9:0.01',
    ]);
    assert.deepEqual(
      [...options.metricsConfig],
      [
        ['summary_latencies', 'true'],
        ['summary_quantiles', '0.5:0.05,0.9:0.01'],
      ],
    );
    for (const bad of ['--metrics-config=oops', '--metrics-config=x=', '--metrics-config=a,b=c']) {
      assert.throws(
        () => parseFlags(['--model-repository=/m', bad]),
        /--metrics-config option format is <setting>=<value>\. Got /,
      );
    }
    assert.equal(
      parseFlags(['--model-repository=/m', '--allow-cpu-metrics=false']).options.allowCpuMetrics,
      false,
    );
  });
});
