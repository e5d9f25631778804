/**
 * Runs one overload scenario against a running Nereid (bench/overload/run.sh starts it): the load in a
 * child process (load.js or bigjson.js), the health prober in another (probe.js), and the server's RSS
 * read from /proc every second (reported every 10 s). Writes <out>.json and prints a one-line summary.
 *
 * Scenarios (issue 23):
 * - capacity: "2x capacity with a queue limit": measures what the queue-limited model accepts per second
 *   with 16 closed-loop clients, then sends twice that, open loop, on up to 256 connections;
 * - connections: 2,000 connections opened at once, each sending back to back (fast 503s);
 * - soak: 2x capacity open loop for --seconds with 10 % of requests closing their connection (new
 *   connections all along), for memory that must stay flat;
 * - json: `--json-count` requests of `--json-mb` MB JSON tensors at once (16 x 66 MB in the issue).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));

const { values } = parseArgs({
  options: {
    scenario: { type: 'string' },
    port: { type: 'string' },
    'health-port': { type: 'string' },
    pid: { type: 'string' },
    seconds: { type: 'string', default: '60' },
    out: { type: 'string' },
    'queued-model': { type: 'string', default: 'queued' },
    'big-model': { type: 'string', default: 'big' },
    'json-count': { type: 'string', default: '16' },
    'json-mb': { type: 'string', default: '66' },
  },
});
const scenario = values.scenario!;
const port = values.port!;
const pid = Number(values.pid);
const seconds = Number(values.seconds);

/** Runs a child script, resolves with the JSON of its last output line. */
function child(script: string, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(here, script), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last) as Record<string, unknown>);
      } catch {
        reject(new Error(`${script} exited with ${code} and printed: ${out.slice(-500)}`));
      }
    });
  });
}

function rssMb(): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? Number.NaN : Math.round(Number(m[1]) / 1024);
  } catch {
    return Number.NaN;
  }
}

function probe(forSeconds: number): Promise<Record<string, unknown>> {
  const args = ['--port', port, '--seconds', String(forSeconds)];
  if (values['health-port'] !== undefined) args.push('--health-port', values['health-port']);
  return child('probe.js', args);
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const loadBefore = loadavg()[0];
  const rss: number[] = [];
  const every10s: { t: number; rssMb: number }[] = [];
  const t0 = performance.now();
  const sampler = setInterval(() => {
    const v = rssMb();
    rss.push(v);
    if (rss.length % 10 === 0) every10s.push({ t: Math.round((performance.now() - t0) / 1000), rssMb: v });
  }, 1000);
  every10s.push({ t: 0, rssMb: rssMb() });

  const result: Record<string, unknown> = { scenario, started, loadBefore };
  const queued = values['queued-model'];
  if (scenario === 'capacity' || scenario === 'soak') {
    const measured = await child('load.js', [
      '--port',
      port,
      '--model',
      queued,
      '--mode',
      'closed',
      '--connections',
      '16',
      '--seconds',
      '5',
    ]);
    const capacity = Number(measured.acceptedPerSecond);
    result.capacityPerSecond = capacity;
    const load = child('load.js', [
      '--port',
      port,
      '--model',
      queued,
      '--mode',
      'open',
      '--rate',
      String(2 * capacity),
      '--connections',
      '256',
      '--seconds',
      String(seconds),
      '--churn',
      scenario === 'soak' ? '0.1' : '0',
    ]);
    [result.load, result.health] = await Promise.all([load, probe(seconds)]);
    result.offeredPerSecond = 2 * capacity;
  } else if (scenario === 'connections') {
    const load = child('load.js', [
      '--port',
      port,
      '--model',
      queued,
      '--mode',
      'closed',
      '--connections',
      '2000',
      '--seconds',
      String(seconds),
    ]);
    [result.load, result.health] = await Promise.all([load, probe(seconds)]);
  } else if (scenario === 'json') {
    const load = child('bigjson.js', [
      '--port',
      port,
      '--model',
      values['big-model'],
      '--count',
      values['json-count'],
      '--mb',
      values['json-mb'],
    ]);
    // Probe while the bodies are sent and parsed: the prober runs as long as the load, at most `seconds`.
    const health = probe(seconds);
    [result.load, result.health] = await Promise.all([load, health]);
  } else {
    throw new Error(`unknown scenario '${scenario}'`);
  }
  clearInterval(sampler);
  every10s.push({ t: Math.round((performance.now() - t0) / 1000), rssMb: rssMb() });
  result.rss = {
    every10s,
    peakMb: Math.max(...rss.filter((x) => Number.isFinite(x))),
    ...flatness(every10s.map((x) => x.rssMb)),
  };
  result.loadAfter = loadavg()[0];
  writeFileSync(values.out!, JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(oneLine(result) + '\n');
}

/**
 * RSS flatness after warm-up: the samples from the second third of the run on, split in two halves; the
 * drift is the change of their means (percent). Means over halves, because V8 lets the old generation
 * grow between major collections: RSS is a sawtooth of tens of MB whatever the trend, and a leak shows as
 * drift. A soak passes at ±10 %.
 */
function flatness(samples: number[]): {
  steadyMinMb?: number;
  steadyMaxMb?: number;
  steadyDriftPct?: number;
} {
  const steady = samples.slice(Math.floor(samples.length / 3)).filter((x) => Number.isFinite(x));
  if (steady.length < 4) return {};
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const half = Math.floor(steady.length / 2);
  const first = mean(steady.slice(0, half));
  const second = mean(steady.slice(half));
  return {
    steadyMinMb: Math.min(...steady),
    steadyMaxMb: Math.max(...steady),
    steadyDriftPct: Math.round(((second - first) / first) * 1000) / 10,
  };
}

function oneLine(r: Record<string, unknown>): string {
  const load = r.load as Record<string, unknown>;
  const health = r.health as Record<string, Record<string, unknown>>;
  const h = (k: string): string =>
    health[k] === undefined
      ? '-'
      : `p99 ${String(health[k].p99)} ms (n ${String(health[k].n)}, failed ${String(health[k].failed)})`;
  const rss = r.rss as Record<string, unknown>;
  return (
    `${String(r.scenario)}: accepted ${String(load.ok)}, 503 ${String(load.refused503)}, lost ${String(load.lost)}; ` +
    `accepted p99 ${String((load.acceptedMs as Record<string, unknown>).p99)} ms; health fresh ${h('fresh')}, ` +
    `kept ${h('kept')}, health port ${h('healthPort')}; RSS peak ${String(rss.peakMb)} MB`
  );
}

void main();
