// Custom metrics of Python models (pb_utils.MetricFamily / Metric) on GET /metrics, over the real server
// and real stubs: a model on two instances defines a counter, gauges moved by increments and by set(), a
// histogram and per-instance series; the scrape shows the instances merged as Triton's shared series
// would be, a series nobody holds any more is gone, a busy stub is represented by its last answer without
// holding the scrape up, and an unloaded model's families disappear with its stubs.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { pythonFlags, pythonModel, shmFiles, stubPids } from './python-support.js';

const MODEL = `
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        model = args["model_name"]
        self.gate = os.path.join(args["model_repository"], "gate")
        counter = pb_utils.MetricFamily.COUNTER
        gauge = pb_utils.MetricFamily.GAUGE
        self.requests = pb_utils.MetricFamily("py_input_total", "Sum of the inputs", counter).Metric(
            labels={"model": model}
        )
        # The same family and labels again: the same series, and the first description stays.
        self.requests_too = pb_utils.MetricFamily("py_input_total", "Another description", counter).Metric(
            labels={"model": model}
        )
        self.per_instance = pb_utils.MetricFamily("py_instance_requests", "Requests per instance", counter).Metric(
            labels={"instance": args["model_instance_name"]}
        )
        self.moved = pb_utils.MetricFamily("py_moved", "A gauge moved by increments", gauge).Metric()
        self.last = pb_utils.MetricFamily("py_last_input", "A gauge set to the last input", gauge).Metric()
        self.inputs = pb_utils.MetricFamily("py_inputs", "The inputs", pb_utils.MetricFamily.HISTOGRAM).Metric(
            labels={"model": model}, buckets=[1.0, 5.0, 10.0]
        )
        self.unkept = pb_utils.MetricFamily("py_unkept", "Series nobody keeps", counter)
        try:
            pb_utils.MetricFamily("py_last_input", "A counter now", counter)
            self.conflict = "allowed"
        except pb_utils.TritonModelException as e:
            self.conflict = str(e)

    def execute(self, requests):
        responses = []
        for request in requests:
            x = float(pb_utils.get_input_tensor_by_name(request, "X").as_numpy().flat[0])
            delay = float(pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().flat[0])
            if delay < 0:  # held until the test opens the gate
                while not os.path.exists(self.gate):
                    time.sleep(0.01)
            else:
                time.sleep(delay)
            self.requests.increment(x / 2)
            self.requests_too.increment(x / 2)
            self.per_instance.increment(1)
            self.moved.increment(x)
            self.last.set(x)
            self.inputs.observe(x)
            self.unkept.Metric(labels={"gone": "yes"}).increment(1)
            out = np.array([self.conflict.encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("CONFLICT", out)]))
        return responses
`;

const CONFIG = `
name: "py_metrics"
backend: "python"
max_batch_size: 0
input [
  { name: "X" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "DELAY" data_type: TYPE_FP32 dims: [ 1 ] }
]
output [ { name: "CONFLICT" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]`;

describe('python backend: custom metrics on /metrics', () => {
  let s: TestServer;
  let repo: string;
  const prefix = `nereid_pymetrics_${process.pid}_`;

  const infer = async (x: number, delay = 0): Promise<string> => {
    const res = await post(`${s.url}/v2/models/py_metrics/infer`, {
      inputs: [
        { name: 'X', datatype: 'FP32', shape: [1], data: [x] },
        { name: 'DELAY', datatype: 'FP32', shape: [1], data: [delay] },
      ],
    });
    assert.equal(res.status, 200, res.body.toString());
    return res.json<{ outputs: { data: string[] }[] }>().outputs[0].data[0];
  };
  const scrape = async (): Promise<string[]> => {
    const res = await request(`http://127.0.0.1:${s.running.metrics!.port}/metrics`);
    assert.equal(res.status, 200);
    return res.body.toString().split('\n');
  };
  const value = (lines: string[], series: string): number | undefined => {
    const line = lines.find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  before(async () => {
    repo = makeRepository({ py_metrics: pythonModel(CONFIG, MODEL) });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=py_metrics',
      ...pythonFlags(prefix),
    ]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('merges both instances’ series as Triton’s shared series', async () => {
    // Four at once with a delay, so both instances take some; then one more, the last to set the gauge.
    const conflicts = await Promise.all([1, 2, 3, 4].map((x) => infer(x, 0.2)));
    await infer(7);
    assert.deepEqual(
      new Set(conflicts),
      new Set([
        "Error when creating MetricFamily: metric family 'py_last_input' already exists with another kind",
      ]),
    );
    const lines = await scrape();
    assert.ok(lines.includes('# HELP py_input_total Sum of the inputs'));
    assert.ok(lines.includes('# TYPE py_input_total counter'));
    assert.equal(value(lines, 'py_input_total{model="py_metrics"}'), 17);
    const perInstance = [0, 1].map((i) => value(lines, `py_instance_requests{instance="py_metrics_0_${i}"}`));
    assert.ok(
      perInstance.every((v) => v !== undefined && v > 0),
      `both instances served: ${String(perInstance)}`,
    );
    assert.equal(perInstance[0]! + perInstance[1]!, 5);
    assert.ok(lines.includes('# TYPE py_moved gauge'));
    assert.equal(value(lines, 'py_moved'), 17, 'increments of both instances add up');
    assert.equal(value(lines, 'py_last_input'), 7, 'the latest set() wins');
    assert.ok(lines.includes('# TYPE py_inputs histogram'));
    assert.equal(value(lines, 'py_inputs_count{model="py_metrics"}'), 5);
    assert.equal(value(lines, 'py_inputs_sum{model="py_metrics"}'), 17);
    assert.deepEqual(
      ['1', '5', '10', '+Inf'].map((le) => value(lines, `py_inputs_bucket{model="py_metrics",le="${le}"}`)),
      [1, 4, 5, 5],
    );
    assert.ok(!lines.some((l) => l.includes('py_unkept')), 'a series no Metric object holds is gone');
  });

  it('a busy stub is represented by its last answer, without holding the scrape up', async () => {
    await scrape(); // every stub answers while idle
    let busyDone = false;
    const busy = infer(100, -1).finally(() => (busyDone = true)); // held until the gate file exists
    await new Promise((r) => setTimeout(r, 200));
    const lines = await scrape();
    assert.equal(busyDone, false, 'the scrape answered while the stub was still busy');
    assert.equal(value(lines, 'py_input_total{model="py_metrics"}'), 17);
    for (const i of [0, 1])
      assert.ok(value(lines, `py_instance_requests{instance="py_metrics_0_${i}"}`)! > 0);
    writeFileSync(path.join(repo, 'py_metrics', 'gate'), '');
    await busy;
    assert.equal(value(await scrape(), 'py_input_total{model="py_metrics"}'), 117);
  });

  it('an unloaded model’s families go with its stubs', async () => {
    const res = await post(`${s.url}/v2/repository/models/py_metrics/unload`, {});
    assert.equal(res.status, 200);
    assert.deepEqual(stubPids(), []);
    assert.ok(!(await scrape()).some((l) => l.startsWith('py_')));
    await s.stop();
    assert.deepEqual(shmFiles(prefix), []);
  });
});
