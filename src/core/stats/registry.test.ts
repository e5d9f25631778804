import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freezeModelConfig, normalizeModelConfig, parseModelConfigText } from '../../model-config/index.js';
import { ModelStats } from './model-stats.js';
import { RequestRecord } from './request-record.js';
import { StatsRegistry } from './registry.js';

const config = (extra = '') =>
  freezeModelConfig(
    normalizeModelConfig(parseModelConfigText(`name: "m"\n${extra}`, 'config.pbtxt'), { backend: 'x' }),
  );

function succeed(stats: ModelStats, batch = 1): void {
  const r = new RequestRecord(0n, 0n, batch);
  r.computeStart = 1n;
  r.succeed(10n);
  stats.recordExecution([r], 1n, 10n);
}

describe('StatsRegistry', () => {
  it('keeps counters monotonic across a reload and drops the series once nothing is loaded', () => {
    const reg = new StatsRegistry();
    const old = new ModelStats('m', '1');
    const detachOld = reg.attach(old, config(), 1e9);
    succeed(old, 2);
    succeed(old, 2);
    // A reload: the new version loads while the old one still drains.
    const fresh = new ModelStats('m', '1');
    const detachNew = reg.attach(fresh, config(), 3e9);
    assert.equal(reg.metricSeries().length, 1, 'both instances of m:1 feed one series');
    succeed(old, 2);
    detachOld();
    succeed(fresh, 1);
    const [series] = reg.metricSeries();
    const t = series.totals();
    assert.equal(t.success, 4);
    assert.equal(t.inferenceCount, 7);
    assert.equal(t.executionCount, 4);
    assert.equal(series.loadDurationSecs, 3);
    assert.equal(fresh.snapshot().inference_stats.success.count, 1, 'statistics stay per loaded version');
    detachNew();
    assert.deepEqual(reg.metricSeries(), []);
  });

  it('a detach is idempotent and does not count twice', () => {
    const reg = new StatsRegistry();
    const a = new ModelStats('m', '1');
    const b = new ModelStats('m', '1');
    const detachA = reg.attach(a, config());
    reg.attach(b, config());
    succeed(a);
    detachA();
    detachA();
    assert.equal(reg.metricSeries()[0].totals().success, 1);
  });

  it('one series per version and per metric_tags set, ordered by model and version', () => {
    const reg = new StatsRegistry();
    reg.attach(new ModelStats('b', '1'), config());
    reg.attach(new ModelStats('a', '10'), config());
    reg.attach(new ModelStats('a', '2'), config());
    reg.attach(new ModelStats('a', '2'), config('metric_tags { key: "x" value: "1" }'));
    const list = reg.metricSeries().map((s) => `${s.model}:${s.version}:${JSON.stringify(s.tags)}`);
    assert.deepEqual(list, ['a:2:{"x":"1"}', 'a:2:{}', 'a:10:{}', 'b:1:{}']);
  });

  it('sums pending over the loaded instances of a version', () => {
    const reg = new StatsRegistry();
    const a = new ModelStats('m', '1');
    const b = new ModelStats('m', '1');
    a.pendingSource = () => 2;
    b.pendingSource = () => 3;
    reg.attach(a, config());
    reg.attach(b, config());
    assert.equal(reg.metricSeries()[0].pending(), 5);
  });

  it('reads first-response histogram buckets from model_metrics, sorted, other families ignored', () => {
    const reg = new StatsRegistry();
    reg.attach(
      new ModelStats('m', '1'),
      config(`model_metrics { metric_control [
        { metric_identifier { family: "nv_other" } histogram_options { buckets: [ 7 ] } },
        { metric_identifier { family: "nv_inference_first_response_histogram_ms" }
          histogram_options { buckets: [ 8, 1, 4, 2, 4 ] } } ] }`),
    );
    reg.attach(new ModelStats('n', '1'), config());
    const [m, n] = reg.metricSeries();
    assert.deepEqual(m.firstResponseBucketsMs, [1, 2, 4, 8]);
    assert.equal(n.firstResponseBucketsMs, undefined);
  });

  it('cache metrics only when the server has a cache and the model enables it', () => {
    const withCache = new StatsRegistry({ responseCache: true });
    withCache.attach(new ModelStats('m', '1'), config('response_cache { enable: true }'));
    withCache.attach(new ModelStats('n', '1'), config());
    assert.deepEqual(
      withCache.metricSeries().map((s) => s.cacheEnabled),
      [true, false],
    );
    const without = new StatsRegistry();
    without.attach(new ModelStats('m', '1'), config('response_cache { enable: true }'));
    assert.equal(without.metricSeries()[0].cacheEnabled, false);
  });

  it('forwards observations to observers until they stop', () => {
    const reg = new StatsRegistry();
    const s = new ModelStats('m', '1');
    reg.attach(s, config());
    let seen = 0;
    const stop = reg.addLatencyObserver({ success: () => seen++, firstResponse: () => seen++ });
    succeed(s);
    assert.equal(seen, 1);
    stop();
    succeed(s);
    assert.equal(seen, 1);
  });
});
