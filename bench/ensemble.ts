/**
 * Ensemble overhead benchmark: the bundled simple_ensemble (two `simple` steps chained) against the same two
 * steps called one after the other by the caller — in-process through InferenceServer (where the ensemble
 * saves nothing, so the difference is its own machinery), and over HTTP (one ensemble request against two
 * requests chained by the client). Closed loop: `concurrency` workers send back to back, alternating the
 * two sides call by call so that load from elsewhere on the machine hits both alike; the ratio reported is
 * the median over rounds of (ensemble mean latency / steps mean latency).
 *
 * Usage: node dist/bench/ensemble.js [--requests 2000] [--rounds 5] [--concurrency 1] [--out <file.json>]
 * (`requests` counts pairs: one ensemble call and one two-step call each.)
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startNereid } from '../src/compose/compose.js';
import { parseFlags } from '../src/compose/flags.js';
import { Logger } from '../src/common/logger.js';
import type { InferenceServer } from '../src/core/server.js';
import type { InferInput, InferenceRequest } from '../src/core/types.js';
import { postOnAgent } from '../test/integration/harness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'examples/model_repository');

interface Side {
  readonly name: string;
  /** One logical request (the ensemble, or both steps in turn). */
  run(): Promise<void>;
}

interface Measured {
  readonly name: string;
  readonly requests: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const int32 = (name: string, values: readonly number[]): InferInput => ({
  name,
  datatype: 'INT32',
  shape: [1, values.length],
  data: Buffer.from(new Int32Array(values).buffer),
});

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 100 - i);

/**
 * Every call carries its own AbortSignal, as the frontends' requests do (a request without one shares a
 * process-wide never-aborted signal in the core, which is not what serving looks like).
 */
function inProcessSides(server: InferenceServer): Side[] {
  const inputs = [int32('INPUT0', A), int32('INPUT1', B)];
  const ensemble = (): InferenceRequest => ({
    modelName: 'simple_ensemble',
    inputs,
    signal: new AbortController().signal,
  });
  return [
    {
      name: 'in-process: simple_ensemble',
      run: async () => {
        const r = await server.inferOnce(ensemble());
        if (r.outputs[0].data.readInt32LE(4) !== 2) throw new Error('wrong ensemble answer');
      },
    },
    {
      name: 'in-process: simple, then simple',
      run: async () => {
        const first = await server.inferOnce({
          modelName: 'simple',
          inputs,
          signal: new AbortController().signal,
        });
        const [sum, difference] = first.outputs;
        const second = await server.inferOnce({
          modelName: 'simple',
          inputs: [
            { name: 'INPUT0', datatype: sum.datatype, shape: sum.shape, data: sum.data },
            { name: 'INPUT1', datatype: difference.datatype, shape: difference.shape, data: difference.data },
          ],
          signal: new AbortController().signal,
        });
        if (second.outputs[0].data.readInt32LE(4) !== 2) throw new Error('wrong chained answer');
      },
    },
  ];
}

