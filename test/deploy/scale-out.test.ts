// Scale-out with real processes on loopback (docs/kubernetes.md): three `nereid` replicas behind a real
// haproxy that health-checks /v2/health/ready, a real Prometheus scraping the three metrics ports, and a load
// generator in this process. It shows what a Kubernetes deployment of the chart relies on:
//   - the prometheus-adapter rule's PromQL (deploy/helm/nereid/prometheus-adapter-values.yaml) gives each
//     replica's queue time per request, equal to what the replica's own counters say, and it rises with load;
//   - a rolling restart (SIGTERM one replica, start it again, wait until the balancer has it back, next)
//     under steady load loses no request, with the balancer told not to retry anything;
//   - a sequence (stateful model) keeps its state when the balancer hashes on a header the client sets, and
//     loses it under plain round robin;
//   - the chart's own haproxy routing (deploy/helm/nereid/templates/haproxy.yaml, rendered by helm) sends
//     every request naming a model variant (nereid-model-variant) to one replica, so in on-demand mode each
//     variant is loaded on exactly one replica (each keeps its hot set), where round robin loads it on several.
// No timing is asserted: "rises" compares a load with no queueing (one request at a time) against one where
// each replica's single instance has several requests waiting, which queue however fast the machine is.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { CHART, deployTools, missing, ROOT, run, type DeployTools } from './tools.js';
import { DEFAULT_SCRAPE_CACHE } from '../../src/frontends/metrics/scrape-cache.js';

const tools = deployTools();
const t = (typeof tools === 'string' ? {} : tools) as DeployTools;

