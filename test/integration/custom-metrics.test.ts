// Custom metrics end to end: JavaScript models define counters, gauges and histograms, a real server runs
// them, and GET /metrics shows exactly their values with exactly their labels — two instances of a model
// merged into one series, the same family from two models merged into one family, a family redefined with
// another kind left out (logged once) without breaking the scrape, and a model busy in a long execute()
// neither stalling the scrape nor losing its series.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InferInput, InferenceResponse } from '../../src/core/types.js';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';

const config = (name: string, instances = 1): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: ${instances} kind: KIND_CPU } ]
`;

// Counts requests (labels model and kind), adds every input to a gauge and observes it in a histogram;
// every instance also counts itself at initialize() in an unlabelled gauge and a per-instance counter.
const METRICS_MODEL = `
import { MetricFamily, Tensor } from 'nereid-server';

const requests = new MetricFamily({ name: 'cm_requests_total', description: 'Requests seen', kind: 'counter' });
const total = new MetricFamily({ name: 'cm_input_sum', description: 'Sum of the inputs', kind: 'gauge' });
const values = new MetricFamily({ name: 'cm_values', description: 'Input values', kind: 'histogram' });
const instances = new MetricFamily({ name: 'cm_instances', description: 'Instances started', kind: 'gauge' });
const started = new MetricFamily({ name: 'cm_started_total', description: 'Per instance', kind: 'counter' });

export default class {
  initialize(args) {
    this.requests = requests.metric({ model: args.model_name, kind: 'test' });
    this.total = total.metric();
    this.values = values.metric({ model: args.model_name }, { buckets: [1, 5, 10] });
    instances.metric().increment();
    started.metric({ instance: args.model_instance_name }).increment();
  }
  execute(reqs) {
    return reqs.map((r) => {
      const v = r.input('IN').int32()[0];
      this.requests.increment();
      this.total.increment(v);
      this.values.observe(v);
      return { outputs: [Tensor.from('OUT', new Int32Array([v]), { shape: [1] })] };
    });
  }
}
`;

// Shares cm_requests_total with other labels; defines cm_values as a gauge (a conflicting kind).
const OTHER_MODEL = `
import { MetricFamily, Tensor } from 'nereid-server';

const requests = new MetricFamily({ name: 'cm_requests_total', description: 'Requests seen', kind: 'counter' });
const clash = new MetricFamily({ name: 'cm_values', description: 'Not a histogram', kind: 'gauge' });

export default class {
  initialize() {
    requests.metric({ model: 'other' }).increment(10);
    clash.metric().set(99);
  }
  execute(reqs) {
    return reqs.map((r) => ({ outputs: [r.input('IN').withName('OUT')] }));
  }
}
`;

// Spins for as many milliseconds as its input asks: its worker answers no question meanwhile.
const BUSY_MODEL = `
import { MetricFamily } from 'nereid-server';

const calls = new MetricFamily({ name: 'busy_calls_total', description: 'Calls', kind: 'counter' });

