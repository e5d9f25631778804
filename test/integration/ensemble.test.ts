// Ensembles on a real server: the bundled simple_ensemble over HTTP with its numbers checked, statistics of
// the ensemble and its member, readiness and unload_dependents in explicit mode, independent branches that
// truly overlap (timer-based and CPU-bound members), a step's error named, load-time checks against the
// members' configs, and a decoupled member streaming through an ensemble over gRPC.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput } from '../../src/client/index.js';
import type { InferenceRequest, InferenceResponse } from '../../src/core/types.js';
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

const example = (model: string): string => readFileSync(path.join(EXAMPLES, model, 'config.pbtxt'), 'utf8');
const simpleOnnx = (): Buffer => readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx'));

const a = Array.from({ length: 16 }, (_, i) => i);
const b = Array.from({ length: 16 }, (_, i) => 100 - 3 * i);
const simpleBody = (outputs?: string[]) => ({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: a },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: b },
  ],
  ...(outputs ? { outputs: outputs.map((name) => ({ name })) } : {}),
});

interface InferJson {
  model_name: string;
  outputs: { name: string; shape: number[]; datatype: string; data: number[] }[];
}
interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: {
    success: { count: number; ns: number };
    fail: { count: number };
    queue: { count: number };
    compute_infer: { count: number; ns: number };
  };
}
interface IndexEntry {
  name: string;
  version?: string;
  state: string;
  reason: string;
}

async function stats(url: string, model: string): Promise<Stats> {
  const r = await request(`${url}/v2/models/${model}/stats`);
  assert.equal(r.status, 200, r.body.toString());
  return r.json<{ model_stats: Stats[] }>().model_stats[0];
}

async function index(url: string): Promise<Record<string, string>> {
  const r = await post(`${url}/v2/repository/index`, {});
  const out: Record<string, string> = {};
  for (const e of r.json<IndexEntry[]>()) {
    if (e.version !== undefined) out[e.name] = e.reason ? `${e.state} (${e.reason})` : e.state;
  }
  return out;
}