/** One instance whose execute takes 40 ms: requests beyond the first wait in the queue. */
const SLOW_CONFIG = `
name: "slow_js"
backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
const SLOW_MODEL = `
export default class Slow {
  async execute(requests) {
    await new Promise((resolve) => setTimeout(resolve, 40));
    return requests.map((r) => ({ outputs: [r.input('INPUT0').withName('OUTPUT0')] }));
  }
}
`;
const slowBody = JSON.stringify({
  inputs: [{ name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] }],
});

const EXIT_DELAY_SECS = 3;

/** Variants of one model for the multiplexing test: echo.v0 ... (each a model folder of its own). */
const VARIANTS = Array.from({ length: 12 }, (_, i) => `v${i}`);
const ECHO_CONFIG = (name: string): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
const ECHO_MODEL = `
export default class Echo {
  execute(requests) {
    return requests.map((r) => ({ outputs: [r.input('INPUT0').withName('OUTPUT0')] }));
  }
}
`;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

interface Reply {
  status: number;
  body: string;
}

/** One HTTP request; a socket error resolves as status 0 (counted as lost, never thrown). */
function send(
  port: number,
  method: string,
  pathname: string,
  agent: http.Agent | false,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: pathname,
        agent,
        headers: { ...headers, 'Content-Type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', (err) => resolve({ status: 0, body: String(err) }));
      },
    );
    req.on('error', (err) => resolve({ status: 0, body: String(err) }));
    req.end(body);
  });
}

class Replica {
  child: ChildProcess | undefined;
  log = '';
  constructor(
    readonly name: string,
    readonly repo: string,
    readonly httpPort: number,
    readonly metricsPort: number,
  ) {}

  async start(): Promise<void> {
    this.log = '';
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'bin/nereid.js'),
        `--model-repository=${this.repo}`,
        '--http-address=127.0.0.1',
        `--http-port=${this.httpPort}`,
        '--metrics-address=127.0.0.1',
        `--metrics-port=${this.metricsPort}`,
        '--allow-grpc=false',
        // On-demand: the variants load where their requests land; the other models are pinned.
        '--model-control-mode=on-demand',
        '--load-model=slow_js',
        '--load-model=seq_js',
        `--exit-delay-secs=${EXIT_DELAY_SECS}`,
        '--exit-timeout-secs=30',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    child.stdout.on('data', (c: Buffer) => (this.log += c.toString()));
    child.stderr.on('data', (c: Buffer) => (this.log += c.toString()));
    await until(
      `${this.name} to be ready`,
      async () => (await send(this.httpPort, 'GET', '/v2/health/ready', false)).status === 200,
    );
  }

  /** SIGTERM, as the kubelet sends it; resolves with the exit code. */
  stop(): Promise<number | null> {
    const child = this.child!;
    if (child.exitCode !== null) return Promise.resolve(child.exitCode);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return exited;
  }

  /** This replica's own counters for a model, straight from its /metrics. */
  async counters(model: string): Promise<{ queueUs: number; success: number; loads: number }> {
    const text = (await send(this.metricsPort, 'GET', '/metrics', false)).body;
    const read = (family: string): number => {
      const m = new RegExp(
        `^${family}\\{[^}]*model="${model.replaceAll('.', '\\.')}"[^}]*\\} (\\S+)$`,
        'm',
      ).exec(text);
      return m ? Number(m[1]) : 0;
    };
    return {
      queueUs: read('nv_inference_queue_duration_us'),
      success: read('nv_inference_request_success'),
      loads: read('nereid_model_on_demand_loads_total'),
    };
  }
}

class Prometheus {
  child: ChildProcess | undefined;
  constructor(readonly port: number) {}

  async query(promql: string, time: number): Promise<Map<string, number>> {
    const q = new URLSearchParams({ query: promql, time: String(time / 1000) });
    const r = await send(this.port, 'GET', `/api/v1/query?${q.toString()}`, false);
    const body = JSON.parse(r.body) as {
      status: string;
      error?: string;
      data: { result: { metric: { instance: string }; value: [number, string] }[] };
    };
    assert.equal(body.status, 'success', body.error);
    return new Map(body.data.result.map((s) => [s.metric.instance, Number(s.value[1])]));
  }
}

/** The window of the metrics port's scrape cache (DEFAULT_SCRAPE_CACHE.windowMs). */
const SCRAPE_WINDOW_MS = DEFAULT_SCRAPE_CACHE.windowMs;

/** haproxy's view of one backend's servers (its stats page as CSV): status and retry counters. */
async function haproxyServers(
  statsPort: number,
  backend: string,
): Promise<Map<string, Record<string, string>>> {
  const csv = (await send(statsPort, 'GET', '/stats;csv', false)).body.replace(/^# /, '').trim().split('\n');
  const header = csv[0].split(',');
  const rows = new Map<string, Record<string, string>>();
  for (const line of csv.slice(1)) {
    const cells = line.split(',');
    const row = Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
    if (row.pxname === backend && row.svname !== 'BACKEND' && row.svname !== 'FRONTEND')
      rows.set(row.svname, row);
  }
  return rows;
}

describe(
  'three replicas behind haproxy, scraped by Prometheus',
  { skip: missing(tools, ['haproxy', 'prometheus']) },
  () => {
    let dir: string;
    let replicas: Replica[];
    let lbPort: number;
    let statsPort: number;
    let haproxy: ChildProcess;
    let prometheus: Prometheus;
    let haproxyLog = '';

    before(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-scale-'));
      const repo = path.join(dir, 'models');
      mkdirSync(path.join(repo, 'slow_js/1'), { recursive: true });
      writeFileSync(path.join(repo, 'slow_js/config.pbtxt'), SLOW_CONFIG);
      writeFileSync(path.join(repo, 'slow_js/1/model.mjs'), SLOW_MODEL);
      cpSync(path.join(ROOT, 'test/fixtures/javascript/seq_js'), path.join(repo, 'seq_js'), {
        recursive: true,
      });
      for (const v of [...VARIANTS, 'rr']) {
        mkdirSync(path.join(repo, `echo.${v}/1`), { recursive: true });
        writeFileSync(path.join(repo, `echo.${v}/config.pbtxt`), ECHO_CONFIG(`echo.${v}`));
        writeFileSync(path.join(repo, `echo.${v}/1/model.mjs`), ECHO_MODEL);
      }

      replicas = [];
      for (let i = 0; i < 3; i++)
        replicas.push(new Replica(`r${i}`, repo, await freePort(), await freePort()));
      await Promise.all(replicas.map((r) => r.start()));

      lbPort = await freePort();
      statsPort = await freePort();
      const servers = replicas
        .map((r) => `  server ${r.name} 127.0.0.1:${r.httpPort} check inter 300ms fall 1 rise 2`)
        .join('\n');
      // No retries and no redispatch: a request sent to a replica that refuses it is lost, and counted.
      const cfg = `