export default class {
  initialize() {
    this.calls = calls.metric();
  }
  execute(reqs) {
    return reqs.map((r) => {
      this.calls.increment();
      const until = Date.now() + r.input('IN').int32()[0];
      while (Date.now() < until) {
        // busy
      }
      return { outputs: [r.input('IN').withName('OUT')] };
    });
  }
}
`;

describe('custom metrics on /metrics', () => {
  let s: TestServer;
  let repo: string;
  let metricsUrl: string;

  const infer = (model: string, value: number): Promise<InferenceResponse> => {
    const input: InferInput = {
      name: 'IN',
      datatype: 'INT32',
      shape: [1],
      data: Buffer.from(new Int32Array([value]).buffer),
    };
    return s.running.server.inferOnce({ modelName: model, inputs: [input] });
  };
  const scrape = async (): Promise<string> => {
    const res = await request(metricsUrl);
    assert.equal(res.status, 200);
    return res.body.toString('utf8');
  };
  const lines = (text: string, prefix: string): string[] =>
    text.split('\n').filter((l) => l.startsWith(prefix));

  before(async () => {
    repo = makeRepository({
      cm: { config: config('cm', 2), files: { '1/model.mjs': METRICS_MODEL } },
      cm_other: { config: config('cm_other'), files: { '1/model.mjs': OTHER_MODEL } },
      busy: { config: config('busy'), files: { '1/model.mjs': BUSY_MODEL } },
    });
    s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=*']);
    metricsUrl = `http://127.0.0.1:${s.running.metrics!.port}/metrics`;
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('counter, gauge and histogram show exactly what execute() recorded, with exactly the model’s labels', async () => {
    for (const v of [1, 3, 7, 20]) await infer('cm', v);
    const text = await scrape();
    assert.deepEqual(lines(text, 'cm_input_sum'), ['cm_input_sum 31']);
    assert.ok(text.includes('# HELP cm_input_sum Sum of the inputs\n# TYPE cm_input_sum gauge\n'));
    assert.deepEqual(lines(text, 'cm_values'), [
      'cm_values_count{model="cm"} 4',
      'cm_values_sum{model="cm"} 31',
      'cm_values_bucket{model="cm",le="1"} 1',
      'cm_values_bucket{model="cm",le="5"} 2',
      'cm_values_bucket{model="cm",le="10"} 3',
      'cm_values_bucket{model="cm",le="+Inf"} 4',
    ]);
    assert.ok(text.includes('# TYPE cm_values histogram\n'));
  });

  it('two instances are one series per label set: their initialize() counts merge', async () => {
    const text = await scrape();
    assert.deepEqual(lines(text, 'cm_instances'), ['cm_instances 2']);
    assert.deepEqual(lines(text, 'cm_started_total').sort(), [
      'cm_started_total{instance="cm_0_0"} 1',
      'cm_started_total{instance="cm_0_1"} 1',
    ]);
  });

  it('the same family from two models is one family; the one with another kind is left out and logged once', async () => {
    await scrape();
    const text = await scrape();
    assert.equal(text.match(/^# TYPE cm_requests_total counter$/gm)?.length, 1);
    assert.deepEqual(lines(text, 'cm_requests_total').sort(), [
      'cm_requests_total{kind="test",model="cm"} 4',
      'cm_requests_total{model="other"} 10',
    ]);
    assert.doesNotMatch(text, /^cm_values 99$/m);
    assert.equal(
      s.logs.filter((l) =>
        l.includes("custom metric family 'cm_values' of model 'cm_other' version 1 is a gauge"),
      ).length,
      1,
    );
    // Nereid's own families are still all there.
    assert.match(text, /^nv_inference_request_success\{model="cm",version="1"\} 4$/m);
    assert.match(text, /^process_cpu_user_seconds_total /m);
  });

  it('a model busy in a long execute() neither stalls the scrape nor loses its series', async () => {
    await infer('busy', 1);
    assert.deepEqual(lines(await scrape(), 'busy_calls_total'), ['busy_calls_total 1']);
    let settled = false;
    const running = infer('busy', 6000).finally(() => (settled = true));
    try {
      // Let the worker enter its busy loop.
      await new Promise((r) => setTimeout(r, 300));
      const text = await scrape();
      assert.equal(settled, false, 'the scrape answered while the model was still busy');
      assert.deepEqual(lines(text, 'busy_calls_total'), ['busy_calls_total 1'], 'its last answer stands in');
      assert.deepEqual(lines(text, 'cm_input_sum'), ['cm_input_sum 31']);
    } finally {
      await running;
    }
    assert.deepEqual(lines(await scrape(), 'busy_calls_total'), ['busy_calls_total 2']);
  });

  it('an unloaded model takes its series and its conflict away', async () => {
    const res = await post(`${s.url}/v2/repository/models/cm_other/unload`, {});
    assert.equal(res.status, 200);
    const text = await scrape();
    assert.deepEqual(lines(text, 'cm_requests_total'), ['cm_requests_total{kind="test",model="cm"} 4']);
    assert.equal(lines(text, 'cm_values_count').length, 1);
  });
});