describe('the bundled simple_ensemble (explicit mode)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple_ensemble',
    ]);
  });
  after(async () => {
    await s.stop();
  });

  it('loaded its member first and answers 2·INPUT0, 2·INPUT1 over HTTP JSON', async () => {
    const idx = await index(s.url);
    assert.equal(idx.simple, 'READY');
    assert.equal(idx.simple_ensemble, 'READY');
    const r = await post(`${s.url}/v2/models/simple_ensemble/infer`, simpleBody());
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json<InferJson>();
    assert.equal(out.model_name, 'simple_ensemble');
    assert.deepEqual(
      out.outputs.map((o) => [o.name, o.datatype, o.shape]),
      [
        ['OUTPUT0', 'INT32', [1, 16]],
        ['OUTPUT1', 'INT32', [1, 16]],
      ],
    );
    assert.deepEqual(
      out.outputs[0].data,
      a.map((v) => 2 * v),
    );
    assert.deepEqual(
      out.outputs[1].data,
      b.map((v) => 2 * v),
    );
  });

  it('answers a batch of 2 in binary, and only the outputs asked for', async () => {
    const rows0 = [...a, ...a.map((v) => -v)];
    const rows1 = [...b, ...b.map((v) => v + 7)];
    const i32 = (v: number[]) => Buffer.from(new Int32Array(v).buffer);
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', shape: [2, 16], datatype: 'INT32', parameters: { binary_data_size: 128 } },
          { name: 'INPUT1', shape: [2, 16], datatype: 'INT32', parameters: { binary_data_size: 128 } },
        ],
        outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }],
      },
      [i32(rows0), i32(rows1)],
    );
    const r = await request(`${s.url}/v2/models/simple_ensemble/infer`, { method: 'POST', body, headers });
    assert.equal(r.status, 200, r.body.toString());
    const { header, blobs } = splitBinaryResponse(r);
    assert.deepEqual(
      header.outputs.map((o) => [o.name, o.shape]),
      [['OUTPUT1', [2, 16]]],
    );
    const got = Uint8Array.from(blobs.get('OUTPUT1')!);
    assert.deepEqual(
      [...new Int32Array(got.buffer)],
      rows1.map((v) => 2 * v),
    );
  });

  it('reports platform ensemble in metadata and config', async () => {
    const meta = (await request(`${s.url}/v2/models/simple_ensemble`)).json<{ platform: string }>();
    assert.equal(meta.platform, 'ensemble');
    const config = (await request(`${s.url}/v2/models/simple_ensemble/config`)).json<{
      platform: string;
      ensemble_scheduling: { step: { model_name: string }[] };
    }>();
    assert.equal(config.platform, 'ensemble');
    assert.deepEqual(
      config.ensemble_scheduling.step.map((st) => st.model_name),
      ['simple', 'simple'],
    );
  });

  it('counts statistics like Triton: the ensemble per request, the member per step', async () => {
    const ensembleBefore = await stats(s.url, 'simple_ensemble');
    const simpleBefore = await stats(s.url, 'simple');
    const n = 5;
    for (let i = 0; i < n; i++) {
      assert.equal((await post(`${s.url}/v2/models/simple_ensemble/infer`, simpleBody())).status, 200);
    }
    const bad = await post(`${s.url}/v2/models/simple_ensemble/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: a }],
    });
    assert.equal(bad.status, 400, 'a request missing an input is refused before any step runs');
    const e = await stats(s.url, 'simple_ensemble');
    const m = await stats(s.url, 'simple');
    assert.equal(e.inference_stats.success.count - ensembleBefore.inference_stats.success.count, n);
    assert.equal(e.inference_count - ensembleBefore.inference_count, n);
    assert.equal(e.execution_count - ensembleBefore.execution_count, n);
    assert.equal(e.inference_stats.queue.count - ensembleBefore.inference_stats.queue.count, n);
    assert.ok(e.inference_stats.compute_infer.ns > ensembleBefore.inference_stats.compute_infer.ns);
    assert.equal(
      m.inference_stats.success.count - simpleBefore.inference_stats.success.count,
      2 * n,
      'simple ran twice per ensemble request',
    );
  });

  it('unload_dependents also unloads the member the ensemble pulled in', async () => {
    const r = await post(`${s.url}/v2/repository/models/simple_ensemble/unload`, {
      parameters: { unload_dependents: true },
    });
    assert.equal(r.status, 200, r.body.toString());
    const idx = await index(s.url);
    assert.equal(idx.simple_ensemble, 'UNAVAILABLE (unloaded)');
    assert.equal(idx.simple, 'UNAVAILABLE (unloaded)');
    assert.equal((await post(`${s.url}/v2/repository/models/simple_ensemble/load`, {})).status, 200);
    assert.equal((await index(s.url)).simple, 'READY');
  });

  it('is not ready while its member is unloaded, and comes back when the member does', async () => {
    assert.equal((await request(`${s.url}/v2/models/simple_ensemble/ready`)).status, 200);
    assert.equal((await post(`${s.url}/v2/repository/models/simple/unload`, {})).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple_ensemble/ready`)).status, 400);
    const idx = await index(s.url);
    assert.match(idx.simple_ensemble, /^UNAVAILABLE/);
    const refused = await post(`${s.url}/v2/models/simple_ensemble/infer`, simpleBody());
    assert.notEqual(refused.status, 200);

    assert.equal((await post(`${s.url}/v2/repository/models/simple/load`, {})).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple_ensemble/ready`)).status, 200);
    const r = await post(`${s.url}/v2/models/simple_ensemble/infer`, simpleBody(['OUTPUT0']));
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(
      r.json<InferJson>().outputs[0].data,
      a.map((v) => 2 * v),
    );
  });
});

// ------------------------------------------------------------------------------------------------

const SLOW = `
name: "slow"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
`;

/** Two independent steps of one model, each reading the ensemble input. */
const forkOf = (name: string, model: string, type: string, dims: string): string => `
name: "${name}"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: ${type} dims: ${dims} } ]
output [ { name: "A" data_type: ${type} dims: ${dims} }, { name: "B" data_type: ${type} dims: ${dims} } ]
ensemble_scheduling { step [
  { model_name: "${model}" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "A" } },
  { model_name: "${model}" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "B" } }
] }
`;

const DELAY = `
name: "delay"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
parameters { key: "execute_delay_ms" value: { string_value: "1500" } }
`;

/** A one-step ensemble with variable dims, so a bad shape passes the ensemble and fails inside simple. */
const LOOSE = `
name: "loose"
platform: "ensemble"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "Y" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ -1 ] } ]
ensemble_scheduling { step [
  { model_name: "simple" model_version: -1
    input_map { key: "INPUT0" value: "X" } input_map { key: "INPUT1" value: "Y" }
    output_map { key: "OUTPUT0" value: "SUM" } }
] }
`;

/** INT32 tensors fed to add_sub_fp32, which wants FP32: refused at load. */
const BAD_DTYPE = `
name: "bad_dtype"
platform: "ensemble"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "Z" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "add_sub_fp32" model_version: -1
    input_map { key: "INPUT0" value: "X" } input_map { key: "INPUT1" value: "Y" }
    output_map { key: "OUTPUT0" value: "Z" } }
] }
`;

const IDENT = `
name: "ident"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** square_int32 (decoupled: n responses for IN = n) feeding ident: the ensemble streams. */
const SQUARE_ENSEMBLE = `
name: "square_chain"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "square_int32" model_version: -1 input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "piece" } },
  { model_name: "ident" model_version: -1 input_map { key: "INPUT0" value: "piece" } output_map { key: "OUTPUT0" value: "OUT" } }
] }
`;

