import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freezeModelConfig, normalizeModelConfig, parseModelConfigText } from '../../model-config/index.js';
import { ModelStats, RequestRecord, StatsRegistry } from '../../core/assembly.js';
import { metricsSettings } from './config.js';
import { escapeLabelValue, formatValue } from './exposition.js';
import { LatencyTracker } from './latency.js';
import { renderMetrics } from './render.js';

const MS = 1_000_000n;

const config = (name: string, extra = '') =>
  freezeModelConfig(
    normalizeModelConfig(parseModelConfigText(`name: "${name}"\n${extra}`, 'c'), { backend: 'x' }),
  );

/** Two successes (batch 2, 1.5 ms end to end each) and one failure per reason given. */
function fill(stats: ModelStats, failures: ('BACKEND' | 'CANCELED')[] = []): void {
  for (let i = 0; i < 2; i++) {
    const r = new RequestRecord(0n, 100_000n, 2);
    r.computeStart = 300_000n;
    r.succeed(1_500_000n);
    stats.recordExecution([r], 300_000n, 1_400_000n);
  }
  for (const reason of failures) {
    const r = new RequestRecord(0n, 0n, 1);
    r.failed(MS, reason);
    stats.recordEarlyFailure(r);
  }
}

function setup(settings = new Map<string, string>()) {
  const registry = new StatsRegistry();
  const s = metricsSettings(settings);
  const latency = s.summaryLatencies || s.histogramLatencies ? new LatencyTracker(s) : undefined;
  if (latency) registry.addLatencyObserver(latency);
  const a = new ModelStats('alpha', '1');
  a.pendingSource = () => 3;
  registry.attach(
    a,
    config('alpha', 'metric_tags { key: "team" value: "x\\"y" } metric_tags { key: "bad-key" value: "z" }'),
    1.25e9,
  );
  const b = new ModelStats('beta', '2');
  registry.attach(b, config('beta'));
  fill(a, ['BACKEND', 'BACKEND', 'CANCELED']);
  const text = () =>
    renderMetrics({
      series: registry.metricSeries(),
      settings: s,
      latency,
      system: { cpuUtilization: 0.25, memoryTotalBytes: 1000, memoryUsedBytes: 600 },
    });
  return { text, a, b };
}

const lines = (text: string, prefix: string) => text.split('\n').filter((l) => l.startsWith(prefix));