/** POST that only accepts 200: the benchmark's requests are all valid. */
async function post(agent: http.Agent, url: string, body: string): Promise<string> {
  const res = await postOnAgent(agent, url, body);
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.body}`);
  return res.body;
}

interface JsonAnswer {
  outputs: { name: string; data: number[] }[];
}

function httpSides(base: string, agent: http.Agent): Side[] {
  const body = (x: readonly number[], y: readonly number[]): string =>
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: x },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: y },
      ],
    });
  const first = body(A, B);
  return [
    {
      name: 'HTTP: simple_ensemble',
      run: async () => {
        const r = JSON.parse(
          await post(agent, `${base}/v2/models/simple_ensemble/infer`, first),
        ) as JsonAnswer;
        if (r.outputs[0].data[1] !== 2) throw new Error('wrong ensemble answer');
      },
    },
    {
      name: 'HTTP: simple, then simple (client-chained)',
      run: async () => {
        const r1 = JSON.parse(await post(agent, `${base}/v2/models/simple/infer`, first)) as JsonAnswer;
        const [sum, difference] = r1.outputs;
        const r2 = JSON.parse(
          await post(agent, `${base}/v2/models/simple/infer`, body(sum.data, difference.data)),
        ) as JsonAnswer;
        if (r2.outputs[0].data[1] !== 2) throw new Error('wrong chained answer');
      },
    },
  ];
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function summarize(name: string, ms: number[]): Measured {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    name,
    requests: ms.length,
    meanMs: ms.reduce((a, b) => a + b, 0) / ms.length,
    p50Ms: quantile(sorted, 0.5),
    p99Ms: quantile(sorted, 0.99),
  };
}

/**
 * One round: every worker alternates the two sides call by call (flipping which goes first), so that
 * load from elsewhere on the machine lands on both alike; each call is timed on its own.
 */
async function round(pair: readonly Side[], requests: number, concurrency: number): Promise<Measured[]> {
  const times: number[][] = pair.map(() => []);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        for (let k = 0; k < pair.length; k++) {
          const side = (i + k) % pair.length;
          const t0 = process.hrtime.bigint();
          await pair[side].run();
          times[side].push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }
    }),
  );
  return pair.map((side, k) => summarize(side.name, times[k]));
}

async function compare(
  pair: readonly Side[],
  requests: number,
  rounds: number,
  concurrency: number,
): Promise<{ ensemble: Measured[]; steps: Measured[]; ratio: number }> {
  await round(pair, Math.min(500, requests), concurrency); // warm-up: JIT, sockets, ORT sessions
  const ensemble: Measured[] = [];
  const steps: Measured[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const [e, st] = await round(pair, requests, concurrency);
    ensemble.push(e);
    steps.push(st);
    ratios.push(e.meanMs / st.meanMs);
  }
  return { ensemble, steps, ratio: median(ratios) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '5' },
      concurrency: { type: 'string', default: '1' },
      out: { type: 'string' },
    },
  });
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  const concurrency = Number(values.concurrency);
  for (const [k, v] of [
    ['requests', requests],
    ['rounds', rounds],
    ['concurrency', concurrency],
  ] as const) {
    if (!Number.isInteger(v) || v <= 0) throw new Error(`--${k} must be a positive integer`);
  }

  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-ensemble-'));
  for (const m of ['simple', 'simple_ensemble']) {
    cpSync(path.join(EXAMPLES, m), path.join(repo, m), { recursive: true });
  }
  const { options } = parseFlags([
    `--model-repository=${repo}`,
    '--http-port=0',
    '--http-address=127.0.0.1',
    '--allow-grpc=false',
    '--allow-metrics=false',
  ]);
  const running = await startNereid(options, new Logger({}, () => undefined));
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    const base = `http://127.0.0.1:${running.http!.port}`;
    const results = {
      inProcess: await compare(inProcessSides(running.server), requests, rounds, concurrency),
      http: await compare(httpSides(base, agent), requests, rounds, concurrency),
    };
    const load = os.loadavg()[0];
    const lines = [
      `ensemble overhead: ${requests} request pairs × ${rounds} rounds, concurrency ${concurrency}, ${os.cpus().length} CPUs, load average ${load.toFixed(2)}`,
      '',
      '| path | mean latency ms (median round) | p50 ms | p99 ms | ensemble / steps, mean latency (median of rounds) |',
      '| --- | --- | --- | --- | --- |',
    ];
    for (const r of [results.inProcess, results.http]) {
      for (const [list, showRatio] of [
        [r.ensemble, true],
        [r.steps, false],
      ] as const) {
        const ratio = showRatio ? `${r.ratio.toFixed(3)} (${((r.ratio - 1) * 100).toFixed(1)}%)` : '';
        lines.push(
          `| ${list[0].name} | ${median(list.map((m) => m.meanMs)).toFixed(3)} | ${median(list.map((m) => m.p50Ms)).toFixed(3)} | ${median(list.map((m) => m.p99Ms)).toFixed(3)} | ${ratio} |`,
        );
      }
    }
    console.log(lines.join('\n'));
    if (values.out) {
      writeFileSync(values.out, JSON.stringify({ requests, rounds, concurrency, load, ...results }, null, 2));
    }
  } finally {
    agent.destroy();
    await running.stop();
    rmSync(repo, { recursive: true, force: true });
  }
}

await main();
