/**
 * The in-process API's per-request cost (issue 22 item 4): a bare onnxruntime-node `session.run` on
 * examples/model_repository/simple (2× INT32 [1,16]) against `NereidServer.infer()` on the same model, at
 * concurrency 1 and 8, and Nereid over HTTP at concurrency 1 (perf_analyzer when .venv has it, else a
 * keep-alive Node client) for the "in-process ≥ 5× HTTP" target.
 *
 * Several Nereid builds can be measured side by side in one process (`--builds .,../base`: each is a
 * checkout whose dist/src/index.js is imported), so an untouched baseline and a change meet the same load.
 * Every round runs each side once, in a rotating order; the table gives the median over rounds of
 * requests/s, p50 latency (c1: per-call latency; c8: per-call latency with 8 in flight), and the process's
 * CPU per request (process.cpuUsage(): main thread, onnxruntime's and workers' threads, robust to other
 * load on the machine). The bare session uses the settings Nereid gives each of simple's two default
 * instances (one intra-op thread, sequential, all graph optimisations).
 *
 * Targets: in-process infer() c1 ≥ 5× HTTP c1 requests/s; in-process p50 (c1) ≤ 2× bare p50 (c1).
 *
 * `--event-loop` adds, for every build, a second server whose `simple` runs on the event loop
 * (`execution_thread: "event_loop"`, what `backendConfig: { onnxruntime: { execution_thread: 'event_loop' } }`
 * gives every model of an embedding), measured the same way, HTTP included.
 *
 * Usage: node dist/bench/in-process.js [--builds .] [--rounds 7] [--requests 3000] [--http-seconds 4]
 *          [--no-http] [--event-loop] [--model-config-extra <pbtxt text appended to simple's config>]
 *          [--out <file.json>]
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SIMPLE = path.join(ROOT, 'examples/model_repository/simple');
const ELEMENTS = 16;

/** What the bench needs of a build's embedding API (dist/src/index.js), typed loosely across builds. */
interface TensorCtor {
  from(name: string, values: Int32Array, options: { shape: number[] }): unknown;
}
interface EmbeddedServer {
  infer(request: { model: string; inputs: unknown[] }): Promise<{ outputs: { data: Uint8Array }[] }>;
  listenHttp(options: { port: number }): Promise<{ port: number }>;
  statistics(name: string): { inference_count: number }[];
  stopListening(kind: 'http'): Promise<void>;
  close(): Promise<void>;
}
interface Build {
  readonly label: string;
  readonly server: EmbeddedServer;
  readonly inputs: unknown[];
}

interface Sample {
  readonly requestsPerSec: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly cpuUsPerRequest: number;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)];
};
const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** `total` calls of `call` with `concurrency` in flight: rate, latency percentiles, CPU per call. */
async function closedLoop(call: () => Promise<void>, total: number, concurrency: number): Promise<Sample> {
  const latencies = new Float64Array(total);
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (started < total) {
      const i = started++;
      const s = performance.now();
      await call();
      latencies[i] = performance.now() - s;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    requestsPerSec: (total * 1000) / elapsed,
    p50Us: percentile(sorted, 50) * 1000,
    p99Us: percentile(sorted, 99) * 1000,
    cpuUsPerRequest: (cpu.user + cpu.system) / total,
  };
}

function int32(values: (i: number) => number): Int32Array {
  return Int32Array.from({ length: ELEMENTS }, (_, i) => values(i));
}

async function bareSession(): Promise<() => Promise<void>> {
  const session = await ort.InferenceSession.create(path.join(SIMPLE, '1/model.onnx'), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  });
  const feeds = {
    INPUT0: new ort.Tensor(
      'int32',
      int32((i) => i),
      [1, ELEMENTS],
    ),
    INPUT1: new ort.Tensor(
      'int32',
      int32(() => 1),
      [1, ELEMENTS],
    ),
  };
  return async () => {
    const r = await session.run(feeds);
    if ((r.OUTPUT0.data as Int32Array)[3] !== 4) throw new Error('bare: wrong answer');
  };
}

const EVENT_LOOP_PARAMETER = 'parameters { key: "execution_thread" value: { string_value: "event_loop" } }';

async function startBuild(checkout: string, repo: string, suffix = ''): Promise<Build> {
  const dir = path.resolve(checkout);
  const mod = (await import(pathToFileURL(path.join(dir, 'dist/src/index.js')).href)) as {
    Nereid: { start(o: { modelRepository: string; log: boolean }): Promise<EmbeddedServer> };
    Tensor: TensorCtor;
  };
  const server = await mod.Nereid.start({ modelRepository: repo, log: false });
  const inputs = [
    mod.Tensor.from(
      'INPUT0',
      int32((i) => i),
      { shape: [1, ELEMENTS] },
    ),
    mod.Tensor.from(
      'INPUT1',
      int32(() => 1),
      { shape: [1, ELEMENTS] },
    ),
  ];
  return { label: (checkout === '.' ? 'this' : path.basename(dir)) + suffix, server, inputs };
}

