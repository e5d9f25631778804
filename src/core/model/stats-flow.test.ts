// The statistics as the real request path fills them: ModelVersion → default scheduler → instance pool →
// JobSender, with a scripted backend instance standing in for onnxruntime.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BackendRequest, InstanceHandle, ModelHandle } from '../../backend-api/backend.js';
import { NereidError, invalidArg } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../model-config/index.js';
import { ModelVersion } from './model-version.js';
import type { InferenceRequest, InferenceResponse } from '../types.js';
import type { InferResponseStatistics } from '../stats/model-stats.js';
import { StatsRegistry } from '../stats/registry.js';

type Script = (r: BackendRequest) => Promise<void> | void;

function config(extra = '') {
  const c = normalizeModelConfig(
    parseModelConfigText(
      `name: "m"
       backend: "scripted"
       max_batch_size: 8
       input [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]
       output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] } ]
       instance_group [ { kind: KIND_CPU count: 1 } ]
       ${extra}`,
      'config.pbtxt',
    ),
    { backend: 'scripted' },
  );
  validateModelConfig(c);
  return freezeModelConfig(c);
}

function version(script: Script, extra = '', registry?: StatsRegistry): ModelVersion {
  return versionOf(
    async (requests) => {
      for (const r of requests) await script(r);
    },
    extra,
    registry,
  );
}

function versionOf(execute: InstanceHandle['execute'], extra = '', registry?: StatsRegistry): ModelVersion {
  const instance: InstanceHandle = {
    name: 'm_0',
    execute,
    close: () => Promise.resolve(),
  };
  const handle: ModelHandle = {
    createInstance: () => Promise.resolve(instance),
    unload: () => Promise.resolve(),
  };
  return new ModelVersion({
    config: config(extra),
    version: 1,
    handle,
    instances: [instance],
    labels: new Map(),
    log: silentLogger(),
    statsRegistry: registry,
    loadDurationNs: 2_500_000_000,
  });
}

const out = (batch: number): Tensor => ({
  name: 'OUT',
  datatype: 'FP32',
  shape: [batch, 2],
  data: Buffer.alloc(batch * 8),
});

function request(batch: number, signal?: AbortSignal): InferenceRequest {
  return {
    modelName: 'm',
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [batch, 2], data: Buffer.alloc(batch * 8) }],
    signal,
  };
}

async function drain(stream: AsyncIterable<InferenceResponse>): Promise<InferenceResponse[]> {
  const got: InferenceResponse[] = [];
  for await (const r of stream) got.push(r);
  return got;
}

const echo = (r: BackendRequest): void => r.sender.send([out(r.batchSize)], { final: true });

