// The Grafana board (deploy/grafana/nereid-dashboard.json) against a real Prometheus scraping a real
// Nereid under load: the board is well formed (unique panel ids, no overlapping panels, every query on the
// board's data source), every panel's PromQL returns data, and the numbers agree with the server's own
// /v2/models/stats — the rate panels checked through their cumulative form (the same query without
// rate(...[$__rate_interval])), which Prometheus must bring to exactly the statistics' counts.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import {
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from '../integration/harness.js';
import { deployTools, missing, ROOT } from './tools.js';

const BOARD = path.join(ROOT, 'deploy/grafana/nereid-dashboard.json');
const RATE_WINDOW = '30s';

interface Target {
  refId: string;
  expr: string;
  legendFormat?: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Board {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
}

const board = JSON.parse(readFileSync(BOARD, 'utf8')) as Board;
const queryPanels = board.panels.filter((p) => p.type !== 'row');

/** A panel by its title (the board's titles are unique: checked below). */
function panel(title: string): Panel {
  const p = queryPanels.find((q) => q.title === title);
  assert.ok(p, `the board has a panel "${title}"`);
  return p;
}

/** Grafana's variables as a server-side evaluation sees them: every model, a fixed rate window. */
function substitute(expr: string): string {
  return expr.replaceAll('$__rate_interval', RATE_WINDOW).replaceAll('$model', '.*');
}

/** The cumulative form of a rate query: counters since the server started instead of their rates. */
function cumulative(expr: string): string {
  return substitute(expr).replace(/rate\(([a-z_]+\{[^}]*\}|[a-z_]+)\[[^\]]+\]\)/g, '$1');
}

interface PromSample {
  metric: Record<string, string>;
  value: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function until(what: string, check: () => Promise<boolean>, attempts = 600): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`gave up waiting for ${what}`);
}

const FP = `
name: "fp"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
dynamic_batching { max_queue_delay_microseconds: 500 }
response_cache { enable: true }
`;
const STR = `
name: "str"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
`;

const tools = deployTools();