global
  maxconn 2000
defaults
  mode http
  timeout connect 5s
  # A health check may answer slowly on a loaded machine; only a failed answer (or none in 2 s) marks down.
  timeout check 2s
  timeout client 120s
  timeout server 120s
  retries 0
  option http-keep-alive
listen stats
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /stats
frontend inference
  bind 127.0.0.1:${lbPort}
  # A sequence's requests carry the client's X-Sequence-Id: hash on it, so they all reach one replica.
  use_backend sequences if { req.hdr(x-sequence-id) -m found }
  default_backend stateless
backend stateless
  balance roundrobin
  option httpchk GET /v2/health/ready
  http-check expect status 200
${servers}
backend sequences
  balance hdr(x-sequence-id)
  hash-type consistent
  option httpchk GET /v2/health/ready
  http-check expect status 200
${servers}
`;
      writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
      haproxy = spawn(t.haproxy!, ['-db', '-f', path.join(dir, 'haproxy.cfg')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      haproxy.stdout!.on('data', (c: Buffer) => (haproxyLog += c.toString()));
      haproxy.stderr!.on('data', (c: Buffer) => (haproxyLog += c.toString()));
      await until('haproxy to see every replica up', async () => {
        const rows = await haproxyServers(statsPort, 'stateless');
        return rows.size === 3 && [...rows.values()].every((r) => r.status === 'UP');
      });

      prometheus = new Prometheus(await freePort());
      const targets = replicas.map((r) => `'127.0.0.1:${r.metricsPort}'`).join(', ');
      writeFileSync(
        path.join(dir, 'prometheus.yml'),
        `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: nereid\n    static_configs:\n      - targets: [${targets}]\n`,
      );
      prometheus.child = spawn(
        t.prometheus!,
        [
          `--config.file=${path.join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dir, 'tsdb')}`,
          `--web.listen-address=127.0.0.1:${prometheus.port}`,
        ],
        { stdio: 'ignore' },
      );
      await until('Prometheus to scrape all three replicas', async () => {
        const up = await prometheus.query('up{job="nereid"} == 1', Date.now());
        return up.size === 3;
      });
    });

    after(async () => {
      prometheus?.child?.kill('SIGTERM');
      haproxy?.kill('SIGTERM');
      await Promise.all((replicas ?? []).map((r) => r.stop()));
      rmSync(dir, { recursive: true, force: true });
    });

    /** `count` requests through the balancer, `concurrency` at a time; returns the statuses. */
    async function load(count: number, concurrency: number): Promise<number[]> {
      const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
      const statuses: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            next++;
            statuses.push((await send(lbPort, 'POST', '/v2/models/slow_js/infer', agent, slowBody)).status);
          }
        }),
      );
      agent.destroy();
      return statuses;
    }

    /** The rule's PromQL for this setup: its label matchers and grouping filled in as the adapter would. */
    function ruleQuery(windowSecs: number): string {
      const adapter = parse(readFileSync(path.join(CHART, 'prometheus-adapter-values.yaml'), 'utf8')) as {
        rules: { custom: { metricsQuery: string }[] };
      };
      const q = adapter.rules.custom[0].metricsQuery
        .replaceAll('<<.LabelMatchers>>', 'job="nereid",model="slow_js"')
        .replaceAll('<<.GroupBy>>', 'instance');
      // The adapter's one-minute window shrinks to the phase being measured (the only other change).
      assert.match(q, /\[1m\]/);
      return q.replaceAll('[1m]', `[${windowSecs}s]`);
    }

    /** Runs a load phase between idle gaps; returns, per replica, the PromQL value and the counters' value. */
    async function phase(
      count: number,
      concurrency: number,
    ): Promise<{ promql: number; expected: number }[]> {
      // Idle before and after, so Prometheus has a sample of each counter just outside the phase.
      await sleep(3000);
      const start = Date.now();
      const before = await Promise.all(replicas.map((r) => r.counters('slow_js')));
      const statuses = await load(count, concurrency);
      assert.deepEqual(
        statuses.filter((s) => s !== 200),
        [],
      );
      const afterCounts = await Promise.all(replicas.map((r) => r.counters('slow_js')));
      await sleep(3000);
      const at = Date.now();
      const windowSecs = Math.ceil((at - start) / 1000) + 1;
      const values = await prometheus.query(ruleQuery(windowSecs), at);
      return replicas.map((r, i) => {
        const served = afterCounts[i].success - before[i].success;
        assert.ok(served > 0, `${r.name} served nothing in this phase`);
        const promql = values.get(`127.0.0.1:${r.metricsPort}`);
        assert.ok(promql !== undefined, `no PromQL value for ${r.name}: ${JSON.stringify([...values])}`);
        return { promql, expected: (afterCounts[i].queueUs - before[i].queueUs) / served };
      });
    }

    it("the HPA rule's PromQL gives each replica's queue time per request, and it rises with load", async (t) => {
      assert.deepEqual(
        (await load(6, 1)).filter((s) => s !== 200),
        [],
      ); // warm-up: every counter exists
      const low = await phase(30, 1);
      const high = await phase(120, 15);
      const us = (v: number): string => `${Math.round(v)} µs`;
      t.diagnostic(
        `1 client: PromQL ${low.map((l) => us(l.promql)).join(', ')}; counters ${low.map((l) => us(l.expected)).join(', ')}`,
      );
      t.diagnostic(
        `15 clients: PromQL ${high.map((h) => us(h.promql)).join(', ')}; counters ${high.map((h) => us(h.expected)).join(', ')}`,
      );
      for (const [i, h] of high.entries()) {
        // Equal to what the replica itself counted, within what rate()'s extrapolation at the edges can add.
        assert.ok(
          Math.abs(h.promql - h.expected) <= 0.25 * h.expected + 500,
          `replica ${i}: PromQL ${h.promql} µs vs counters ${h.expected} µs`,
        );
        // Five requests waiting on one 40 ms instance against none waiting: a wide margin either way.
        assert.ok(
          h.promql > 10 * low[i].promql + 5000,
          `replica ${i}: queue time did not rise (${low[i].promql} µs at 1 client, ${h.promql} µs at 15)`,
        );
      }
    });

    it('a rolling restart under steady load loses no request', async (t) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 6 });
      const outcomes = new Map<number, number>();
      let stopping = false;
      const workers = Array.from({ length: 6 }, async () => {
        while (!stopping) {
          const { status } = await send(lbPort, 'POST', '/v2/models/slow_js/infer', agent, slowBody);
          outcomes.set(status, (outcomes.get(status) ?? 0) + 1);
        }
      });
      try {
        await sleep(1000);
        for (const r of replicas) {
          const code = await r.stop();
          assert.equal(code, 0, `${r.name} exited with ${code}: ${r.log.slice(-2000)}`);
          assert.match(r.log, /still serving for 3 s \(--exit-delay-secs\)/);
          await r.start();
          await until(`haproxy to take ${r.name} back`, async () => {
            const rows = await haproxyServers(statsPort, 'stateless');
            return rows.get(r.name)?.status === 'UP';
          });
        }
        await sleep(1000);
      } finally {
        stopping = true;
        await Promise.all(workers);
        agent.destroy();
      }
      const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
      t.diagnostic(`rolling restart: ${total} requests, outcomes ${JSON.stringify([...outcomes])}`);
      assert.deepEqual(
        [...outcomes.keys()],
        [200],
        `outcomes: ${JSON.stringify([...outcomes])} ${haproxyLog}`,
      );
      assert.ok(total > 30, `only ${total} requests ran during the restart`);
      // Every restarted replica is serving again.
      for (const r of replicas)
        assert.ok((await r.counters('slow_js')).success > 0, `${r.name} got no traffic back`);
    });

    async function runSequence(id: number, values: number[], sticky: boolean): Promise<Reply[]> {
      const replies: Reply[] = [];
      for (const [i, v] of values.entries()) {
        const body = JSON.stringify({
          parameters: { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 },
          inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [v] }],
        });
        const headers: Record<string, string> = sticky ? { 'X-Sequence-Id': String(id) } : {};
        replies.push(await send(lbPort, 'POST', '/v2/models/seq_js/infer', false, body, headers));
      }
      return replies;
    }

    const sumOf = (r: Reply): number =>
      (JSON.parse(r.body) as { outputs: { name: string; data: number[] }[] }).outputs.find(
        (o) => o.name === 'OUTPUT',
      )!.data[0];

    it('sequences keep their state when the balancer hashes on X-Sequence-Id, and lose it without', async () => {
      const values = [1, 2, 3, 4, 5];
      const ids = [1001, 1002, 1003, 1004, 1005, 1006];
      const before = await Promise.all(replicas.map((r) => r.counters('seq_js')));
      // Interleaved, as concurrent clients would send them.
      const all = await Promise.all(ids.map((id) => runSequence(id, values, true)));
      for (const replies of all) {
        assert.deepEqual(
          replies.map((r) => r.status),
          [200, 200, 200, 200, 200],
          replies.map((r) => r.body).join('\n'),
        );
        assert.deepEqual(replies.map(sumOf), [1, 3, 6, 10, 15]);
      }
      const afterCounts = await Promise.all(replicas.map((r) => r.counters('seq_js')));
      const used = afterCounts.filter((a, i) => a.success > before[i].success).length;
      assert.ok(used >= 2, 'the sequences spread over the replicas');

      // Round robin sends the second request of a sequence to another replica, which never saw its start.
      const loose = await runSequence(2001, values, false);
      assert.equal(loose[0].status, 200);
      assert.ok(
        loose.some((r) => r.status === 400 && /START/i.test(r.body)),
        loose.map((r) => `${r.status} ${r.body}`).join('\n'),
      );
    });

    /** The chart's haproxy.cfg (helm template), made to run here: its bind and pod slots become this test's. */
    async function chartHaproxyConfig(port: number, stats: number): Promise<string> {
      const r = await run(t.helm!, [
        'template',
        'rel',
        CHART,
        '--kube-version',
        t.k8sVersion,
        '--set',
        'haproxy.enabled=true',
        '--set',
        'modelControlMode=on-demand',
        '--set',
        'modelRepository.pvc.claimName=models',
      ]);
      assert.equal(r.code, 0, r.stderr);
      const map = parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as { kind?: string; metadata?: { name: string }; data?: Record<string, string> })
        .find((o) => o?.kind === 'ConfigMap' && o.metadata?.name === 'rel-nereid-haproxy');
      let cfg = map?.data?.['haproxy.cfg'];
      assert.ok(cfg !== undefined, 'the chart renders no haproxy.cfg');
      // Nothing stops a replica in this test, so a health check that answers late on a loaded machine must not
      // mark one down: that would rehash its variants onto another replica, which then loads them too.
      const servers = replicas
        .map((x) => `  server ${x.name} 127.0.0.1:${x.httpPort} check inter 1s fall 120 rise 1`)
        .join('\n');
      const count = (re: RegExp): number => [...cfg!.matchAll(re)].length;
      // The pods' DNS (a cluster's) becomes the three local replicas; nothing else of the routing changes.
      assert.equal(count(/^\s*server-template .*$/gm), 2);
      assert.equal(count(/^\s*bind :\d+$/gm), 1);
      cfg = cfg
        .replace(/^resolvers kube\n(?:\s+.*\n)*/m, '')
        .replace(/^\s*server-template .*$/gm, servers)
        .replace(/^(\s*)bind :\d+$/m, `$1bind 127.0.0.1:${port}`)
        .replace(/^(\s*)timeout check \S+$/m, '$1timeout check 30s');
      return `${cfg}\nlisten stats\n  bind 127.0.0.1:${stats}\n  stats enable\n  stats uri /stats\n`;
    }

    it(
      "the chart's haproxy routing sends each model variant to one replica, which alone loads it",
      { skip: missing(tools, ['helm']) },
      async (t2) => {
        const port = await freePort();
        const stats = await freePort();
        const cfgPath = path.join(dir, 'chart-haproxy.cfg');
        writeFileSync(cfgPath, await chartHaproxyConfig(port, stats));
        let log = '';
        const lb = spawn(t.haproxy!, ['-db', '-f', cfgPath], { stdio: ['ignore', 'pipe', 'pipe'] });
        lb.stdout.on('data', (c: Buffer) => (log += c.toString()));
        lb.stderr.on('data', (c: Buffer) => (log += c.toString()));
        try {
          await until('the chart haproxy to see every replica up', async () => {
            // Both backends: the requests without the header go round robin over nereid_any's servers.
            for (const backend of ['nereid_by_variant', 'nereid_any']) {
              const rows = await haproxyServers(stats, backend);
              if (rows.size !== 3 || ![...rows.values()].every((r) => r.status === 'UP')) return false;
            }
            return true;
          });
          const body = JSON.stringify({
            inputs: [{ name: 'INPUT0', shape: [2], datatype: 'FP32', data: [1, 2] }],
          });
          // Three requests per variant, interleaved as concurrent clients would send them.
          for (let round = 0; round < 3; round++) {
            const replies = await Promise.all(
              VARIANTS.map((v) =>
                send(port, 'POST', '/v2/models/echo/infer', false, body, { 'nereid-model-variant': v }),
              ),
            );
            for (const [i, r] of replies.entries()) {
              assert.equal(r.status, 200, `${r.body} ${log}`);
              assert.equal((JSON.parse(r.body) as { model_name: string }).model_name, `echo.${VARIANTS[i]}`);
            }
          }
          // The replicas' /metrics answer a burst of scrapes (over 10 in a second: this test's counter reads)
          // with text up to a second old (src/frontends/metrics/scrape-cache.ts); past a quiet second the next
          // reads are fresh, so the counts below include every request just answered.
          await sleep(SCRAPE_WINDOW_MS + 200);
          // A replica marked down would move its variants elsewhere: the counts say whether one was.
          const checks = [...(await haproxyServers(stats, 'nereid_by_variant')).values()]
            .map((r) => `${r.svname} ${r.status} chkdown=${r.chkdown}`)
            .join('; ');
          const where = new Map<string, number[]>();
          for (const v of VARIANTS) {
            const c = await Promise.all(replicas.map((x) => x.counters(`echo.${v}`)));
            // Loaded by one replica only, which answered all three requests.
            assert.deepEqual(
              c.map((x) => x.loads).sort(),
              [0, 0, 1],
              `echo.${v}: ${JSON.stringify(c)} ${checks}`,
            );
            assert.deepEqual(
              c.map((x) => x.success).sort(),
              [0, 0, 3],
              `echo.${v}: ${JSON.stringify(c)} ${checks}`,
            );
            where.set(
              v,
              c.map((x, i) => (x.loads > 0 ? i : -1)).filter((i) => i >= 0),
            );
          }
          const used = new Set([...where.values()].flat());
          t2.diagnostic(`variants per replica: ${JSON.stringify([...where])}`);
          assert.ok(used.size >= 2, 'the variants spread over the replicas');
          // Without the header (the full name in the path) the same config goes round robin: several replicas load it.
          for (let i = 0; i < 6; i++)
            assert.equal((await send(port, 'POST', '/v2/models/echo.rr/infer', false, body)).status, 200);
          await sleep(SCRAPE_WINDOW_MS + 200); // the 36 counter reads above made the next ones cached, as above
          const rr = await Promise.all(replicas.map((x) => x.counters('echo.rr')));
          const rrChecks = [...(await haproxyServers(stats, 'nereid_any')).values()]
            .map((r) => `${r.svname} ${r.status} chkdown=${r.chkdown}`)
            .join('; ');
          assert.ok(rr.filter((x) => x.loads > 0).length >= 2, `${JSON.stringify(rr)} ${rrChecks}`);
        } finally {
          lb.kill('SIGTERM');
        }
      },
    );
  },
);
