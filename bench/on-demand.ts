/**
 * On-demand mode under a Zipf request stream (issue 30): a repository of many small models (ONNX
 * identities and Python echoes, test/integration/many-models.ts), --max-loaded-models far below the
 * model count, concurrent HTTP clients each sending one request at a time to a model drawn from Zipf(s).
 * Prints the hit rate (the model was READY when the request was sent), p50/p99 latency of hits and of
 * cold requests, loads and evictions per minute, non-200 answers, and peak RSS (server + stubs); then the
 * cold-start latency of one model per backend (unloaded, then one request), median of a few runs.
 *
 * Usage: node dist/bench/on-demand.js [--onnx 40] [--python 20] [--max-loaded 8] [--requests 600]
 *        [--clients 8] [--zipf 1.1] [--cold-runs 5]
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { residentBytesOf } from '../src/core/model/memory.js';
import { post, removeRepository, ROOT, startServer } from '../test/integration/harness.js';
import { inferBody, makeManyModels, rankOrder, zipfSampler } from '../test/integration/many-models.js';
import { pythonFlags } from '../test/integration/python-support.js';

const { values } = parseArgs({
  options: {
    onnx: { type: 'string', default: '40' },
    python: { type: 'string', default: '20' },
    'max-loaded': { type: 'string', default: '8' },
    requests: { type: 'string', default: '600' },
    clients: { type: 'string', default: '8' },
    zipf: { type: 'string', default: '1.1' },
    'cold-runs': { type: 'string', default: '5' },
  },
});
const N_ONNX = Number(values.onnx);
const N_PY = Number(values.python);
const MAX = Number(values['max-loaded']);
const TOTAL = Number(values.requests);
const CLIENTS = Number(values.clients);
const S = Number(values.zipf);
const COLD_RUNS = Number(values['cold-runs']);

/** RSS of this process and every child process (the stubs), in bytes. */
function treeRss(): number {
  let total = residentBytesOf('self') ?? 0;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) total += residentBytesOf(Number(e)) ?? 0;
    } catch {
      // gone
    }
  }
  return total;
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number): string => (Number.isNaN(x) ? '-' : `${x.toFixed(1)} ms`);

/** A JavaScript identity model beside the stream's models, for the cold start per backend (never in the stream). */
const JS_COLD = 'js_cold';
function addJavaScriptModel(repo: string): void {
  const dir = path.join(repo, JS_COLD);
  cpSync(path.join(ROOT, 'test/fixtures/javascript/identity_js'), dir, { recursive: true });
  const config = path.join(dir, 'config.pbtxt');
  writeFileSync(config, readFileSync(config, 'utf8').replace('name: "identity_js"', `name: "${JS_COLD}"`));
}
const jsBody = JSON.stringify({
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
});

async function main(): Promise<void> {
  const many = makeManyModels(N_ONNX, N_PY);
  addJavaScriptModel(many.repo);
  const s = await startServer([
    `--model-repository=${many.repo}`,
    '--model-control-mode=on-demand',
    `--max-loaded-models=${MAX}`,
    '--model-load-wait-secs=300',
    ...pythonFlags(`nereid_bod_${process.pid}_`),
  ]);
  try {
    const order = rankOrder(many.names, 11);
    const pick = zipfSampler(order.length, S, 42);
    const hits: number[] = [];
    const colds: number[] = [];
    const coldBy = { onnx: [] as number[], python: [] as number[] };
    let bad = 0;
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, treeRss());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < TOTAL) {
          next++;
          const name = order[pick()];
          const warm = s.running.server.isModelReady(name);
          const start = performance.now();
          const r = await post(`${s.url}/v2/models/${name}/infer`, inferBody(next));
          const took = performance.now() - start;
          if (r.status !== 200) bad++;
          if (warm) hits.push(took);
          else {
            colds.push(took);
            coldBy[many.backendOf.get(name)!].push(took);
          }
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    sampling = false;
    await sampler;
    const st = s.running.server.onDemandStatus()!;
    const loads = st.models.reduce((a, m) => a + m.loads, 0);
    const evictions = st.models.reduce((a, m) => a + m.evictions, 0);
    console.log(
      `on-demand Zipf stream: ${N_ONNX} ONNX + ${N_PY} Python models, --max-loaded-models=${MAX}, ${CLIENTS} clients, Zipf s=${S}, ${TOTAL} requests in ${seconds.toFixed(1)} s`,
    );
    console.log(`  non-200 answers      ${bad}`);
    console.log(
      `  hit rate             ${((100 * hits.length) / TOTAL).toFixed(1)} % (${hits.length} hits, ${colds.length} cold)`,
    );
    console.log(`  hits   p50 / p99     ${ms(pct(hits, 50))} / ${ms(pct(hits, 99))}`);
    console.log(
      `  cold   p50 / p99     ${ms(pct(colds, 50))} / ${ms(pct(colds, 99))}  (waited for a load, or for another request's load)`,
    );
    console.log(
      `  cold ONNX p50        ${ms(pct(coldBy.onnx, 50))}   cold Python p50 ${ms(pct(coldBy.python, 50))}`,
    );
    console.log(
      `  loads / minute       ${((loads / seconds) * 60).toFixed(0)} (${loads} loads, ${evictions} evictions)`,
    );
    console.log(
      `  peak RSS             ${(peak / 2 ** 20).toFixed(0)} MiB (server + stubs, sampled every 100 ms)`,
    );

    // Cold start per backend: unload, then time one request (its wait includes the eviction of another).
    for (const backend of ['onnx', 'python', 'javascript'] as const) {
      const name =
        backend === 'javascript' ? JS_COLD : many.names.find((n) => many.backendOf.get(n) === backend)!;
      const body = backend === 'javascript' ? jsBody : inferBody(1);
      const times: number[] = [];
      for (let i = 0; i < COLD_RUNS; i++) {
        await post(`${s.url}/v2/repository/models/${name}/unload`, '{}');
        const start = performance.now();
        const r = await post(`${s.url}/v2/models/${name}/infer`, body);
        times.push(performance.now() - start);
        if (r.status !== 200) bad++;
      }
      console.log(
        `  cold start ${backend.padEnd(10)} median of ${COLD_RUNS}: ${ms(pct(times, 50))} (min ${ms(Math.min(...times))})`,
      );
    }
  } finally {
    await s.stop();
    removeRepository(many.repo);
  }
}

await main();