describe('the Grafana board', () => {
  it('is a well-formed dashboard: unique ids and titles, no overlaps, one data-source variable', () => {
    assert.equal(board.uid, 'nereid-overview');
    const ids = board.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const titles = queryPanels.map((p) => p.title);
    assert.equal(new Set(titles).size, titles.length, 'panel titles are unique');
    const cells = new Set<string>();
    for (const p of board.panels) {
      const { x, y, w, h } = p.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24, `${p.title} fits the 24-column grid`);
      for (let dx = 0; dx < w; dx++)
        for (let dy = 0; dy < h; dy++) {
          const cell = `${x + dx},${y + dy}`;
          assert.ok(!cells.has(cell), `${p.title} overlaps another panel at ${cell}`);
          cells.add(cell);
        }
    }
    const vars = board.templating.list.map((v) => v.name);
    assert.deepEqual(vars, ['datasource', 'model']);
    for (const p of queryPanels) {
      assert.equal(p.datasource?.uid, '${datasource}', `${p.title} uses the board's data source`);
      assert.ok(p.targets && p.targets.length > 0, `${p.title} has a query`);
      const refs = p.targets.map((t) => t.refId);
      assert.equal(new Set(refs).size, refs.length, `${p.title}: refIds are unique`);
    }
  });

  describe(
    'its queries against a real Prometheus scraping Nereid under load',
    { skip: missing(tools, ['prometheus']) },
    () => {
      let dir: string;
      let repo: string;
      let s: TestServer;
      let prometheus: ChildProcess | undefined;
      let promPort: number;
      let scrapedText = '';

      const query = async (promql: string): Promise<PromSample[]> => {
        const q = new URLSearchParams({ query: promql });
        const res = await request(`http://127.0.0.1:${promPort}/api/v1/query?${q.toString()}`);
        const body = res.json<{
          status: string;
          error?: string;
          data: { result: { metric: Record<string, string>; value: [number, string] }[] };
        }>();
        assert.equal(body.status, 'success', `${promql}: ${body.error ?? ''}`);
        return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
      };
      /** The value of the series for `model` in a query's result. */
      const forModel = (samples: PromSample[], model: string): number => {
        const hits = samples.filter((x) => x.metric.model === model);
        assert.equal(hits.length, 1, `one series for ${model} in ${JSON.stringify(samples)}`);
        return hits[0].value;
      };
      const stats = async (model: string) => {
        const res = await request(`${s.url}/v2/models/${model}/stats`);
        const e = res.json<{
          model_stats: {
            inference_count: number;
            inference_stats: Record<string, { count: number; ns: number }>;
          }[];
        }>().model_stats[0];
        return e;
      };

      before(async () => {
        dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-grafana-'));
        repo = makeRepository({
          fp: { config: FP, onnx: 'identity_fp32.onnx' },
          str: { config: STR, onnx: 'identity_bytes.onnx' },
        });
        s = await startServer([
          `--model-repository=${repo}`,
          '--metrics-address=127.0.0.1',
          '--cache-config=local,size=1048576',
          '--metrics-config=summary_latencies=true',
        ]);
        promPort = await freePort();
        const metricsPort = s.running.metrics!.port;
        writeFileSync(
          path.join(dir, 'prometheus.yml'),
          `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: nereid\n    static_configs:\n      - targets: ['127.0.0.1:${metricsPort}']\n`,
        );
        const prom = (tools as { prometheus: string }).prometheus;
        prometheus = spawn(
          prom,
          [
            `--config.file=${path.join(dir, 'prometheus.yml')}`,
            `--storage.tsdb.path=${path.join(dir, 'tsdb')}`,
            `--web.listen-address=127.0.0.1:${promPort}`,
          ],
          { stdio: 'ignore' },
        );
        await until(
          'Prometheus to scrape Nereid',
          async () => (await query('up{job="nereid"} == 1')).length === 1,
        );

        // Load until Prometheus has seen several scrapes of it: fresh inputs (cache misses), repeated ones
        // (hits), strings, and requests refused at the edge (bad shape, unknown model over HTTP and gRPC).
        const scrapes = async (): Promise<number> =>
          (await query('count_over_time(up{job="nereid"}[5m])'))[0]?.value ?? 0;
        const start = await scrapes();
        const grpc = new TestClient(`127.0.0.1:${s.running.grpc!.port}`);
        let i = 0;
        while ((await scrapes()) < start + 4 || i < 40) {
          const fresh = { inputs: [{ name: 'INPUT0', shape: [1, 2], datatype: 'FP32', data: [i, i + 1] }] };
          const repeated = { inputs: [{ name: 'INPUT0', shape: [1, 2], datatype: 'FP32', data: [7, 7] }] };
          const str = { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'BYTES', data: [`s${i}`] }] };
          const replies = await Promise.all([
            post(`${s.url}/v2/models/fp/infer`, fresh),
            post(`${s.url}/v2/models/fp/infer`, repeated),
            post(`${s.url}/v2/models/str/infer`, str),
          ]);
          for (const r of replies) assert.equal(r.status, 200);
          const bad = { inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: 'FP32', data: [1, 2] }] };
          assert.equal((await post(`${s.url}/v2/models/fp/infer`, bad)).status, 400);
          const unknown = (await post(`${s.url}/v2/models/nope/infer`, fresh)).status;
          assert.ok(unknown >= 400 && unknown < 500, String(unknown));
          await assert.rejects(grpc.call('ModelInfer', { model_name: 'nope' }));
          i++;
        }
        grpc.close();
        // Load is over: wait for a scrape that holds its final counts.
        const final = (await stats('fp')).inference_stats.success.count;
        await until('Prometheus to hold the final counts', async () => {
          const r = await query('nv_inference_request_success{model="fp"}');
          return r.length === 1 && r[0].value === final;
        });
        scrapedText = (await request(`http://127.0.0.1:${metricsPort}/metrics`)).body.toString('utf8');
      });

      after(async () => {
        prometheus?.kill('SIGTERM');
        await s?.stop();
        if (repo) removeRepository(repo);
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      it('every panel query returns data, and every metric it names is one the server publishes', async () => {
        for (const p of queryPanels) {
          for (const t of p.targets ?? []) {
            for (const name of t.expr.match(/\b(?:nv|nereid|process|nodejs)_[a-z0-9_]+/g) ?? [])
              assert.ok(
                new RegExp(`^${name}[{ ]`, 'm').test(scrapedText),
                `${p.title}: ${name} is on /metrics`,
              );
            const result = await query(substitute(t.expr));
            assert.ok(result.length > 0, `${p.title} (${t.refId}) returns data: ${substitute(t.expr)}`);
            for (const r of result) assert.ok(!Number.isNaN(r.value), `${p.title} (${t.refId}) is a number`);
          }
        }
      });

      it('the traffic and latency panels agree with /v2/models/stats', async () => {
        for (const model of ['fp', 'str']) {
          const st = await stats(model);
          const expr = (title: string, ref = 0): string => cumulative(panel(title).targets![ref].expr);
          const success = st.inference_stats.success;
          assert.ok(success.count >= 40, model);
          assert.equal(forModel(await query(expr('Requests per second')), model), success.count, model);
          assert.equal(
            forModel(await query(expr('Inferences per second')), model),
            st.inference_count,
            model,
          );
          const failures = (await query(expr('Failed requests per second, by reason'))).filter(
            (x) => x.metric.model === model,
          );
          assert.equal(failures.length, 4, `${model}: four failure reasons`);
          assert.equal(
            failures.reduce((n, x) => n + x.value, 0),
            st.inference_stats.fail.count,
            model,
          );
          const near = (got: number, want: number, what: string) =>
            assert.ok(
              Math.abs(got - want) <= 1 + want * 0.01,
              `${model} ${what}: board ${got}, stats ${want}`,
            );
          near(
            forModel(await query(expr('Average request latency')), model),
            success.ns / success.count / 1000,
            'average latency µs',
          );
          const queue = st.inference_stats.queue;
          near(
            forModel(await query(expr('Average queue time')), model),
            queue.ns / success.count / 1000,
            'average queue µs',
          );
          assert.equal(forModel(await query(expr('Pending requests')), model), 0, model);
        }
        // Two instances of fp, one of str (the instance_group default for this model).
        const instances = await query(expr0('Instances'));
        assert.equal(forModel(instances, 'fp'), 2);
        assert.ok(forModel(instances, 'str') >= 1);
        const states = await query(expr0('Models by state'));
        assert.deepEqual(
          states.map((x) => [x.metric.state, x.value]),
          [['READY', 2]],
        );
      });

      it('the cache panel agrees with the cache statistics', async () => {
        const st = await stats('fp');
        const hits = st.inference_stats.cache_hit.count;
        const misses = st.inference_stats.cache_miss.count;
        assert.ok(hits > 0 && misses > 0, `hits ${hits}, misses ${misses}`);
        const rate = forModel(
          await query(cumulative(panel('Response cache hit rate').targets![0].expr)),
          'fp',
        );
        assert.ok(
          Math.abs(rate - hits / (hits + misses)) < 1e-9,
          `board ${rate}, stats ${hits}/${hits + misses}`,
        );
      });
    },
  );
});

function expr0(title: string): string {
  return cumulative(panel(title).targets![0].expr);
}