function nereidCall(b: Build): () => Promise<void> {
  return async () => {
    const r = await b.server.infer({ model: 'simple', inputs: b.inputs });
    const out = r.outputs[0].data;
    if (new Int32Array(out.buffer, out.byteOffset, ELEMENTS)[3] !== 4) throw new Error('wrong answer');
  };
}

/**
 * HTTP c1 requests/s against `port`: perf_analyzer if .venv has it, else a keep-alive Node loop. The
 * server lives in this process, so perf_analyzer runs as an asynchronous child (a synchronous spawn would
 * stop the server from answering it).
 */
async function httpRate(port: number, seconds: number): Promise<{ rate: number; tool: string }> {
  const pa = path.join(ROOT, '.venv/bin/perf_analyzer');
  if (existsSync(pa)) {
    const args = [
      '-m',
      'simple',
      '-i',
      'http',
      '-u',
      `127.0.0.1:${port}`,
      '--concurrency-range',
      '1',
      '--measurement-interval',
      String(Math.round((seconds * 1000) / 3)),
      '--stability-percentage',
      '999',
      '--max-trials',
      '3',
    ];
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn(pa, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    const m = /Throughput: ([\d.]+) infer\/sec/.exec(stdout);
    if (m) return { rate: Number(m[1]), tool: 'perf_analyzer' };
    process.stderr.write(`perf_analyzer failed (${code}): ${stderr}\n`);
  }
  return { rate: await nodeHttpRate(port, seconds), tool: 'node client in this process' };
}

/** A keep-alive HTTP client in this process (it shares the CPU with the server: a lower bound). */
async function nodeHttpRate(port: number, seconds: number): Promise<number> {
  const header = Buffer.from(
    JSON.stringify({
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({
        name,
        datatype: 'INT32',
        shape: [1, ELEMENTS],
        parameters: { binary_data_size: ELEMENTS * 4 },
      })),
    }),
  );
  const body = Buffer.concat([header, Buffer.alloc(2 * ELEMENTS * 4, 1)]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/v2/models/simple/infer',
          method: 'POST',
          agent,
          headers: {
            'Content-Type': 'application/octet-stream',
            'Inference-Header-Content-Length': String(header.length),
            'Content-Length': String(body.length),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) {
    await one();
    n++;
  }
  agent.destroy();
  return (n * 1000) / (performance.now() - t0);
}

const fmt = (n: number, digits = 0): string => n.toFixed(digits);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      builds: { type: 'string', default: '.' },
      rounds: { type: 'string', default: '7' },
      requests: { type: 'string', default: '3000' },
      'http-seconds': { type: 'string', default: '4' },
      'no-http': { type: 'boolean', default: false },
      'event-loop': { type: 'boolean', default: false },
      'model-config-extra': { type: 'string', default: '' },
      out: { type: 'string' },
    },
  });
  const rounds = Number(values.rounds);
  const requests = Number(values.requests);
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-inproc-'));
  cpSync(SIMPLE, path.join(repo, 'simple'), { recursive: true });
  if (values['model-config-extra']) {
    const cfg = path.join(repo, 'simple', 'config.pbtxt');
    writeFileSync(cfg, readFileSync(cfg, 'utf8') + '\n' + values['model-config-extra'] + '\n');
  }
  const repos = [{ dir: repo, suffix: '' }];
  if (values['event-loop']) {
    const elRepo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-inproc-el-'));
    cpSync(path.join(repo, 'simple'), path.join(elRepo, 'simple'), { recursive: true });
    const cfg = path.join(elRepo, 'simple', 'config.pbtxt');
    writeFileSync(cfg, readFileSync(cfg, 'utf8') + '\n' + EVENT_LOOP_PARAMETER + '\n');
    repos.push({ dir: elRepo, suffix: ', event loop' });
  }
  const builds: Build[] = [];
  for (const r of repos) {
    for (const b of values.builds.split(',')) {
      process.stderr.write(`bench/in-process: starting ${b}${r.suffix}\n`);
      builds.push(await startBuild(b, r.dir, r.suffix));
    }
  }
  const sides: { label: string; call: () => Promise<void> }[] = [
    { label: 'bare onnxruntime', call: await bareSession() },
    ...builds.map((b) => ({ label: `infer() ${b.label}`, call: nereidCall(b) })),
  ];
  const loadBefore = os.loadavg();
  const samples = new Map<string, Sample[]>();
  try {
    for (const concurrency of [1, 8]) {
      for (const s of sides) await closedLoop(s.call, Math.min(1000, requests), concurrency); // warm-up
      for (let round = 0; round < rounds; round++) {
        process.stderr.write(`bench/in-process: c${concurrency} round ${round + 1}/${rounds}\n`);
        const order = sides.map((_, i) => sides[(i + round) % sides.length]);
        for (const s of order) {
          const key = `${s.label}|${concurrency}`;
          const list = samples.get(key) ?? [];
          list.push(await closedLoop(s.call, requests, concurrency));
          samples.set(key, list);
        }
      }
    }
    const httpRates = new Map<string, { rate: number; tool: string; cpuUsPerRequest: number }>();
    if (!values['no-http']) {
      for (const b of builds) {
        const ep = await b.server.listenHttp({ port: 0 });
        try {
          // The server's CPU per HTTP request (this process: it serves, perf_analyzer is another one).
          const count = (): number => b.server.statistics('simple')[0]?.inference_count ?? 0;
          const n0 = count();
          const cpu0 = process.cpuUsage();
          const h = await httpRate(ep.port, Number(values['http-seconds']));
          const cpu = process.cpuUsage(cpu0);
          const n = count() - n0;
          httpRates.set(b.label, { ...h, cpuUsPerRequest: n > 0 ? (cpu.user + cpu.system) / n : Number.NaN });
        } finally {
          await b.server.stopListening('http');
        }
      }
    }
    const loadAfter = os.loadavg();
    const pick = (label: string, c: number, f: (s: Sample) => number): number =>
      median((samples.get(`${label}|${c}`) ?? []).map(f));
    const lines = [
      `in-process vs bare onnxruntime on 'simple' (node ${process.version}, ${os.availableParallelism()} CPUs, ` +
        `${rounds} rounds × ${requests} requests, load ${loadBefore.map((l) => l.toFixed(2)).join(' ')} → ` +
        `${loadAfter.map((l) => l.toFixed(2)).join(' ')})`,
      '',
      '| side | c1 req/s | c1 p50 µs | c1 p99 µs | c1 CPU µs/req | c8 req/s | c8 p50 µs | c8 CPU µs/req |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    ];
    for (const s of sides) {
      lines.push(
        `| ${s.label} | ${fmt(pick(s.label, 1, (x) => x.requestsPerSec))} | ${fmt(pick(s.label, 1, (x) => x.p50Us))} | ` +
          `${fmt(pick(s.label, 1, (x) => x.p99Us))} | ${fmt(pick(s.label, 1, (x) => x.cpuUsPerRequest))} | ` +
          `${fmt(pick(s.label, 8, (x) => x.requestsPerSec))} | ${fmt(pick(s.label, 8, (x) => x.p50Us))} | ` +
          `${fmt(pick(s.label, 8, (x) => x.cpuUsPerRequest))} |`,
      );
    }
    lines.push('');
    const bareP50 = pick('bare onnxruntime', 1, (x) => x.p50Us);
    for (const b of builds) {
      const label = `infer() ${b.label}`;
      const rate = pick(label, 1, (x) => x.requestsPerSec);
      const p50 = pick(label, 1, (x) => x.p50Us);
      const h = httpRates.get(b.label);
      const cpu = pick(label, 1, (x) => x.cpuUsPerRequest);
      const vsHttp = h
        ? `, HTTP c1 ${fmt(h.rate)}/s (${h.tool}): in-process/HTTP ${fmt(rate / h.rate, 2)} (target ≥ 5); ` +
          `server CPU per request HTTP ${fmt(h.cpuUsPerRequest)} µs vs in-process ${fmt(cpu)} µs: ` +
          `${fmt(h.cpuUsPerRequest / cpu, 2)}×`
        : '';
      lines.push(`${b.label}: p50 in-process/bare ${fmt(p50 / bareP50, 2)} (target ≤ 2)${vsHttp}`);
    }
    process.stdout.write(lines.join('\n') + '\n');
    if (values.out) {
      writeFileSync(
        values.out,
        JSON.stringify(
          {
            loadBefore,
            loadAfter,
            samples: Object.fromEntries(samples),
            http: Object.fromEntries(httpRates),
          },
          null,
          2,
        ),
      );
    }
  } finally {
    for (const b of builds) await b.server.close();
    for (const r of repos) rmSync(r.dir, { recursive: true, force: true });
  }
}

await main();