describe('renderMetrics', () => {
  it('names, HELP/TYPE lines and labels as Triton prints them', () => {
    const text = setup().text();
    assert.ok(
      text.includes(
        '# HELP nv_inference_request_success Number of successful inference requests, all batch sizes\n# TYPE nv_inference_request_success counter\n',
      ),
    );
    assert.deepEqual(lines(text, 'nv_inference_request_success'), [
      'nv_inference_request_success{_team="x\\"y",model="alpha",version="1"} 2',
      'nv_inference_request_success{model="beta",version="2"} 0',
    ]);
    assert.deepEqual(lines(text, 'nv_inference_request_failure{_team'), [
      'nv_inference_request_failure{_team="x\\"y",model="alpha",reason="REJECTED",version="1"} 0',
      'nv_inference_request_failure{_team="x\\"y",model="alpha",reason="CANCELED",version="1"} 1',
      'nv_inference_request_failure{_team="x\\"y",model="alpha",reason="BACKEND",version="1"} 2',
      'nv_inference_request_failure{_team="x\\"y",model="alpha",reason="OTHER",version="1"} 0',
    ]);
    assert.ok(text.includes('nv_inference_count{_team="x\\"y",model="alpha",version="1"} 4\n'));
    assert.ok(text.includes('nv_inference_exec_count{_team="x\\"y",model="alpha",version="1"} 2\n'));
    // 2 × 1.5 ms end to end, 2 × 0.2 ms queued, 2 × 1.1 ms computing.
    assert.ok(
      text.includes('nv_inference_request_duration_us{_team="x\\"y",model="alpha",version="1"} 3000\n'),
    );
    assert.ok(text.includes('nv_inference_queue_duration_us{_team="x\\"y",model="alpha",version="1"} 400\n'));
    assert.ok(
      text.includes('nv_inference_compute_infer_duration_us{_team="x\\"y",model="alpha",version="1"} 2200\n'),
    );
    assert.ok(text.includes('# TYPE nv_inference_pending_request_count gauge\n'));
    assert.ok(
      text.includes('nv_inference_pending_request_count{_team="x\\"y",model="alpha",version="1"} 3\n'),
    );
    assert.ok(text.includes('nv_model_load_duration_secs{_team="x\\"y",model="alpha",version="1"} 1.25\n'));
    assert.ok(text.includes('# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.25\n'));
    assert.ok(text.includes('# TYPE nv_cpu_memory_used_bytes gauge\nnv_cpu_memory_used_bytes 600\n'));
    assert.ok(!text.includes('bad-key'), 'a tag that cannot be a label name is left out');
    assert.ok(!text.includes('nv_cache_'), 'no cache, no cache metrics');
    assert.ok(!text.includes('_summary_us'), 'summaries are off by default');
    assert.ok(!text.includes('histogram'), 'histograms are off by default');
  });

  it('every family has exactly one HELP and one TYPE line, before its samples', () => {
    const text = setup(
      new Map([
        ['summary_latencies', 'true'],
        ['histogram_latencies', 'true'],
      ]),
    ).text();
    const seen = new Set<string>();
    let current = '';
    for (const l of text.trim().split('\n')) {
      const m = /^# (HELP|TYPE) (\S+)/.exec(l);
      if (m) {
        if (m[1] === 'HELP') {
          assert.ok(!seen.has(m[2]), `${m[2]} twice`);
          seen.add(m[2]);
          current = m[2];
        }
        continue;
      }
      assert.ok(l.startsWith(current), `${l} outside its family ${current}`);
    }
  });

  it('counter_latencies=false drops the *_duration_us counters only', () => {
    const text = setup(new Map([['counter_latencies', 'false']])).text();
    assert.ok(!text.includes('_duration_us'));
    assert.ok(text.includes('nv_inference_request_success{'));
    assert.ok(text.includes('nv_inference_pending_request_count{'));
  });

  it('summary_latencies=true adds the summaries, with count/sum matching the counters', () => {
    const { text } = setup(
      new Map([
        ['summary_latencies', 'true'],
        ['summary_quantiles', '0.5:0.05,0.9:0.01'],
      ]),
    );
    const t = text();
    assert.ok(t.includes('# TYPE nv_inference_queue_summary_us summary\n'));
    assert.deepEqual(
      lines(t, 'nv_inference_request_summary_us').filter((l) => l.includes('alpha')),
      [
        'nv_inference_request_summary_us_count{_team="x\\"y",model="alpha",version="1"} 2',
        'nv_inference_request_summary_us_sum{_team="x\\"y",model="alpha",version="1"} 3000',
        'nv_inference_request_summary_us{_team="x\\"y",model="alpha",version="1",quantile="0.5"} 1500',
        'nv_inference_request_summary_us{_team="x\\"y",model="alpha",version="1",quantile="0.9"} 1500',
      ],
    );
    for (const f of ['queue', 'compute_input', 'compute_infer', 'compute_output']) {
      assert.ok(
        t.includes(`nv_inference_${f}_summary_us_count{_team="x\\"y",model="alpha",version="1"} 2\n`),
        f,
      );
    }
    // An idle model still shows its summaries, empty.
    assert.ok(t.includes('nv_inference_request_summary_us{model="beta",version="2",quantile="0.5"} NaN\n'));
  });

  it('histogram_latencies=true adds the first-response histogram with Triton default buckets', () => {
    const t = setup(new Map([['histogram_latencies', 'true']])).text();
    assert.deepEqual(
      lines(t, 'nv_inference_first_response_histogram_ms').filter((l) => l.includes('beta')),
      [
        'nv_inference_first_response_histogram_ms_count{model="beta",version="2"} 0',
        'nv_inference_first_response_histogram_ms_sum{model="beta",version="2"} 0',
        'nv_inference_first_response_histogram_ms_bucket{model="beta",version="2",le="100"} 0',
        'nv_inference_first_response_histogram_ms_bucket{model="beta",version="2",le="500"} 0',
        'nv_inference_first_response_histogram_ms_bucket{model="beta",version="2",le="2000"} 0',
        'nv_inference_first_response_histogram_ms_bucket{model="beta",version="2",le="5000"} 0',
        'nv_inference_first_response_histogram_ms_bucket{model="beta",version="2",le="+Inf"} 0',
      ],
    );
    assert.ok(t.includes('# TYPE nv_inference_first_response_histogram_ms histogram\n'));
  });

  it('observes first responses into buckets (cumulative), honouring model_metrics buckets', () => {
    const registry = new StatsRegistry();
    const s = metricsSettings(new Map([['histogram_latencies', 'true']]));
    const latency = new LatencyTracker(s);
    registry.addLatencyObserver(latency);
    const stats = new ModelStats('m', '1');
    registry.attach(
      stats,
      config(
        'm',
        `model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [ 1, 10 ] } } ] }`,
      ),
    );
    for (const ms of [0.5, 5, 7, 50]) {
      const r = new RequestRecord(0n, 0n, 1);
      stats.recordFirstResponse(r, BigInt(ms * 1e6));
    }
    const t = renderMetrics({ series: registry.metricSeries(), settings: s, latency });
    assert.deepEqual(lines(t, 'nv_inference_first_response_histogram_ms'), [
      'nv_inference_first_response_histogram_ms_count{model="m",version="1"} 4',
      'nv_inference_first_response_histogram_ms_sum{model="m",version="1"} 62',
      'nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="1"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="10"} 3',
      'nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="+Inf"} 4',
    ]);
  });

  it('no loaded model: only the server-wide families', () => {
    const t = renderMetrics({ series: [], settings: metricsSettings(new Map()) });
    assert.ok(!t.includes('nv_inference'));
    assert.ok(t.includes('nv_pinned_memory_pool_total_bytes 0\n'));
    assert.ok(!t.includes('nv_cpu_'), 'no poller, no cpu metrics');
  });

  it('escapes label values and formats special numbers', () => {
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
    assert.equal(formatValue(NaN), 'NaN');
    assert.equal(formatValue(Infinity), '+Inf');
    assert.equal(formatValue(-Infinity), '-Inf');
    assert.equal(formatValue(1.5), '1.5');
  });
});
