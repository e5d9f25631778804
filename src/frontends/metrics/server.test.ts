import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger, silentLogger } from '../../common/logger.js';
import { freezeModelConfig, normalizeModelConfig, parseModelConfigText } from '../../model-config/index.js';
import { ModelStats, StatsRegistry } from '../../core/assembly.js';
import { createMetricsFrontend, type MetricsFrontend } from './server.js';

describe('metrics endpoint', () => {
  let frontend: MetricsFrontend;
  let base: string;
  before(async () => {
    const registry = new StatsRegistry();
    const config = freezeModelConfig(
      normalizeModelConfig(parseModelConfigText('name: "m"', 'c'), { backend: 'x' }),
    );
    registry.attach(new ModelStats('m', '1'), config, 5e8);
    frontend = createMetricsFrontend(registry, {
      address: '127.0.0.1',
      port: 0,
      log: silentLogger(),
      intervalMs: 50,
    });
    const { port } = await frontend.listen();
    base = `http://127.0.0.1:${port}`;
  });
  after(() => frontend.close());

  it('GET /metrics answers Prometheus text with nv_* and Node process metrics', async () => {
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    assert.ok(text.includes('nv_model_load_duration_secs{model="m",version="1"} 0.5\n'));
    assert.ok(text.includes('# TYPE nv_cpu_utilization gauge\n'));
    assert.match(text, /^process_cpu_user_seconds_total \d/m);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
    assert.ok(text.endsWith('\n'));
    // Both halves meet on a line boundary: the text parses line by line.
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      assert.match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? \S+$/, line);
    }
  });

  it('host memory is read from /proc once the poller started', async () => {
    const text = await frontend.scrape();
    const m = /^nv_cpu_memory_total_bytes (\S+)$/m.exec(text);
    assert.ok(m);
    if (process.platform === 'linux') assert.ok(Number(m[1]) > 0);
  });

  it('accepts a trailing slash and a query string', async () => {
    assert.equal((await fetch(`${base}/metrics/`)).status, 200);
    assert.equal((await fetch(`${base}/metrics?x=1`)).status, 200);
  });

  it('404 elsewhere, 405 for other methods, HEAD included (what Triton 2.51 answers HEAD /metrics)', async () => {
    assert.equal((await fetch(`${base}/`)).status, 404);
    assert.equal((await fetch(`${base}/metricsx`)).status, 404);
    assert.equal((await fetch(`${base}/v2/health/ready`)).status, 404);
    const post = await fetch(`${base}/metrics`, { method: 'POST', body: 'x' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
    const head = await fetch(`${base}/metrics`, { method: 'HEAD' });
    assert.equal(head.status, 405);
  });
});

describe('metrics endpoint options', () => {
  it('--allow-cpu-metrics=false leaves out nv_cpu_*; a busy port is a clear error', async () => {
    const registry = new StatsRegistry();
    const a = createMetricsFrontend(registry, {
      address: '127.0.0.1',
      port: 0,
      log: silentLogger(),
      cpuMetrics: false,
    });
    const { port } = await a.listen();
    try {
      assert.ok(!(await a.scrape()).includes('nv_cpu_'));
      const b = createMetricsFrontend(registry, { address: '127.0.0.1', port, log: silentLogger() });
      await assert.rejects(b.listen(), /already in use/);
      await b.close();
    } finally {
      await a.close();
    }
  });
});

describe('metrics endpoint with custom metrics', () => {
  it('custom families come between the nv_* and the process families, with problems logged once', async () => {
    const warnings: string[] = [];
    const log = new Logger({ logInfo: false }, (line) => warnings.push(line));
    const frontend = createMetricsFrontend(new StatsRegistry(), {
      address: '127.0.0.1',
      port: 0,
      log,
      cpuMetrics: false,
      customMetrics: () =>
        Promise.resolve([
          {
            model: 'm',
            version: '1',
            families: [
              { name: 'my_total', description: 'Mine', kind: 'counter', metrics: [{ labels: {}, value: 4 }] },
              { name: 'nv_mine', description: '', kind: 'counter', metrics: [{ labels: {}, value: 1 }] },
            ],
          },
          { model: 'slow', version: '2', families: [], error: 'no answer within 2000 ms' },
        ]),
    });
    try {
      const text = await frontend.scrape();
      await frontend.scrape();
      assert.match(
        text,
        /# TYPE nv_pinned_memory_pool_used_bytes gauge\n[^]*# HELP my_total Mine\n# TYPE my_total counter\nmy_total 4\n# HELP process_/,
      );
      assert.doesNotMatch(text, /nv_mine/);
      assert.equal(warnings.filter((w) => w.includes("'nv_mine'")).length, 1);
      assert.equal(
        warnings.filter((w) => w.includes("model 'slow' version 2 left out: no answer")).length,
        1,
      );
    } finally {
      await frontend.close();
    }
  });

  it('a source that never answers does not hold the scrape', async () => {
    const frontend = createMetricsFrontend(new StatsRegistry(), {
      address: '127.0.0.1',
      port: 0,
      log: silentLogger(),
      cpuMetrics: false,
      customMetricsTimeoutMs: 50,
      customMetrics: () => new Promise(() => undefined),
    });
    try {
      // The source never answers: that the scrape returns at all is the claim (the test would time out).
      const text = await frontend.scrape();
      assert.match(text, /^process_cpu_user_seconds_total /m);
    } finally {
      await frontend.close();
    }
  });
});