describe('statistics along the request path', () => {
  it('successes: batch-expanded counts, one execution per request, phases and queue', async () => {
    const v = version(echo);
    await drain(v.infer(request(3)));
    await drain(v.infer(request(1)));
    const s = v.stats.snapshot();
    assert.equal(s.inference_stats.success.count, 2);
    assert.equal(s.inference_count, 4);
    assert.equal(s.execution_count, 2);
    assert.equal(s.inference_stats.queue.count, 2);
    assert.equal(s.inference_stats.compute_infer.count, 2);
    assert.equal(s.inference_stats.compute_output.count, 2);
    assert.ok(s.inference_stats.compute_output.ns > 0, 'the core output handling is timed');
    assert.deepEqual(
      s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
      [
        [1, 1],
        [3, 1],
      ],
    );
    assert.deepEqual(s.response_stats, {}, 'only decoupled models have response statistics');
  });

  it('a validation error never reaches the scheduler and is not counted', () => {
    const v = version(echo);
    assert.throws(() => v.infer({ ...request(1), inputs: [] }));
    const s = v.stats.snapshot();
    assert.equal(s.inference_stats.fail.count, 0);
    assert.equal(s.inference_stats.success.count, 0);
  });

  it('a backend error is a BACKEND failure; no execution is counted', async () => {
    const v = version((r) => r.sender.fail(invalidArg('bad element')));
    await assert.rejects(drain(v.infer(request(1))), /bad element/);
    const s = v.stats.snapshot();
    assert.equal(s.inference_stats.fail.count, 1);
    assert.equal(s.execution_count, 0);
    assert.equal(v.stats.failures.BACKEND, 1);
  });

  it('a backend that forgets to answer, or throws, fails the request as BACKEND', async () => {
    const v1 = version(() => undefined);
    await assert.rejects(drain(v1.infer(request(1))), /without a response/);
    assert.equal(v1.stats.failures.BACKEND, 1);
    const v2 = version(() => Promise.reject(new Error('boom')));
    await assert.rejects(drain(v2.infer(request(1))));
    assert.equal(v2.stats.failures.BACKEND, 1);
  });

  it('a request cancelled while queued is CANCELED; pending counts only what waits', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const v = version(async (r) => {
      await gate;
      echo(r);
    });
    const first = drain(v.infer(request(1)));
    const abort = new AbortController();
    const second = drain(v.infer(request(1, abort.signal)));
    const third = drain(v.infer(request(1)));
    assert.equal(v.stats.pending, 2, 'one executes, two wait');
    abort.abort();
    await assert.rejects(second, (e: unknown) => e instanceof NereidError && e.code === 'CANCELLED');
    assert.equal(v.stats.pending, 1);
    release();
    await first;
    await third;
    assert.equal(v.stats.pending, 0);
    assert.deepEqual(v.stats.failures, { REJECTED: 0, CANCELED: 1, BACKEND: 0, OTHER: 0 });
    const s = v.stats.snapshot();
    assert.equal(s.inference_stats.success.count, 2);
    assert.equal(s.inference_stats.fail.count, 1);
    assert.ok(s.inference_stats.queue.ns > 0);
  });

  it('reported phase timings reach the statistics', async () => {
    const v = version((r) => {
      r.reportTiming?.({ computeInputNs: 1000, computeInferNs: 2000, computeOutputNs: 3000 });
      echo(r);
    });
    await drain(v.infer(request(2)));
    const s = v.stats.snapshot();
    assert.deepEqual(s.inference_stats.compute_input, { count: 1, ns: 1000 });
    assert.deepEqual(s.inference_stats.compute_infer, { count: 1, ns: 2000 });
    assert.ok(s.inference_stats.compute_output.ns >= 3000);
    assert.equal(s.batch_stats[0].compute_input.ns, 1000);
  });

  it('decoupled responses are counted per response index', async () => {
    const v = version((r) => {
      r.sender.send([out(1)], { final: false });
      r.sender.send([out(1)], { final: false });
      r.sender.send([], { final: true });
    }, 'model_transaction_policy { decoupled: true }');
    const got = await drain(v.infer(request(1)));
    assert.equal(got.length, 3);
    const rs = v.stats.snapshot().response_stats as Record<string, InferResponseStatistics>;
    assert.deepEqual(Object.keys(rs), ['0', '1', '2']);
    assert.equal(rs['0'].success.count, 1);
    assert.equal(rs['0'].compute_output.count, 1);
    assert.equal(rs['1'].success.count, 1);
    assert.equal(rs['2'].empty_response.count, 1);
    assert.equal(rs['2'].success.count, 0);
    assert.equal(v.stats.snapshot().inference_stats.success.count, 1);
  });

  it('a decoupled request open after execute() returned: the instance is free, each counted once', async () => {
    const DECOUPLED = 'model_transaction_policy { decoupled: true }';
    const open: BackendRequest[] = [];
    let executions = 0;
    const v = versionOf((requests) => {
      executions++;
      open.push(...requests);
      return Promise.resolve();
    }, DECOUPLED);
    const first = drain(v.infer(request(1)));
    const second = drain(v.infer(request(2)));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(executions, 2, 'the one instance took the second request while the first was open');
    let s = v.stats.snapshot();
    assert.equal(s.execution_count, 2, 'executions count when execute() returns');
    assert.equal(s.inference_stats.success.count, 0, 'requests count when they end');
    open[1].sender.send([out(2)], { final: false });
    open[1].sender.send([], { final: true });
    open[0].sender.fail(invalidArg('late failure'));
    assert.equal((await second).length, 2);
    await assert.rejects(first, /late failure/);
    s = v.stats.snapshot();
    assert.equal(s.execution_count, 2);
    assert.equal(s.inference_count, 2);
    assert.equal(s.inference_stats.success.count, 1);
    assert.equal(s.inference_stats.fail.count, 1);
    assert.equal(s.inference_stats.compute_infer.count, 1);
    assert.deepEqual(
      s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
      [
        [1, 1],
        [2, 1],
      ],
    );
  });

  it('unload waits for a decoupled stream that is still open, then closes the instances', async () => {
    let sender: BackendRequest['sender'] | undefined;
    const v = versionOf((requests) => {
      sender = requests[0].sender;
      return Promise.resolve();
    }, 'model_transaction_policy { decoupled: true }');
    const stream = drain(v.infer(request(1)));
    await new Promise((resolve) => setImmediate(resolve));
    let unloaded = false;
    const unloading = v.unload().then(() => (unloaded = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(unloaded, false);
    assert.equal(v.isReady(), false);
    sender!.send([out(1)], { final: true });
    assert.equal((await stream).length, 1);
    await unloading;
    assert.equal(unloaded, true);
  });

  it('a model that is not decoupled cannot leave a request open: it fails when execute() returns', async () => {
    const v = versionOf(() => Promise.resolve());
    await assert.rejects(drain(v.infer(request(1))), /backend returned without a response/);
    assert.equal(v.stats.snapshot().execution_count, 0);
  });

  it('executed: true counts an execution whose requests all failed (a raising Python execute)', async () => {
    const v = versionOf((requests) => {
      for (const r of requests) r.sender.fail(invalidArg('raised'));
      return Promise.resolve({ executed: true });
    });
    await assert.rejects(drain(v.infer(request(3))), /raised/);
    const s = v.stats.snapshot();
    assert.equal(s.execution_count, 1);
    assert.deepEqual(
      s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
      [[3, 1]],
    );
    assert.equal(s.inference_stats.fail.count, 1);
    assert.equal(s.inference_stats.success.count, 0);
    assert.equal(s.inference_count, 0);
  });

  it('executed: false keeps an execution out of the counts even when its request succeeded', async () => {
    const v = versionOf((requests) => {
      for (const r of requests) echo(r);
      return Promise.resolve({ executed: false });
    });
    await drain(v.infer(request(1)));
    const s = v.stats.snapshot();
    assert.equal(s.execution_count, 0);
    assert.equal(s.inference_stats.success.count, 1);
  });

  it("an error that is the model's answer (countAs: 'success') fails the request but counts a success", async () => {
    const v = version((r) => r.sender.fail(invalidArg('the model says no'), { countAs: 'success' }));
    await assert.rejects(drain(v.infer(request(2))), /the model says no/);
    const s = v.stats.snapshot();
    assert.equal(s.inference_stats.success.count, 1);
    assert.equal(s.inference_stats.fail.count, 0);
    assert.equal(s.inference_count, 2);
    assert.equal(s.execution_count, 1);
  });

  it('joins the metrics registry while loaded, with its load time and per-request observations', async () => {
    const registry = new StatsRegistry();
    const seen: string[] = [];
    registry.addLatencyObserver({
      success: (series, sample) => seen.push(`success ${series.model} ${sample.requestNs > 0}`),
      firstResponse: (series) => seen.push(`first ${series.model}`),
    });
    const v = version(echo, 'metric_tags { key: "team" value: "a" }', registry);
    await drain(v.infer(request(2)));
    const [series] = registry.metricSeries();
    assert.equal(series.loadDurationSecs, 2.5);
    assert.deepEqual(series.tags, { team: 'a' });
    assert.equal(series.totals().success, 1);
    assert.deepEqual(seen, ['first m', 'success m true']);
    await v.unload();
    assert.equal(registry.metricSeries().length, 0);
  });
});