describe('ensembles of test models (none mode)', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({
      simple: { config: example('simple'), files: { '1/model.onnx': simpleOnnx() } },
      add_sub_fp32: { config: example('add_sub_fp32'), onnx: 'add_sub_fp32.onnx' },
      slow: { config: SLOW, onnx: 'slow_fp32.onnx' },
      slow_fork: { config: forkOf('slow_fork', 'slow', 'TYPE_FP32', '[ 1, 16 ]') },
      delay: { config: DELAY },
      delay_fork: { config: forkOf('delay_fork', 'delay', 'TYPE_FP32', '[ 1 ]') },
      loose: { config: LOOSE },
      bad_dtype: { config: BAD_DTYPE },
      square_int32: { config: example('square_int32') },
      ident: { config: IDENT },
      square_chain: { config: SQUARE_ENSEMBLE },
    });
    s = await startServer([`--model-repository=${repo}`, '--exit-on-error=false']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  const infer = (model: string, body: unknown) => post(`${s.url}/v2/models/${model}/infer`, body);

  it('runs independent timer-bound steps at the same time (about 1×, not 2× the step)', async () => {
    const body = { inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [0.25] }] };
    const t0 = performance.now();
    const r = await infer('delay_fork', body);
    const took = performance.now() - t0;
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(
      r.json<InferJson>().outputs.map((o) => [o.name, o.data[0]]),
      [
        ['A', 0.25],
        ['B', 0.25],
      ],
    );
    assert.ok(took >= 1490, `the steps wait 1500 ms each, the ensemble took only ${took.toFixed(0)} ms`);
    // One after the other they could not end before 3 s; overlapping, they end after about 1.5 s.
    assert.ok(took < 2900, `two 1500 ms steps took ${took.toFixed(0)} ms: they did not overlap`);
  });

  it('runs independent CPU-bound steps (slow_fp32, 2 instances) in parallel', async (t) => {
    const body = (name: string) => ({
      inputs: [{ name, shape: [1, 16], datatype: 'FP32', data: Array(16).fill(0.5) }],
    });
    // Warm both instances, then time one step alone and the two-step ensemble.
    await Promise.all([infer('slow', body('INPUT0')), infer('slow', body('INPUT0'))]);
    let t0 = performance.now();
    assert.equal((await infer('slow', body('INPUT0'))).status, 200);
    const single = performance.now() - t0;
    const before = await stats(s.url, 'slow');
    t0 = performance.now();
    const r = await infer('slow_fork', body('IN'));
    const both = performance.now() - t0;
    const after = await stats(s.url, 'slow');
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json<InferJson>().outputs;
    assert.deepEqual(out[0].data, out[1].data, 'both branches ran the same model on the same input');
    assert.equal(after.execution_count - before.execution_count, 2);
    // Wall-clock ratios swing with whatever else the machine runs; the overlap does not: the two steps'
    // compute times add up to about twice the ensemble's wall time only if they ran side by side.
    const computeMs =
      (after.inference_stats.compute_infer.ns - before.inference_stats.compute_infer.ns) / 1e6;
    const overlap = computeMs / both;
    t.diagnostic(
      `one step ${single.toFixed(0)} ms, ensemble of two ${both.toFixed(0)} ms (${(both / single).toFixed(2)}×), steps' compute ${computeMs.toFixed(0)} ms, overlap ${overlap.toFixed(2)}`,
    );
    assert.ok(single > 200, `one slow step took only ${single.toFixed(0)} ms; the test would prove nothing`);
    assert.ok(
      overlap > 1.5,
      `the steps overlapped only ${overlap.toFixed(2)}× (sequential steps give at most 1)`,
    );
  });

  it('fails a request with the failing step named and the member’s error', async () => {
    const r = await infer('loose', {
      inputs: [
        { name: 'X', shape: [8], datatype: 'INT32', data: Array(8).fill(1) },
        { name: 'Y', shape: [8], datatype: 'INT32', data: Array(8).fill(2) },
      ],
    });
    assert.equal(r.status, 400);
    const { error } = r.json<{ error: string }>();
    assert.match(
      error,
      /^in ensemble 'loose', step 0 \(model 'simple'\): \[request id: [^\]]*\] unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[8\]/,
    );
    const ok = await infer('loose', {
      inputs: [
        { name: 'X', shape: [16], datatype: 'INT32', data: a },
        { name: 'Y', shape: [16], datatype: 'INT32', data: b },
      ],
    });
    assert.equal(ok.status, 200, ok.body.toString());
    const sum = ok.json<InferJson>().outputs[0];
    assert.deepEqual(sum.shape, [16], 'the batch dimension simple added is taken off again');
    assert.deepEqual(
      sum.data,
      a.map((v, i) => v + b[i]),
    );
    assert.equal((await stats(s.url, 'loose')).inference_stats.fail.count, 1);
  });

  it('refuses at load an ensemble whose tensors disagree with a member, saying which', async () => {
    const r = await post(`${s.url}/v2/repository/index`, {});
    const entry = r.json<IndexEntry[]>().find((e) => e.name === 'bad_dtype' && e.version === '1');
    assert.equal(entry?.state, 'UNAVAILABLE');
    assert.match(
      entry?.reason ?? '',
      /in ensemble bad_dtype, ensemble tensor X: inconsistent data type: TYPE_INT32 is inferred from model bad_dtype while TYPE_FP32 is inferred from model add_sub_fp32/,
    );
  });

  it('streams a decoupled member through the ensemble (in-process API)', async () => {
    const api = s.running.server;
    const handle = api.resolveModel('square_chain');
    handle.release();
    assert.equal(handle.decoupled, true, 'the ensemble inherits decoupled');
    const data = Buffer.alloc(4);
    data.writeInt32LE(3);
    const req: InferenceRequest = {
      modelName: 'square_chain',
      id: 'sq',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data }],
    };
    const responses: InferenceResponse[] = [];
    for await (const res of api.infer(req)) responses.push(res);
    const withData = responses.filter((res) => res.outputs.length > 0);
    assert.equal(withData.length, 3);
    for (const res of withData) {
      assert.equal(res.modelName, 'square_chain');
      assert.equal(res.id, 'sq');
      assert.equal(res.outputs[0].data.readInt32LE(0), 3);
    }
    assert.equal(responses[responses.length - 1].final, true);
    assert.equal(responses.filter((res) => res.final).length, 1);
    const unary = await infer('square_chain', {
      inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [2] }],
    });
    assert.notEqual(unary.status, 200, 'a decoupled ensemble needs a streaming protocol');
    assert.match(unary.json<{ error: string }>().error, /decoupled/);
  });

  it('streams a decoupled ensemble over gRPC ModelStreamInfer', async () => {
    const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    try {
      const stream = client.streamInfer();
      stream.send({
        model: 'square_chain',
        requestId: 'g1',
        inputs: [new InferInput('IN', [1], 'INT32').setData([4])],
      });
      stream.end();
      const values: number[] = [];
      for await (const r of stream.results()) {
        assert.equal(r.id, 'g1');
        values.push(Number(r.asArray('OUT', 'INT32')[0]));
      }
      assert.deepEqual(values, [4, 4, 4, 4]);
    } finally {
      client.close();
    }
  });
});
