// The compute phases of the statistics extension for the onnxruntime and Python backends, over real
// sockets: compute_input (preparing the inputs), compute_infer (the run) and compute_output (reading the
// outputs back, sending them) are each measured, as Triton reports them (Model Analyzer shows them), and
// a request's phases fit in its own time: queue + the three phases never exceed the success time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';
import { pythonFlags } from './python-support.js';

interface Duration {
  count: number;
  ns: number;
}
interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<
    'success' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output',
    Duration
  >;
  batch_stats: {
    batch_size: number;
    compute_input: Duration;
    compute_infer: Duration;
    compute_output: Duration;
  }[];
}

const N = 12;

const body = (datatype: string, dims: number[], values: number[]) => ({
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype, shape: dims, data: values })),
});

const MODELS: Record<string, unknown> = {
  simple: body(
    'INT32',
    [1, 16],
    Array.from({ length: 16 }, (_, i) => i),
  ),
  add_sub_python: body('FP32', [4], [1, 2, 3, 4]),
  simple_event_loop: body(
    'INT32',
    [1, 16],
    Array.from({ length: 16 }, (_, i) => i),
  ),
};

describe('compute phases in the statistics (onnxruntime, Python)', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    // `simple` again, run on the event loop instead of a worker thread (execution_thread).
    repo = makeRepository({
      simple_event_loop: {
        config: `name: "simple_event_loop"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
parameters { key: "execution_thread" value: { string_value: "event_loop" } }`,
        files: { '1/model.onnx': readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx')) },
      },
    });
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=add_sub_python',
      '--load-model=simple_event_loop',
      ...pythonFlags(`nereid_phases_${process.pid}_`),
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  for (const [model, req] of Object.entries(MODELS)) {
    it(`${model}: every phase measured, and within the request's time`, async () => {
      for (let i = 0; i < N; i++) {
        const r = await post(`${s.url}/v2/models/${model}/infer`, req);
        assert.equal(r.status, 200, r.body.toString());
      }
      const [st] = (await request(`${s.url}/v2/models/${model}/stats`)).json<{ model_stats: Stats[] }>()
        .model_stats;
      const { success, queue, compute_input, compute_infer, compute_output } = st.inference_stats;
      assert.equal(success.count, N);
      for (const [phase, d] of Object.entries({ compute_input, compute_infer, compute_output })) {
        assert.equal(d.count, N, phase);
        assert.ok(d.ns > 0, `${phase} is measured: ${JSON.stringify(st.inference_stats)}`);
      }
      assert.ok(
        queue.ns + compute_input.ns + compute_infer.ns + compute_output.ns <= success.ns,
        `the phases fit in the success time: ${JSON.stringify(st.inference_stats)}`,
      );
      const executions = st.batch_stats.reduce((n, b) => n + b.compute_infer.count, 0);
      assert.equal(executions, st.execution_count);
      for (const b of st.batch_stats) {
        assert.ok(
          b.compute_input.ns > 0 && b.compute_infer.ns > 0 && b.compute_output.ns > 0,
          JSON.stringify(b),
        );
      }
    });
  }

  it('add_sub_python with requests pipelined to its stub: the phases still fit in the success time', async () => {
    const url = `${s.url}/v2/models/add_sub_python`;
    const before = (await request(`${url}/stats`)).json<{ model_stats: Stats[] }>().model_stats[0];
    // 8 at once on one instance: the pool hands its stub a second batch while the first runs.
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => post(`${url}/infer`, MODELS.add_sub_python)),
      );
      for (const r of answers) assert.equal(r.status, 200, r.body.toString());
    }
    const [st] = (await request(`${url}/stats`)).json<{ model_stats: Stats[] }>().model_stats;
    const { success, queue, compute_input, compute_infer, compute_output } = st.inference_stats;
    assert.equal(success.count - before.inference_stats.success.count, 32);
    const delta = (d: { ns: number }, b: { ns: number }): number => d.ns - b.ns;
    const was = before.inference_stats;
    assert.ok(
      delta(queue, was.queue) +
        delta(compute_input, was.compute_input) +
        delta(compute_infer, was.compute_infer) +
        delta(compute_output, was.compute_output) <=
        delta(success, was.success),
      `the phases fit in the success time: ${JSON.stringify(st.inference_stats)}`,
    );
  });
});
