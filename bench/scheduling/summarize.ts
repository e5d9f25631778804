/**
 * Reads one bench/scheduling/run.sh results folder and prints the dynamic-batching table: per model and
 * concurrency, served inferences/s, the batch sizes the server formed (from /v2/models/<m>/stats before
 * and after the point), bare onnxruntime-node at the formed batch size, the ratios, p99 latency against
 * max_queue_delay + one batch compute + 20%, and the targets. Writes <results>/summary.md.
 *
 * Usage: node dist/bench/scheduling/summarize.js <results dir>
 *        node dist/bench/scheduling/summarize.js <results dir> --formed <densenet|mlp>
 *          (prints the batch sizes formed at any point, comma-separated, for the bare runs)
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

interface BareRecord {
  readonly batch: number;
  readonly imagesPerSec: number;
  readonly meanLatencyMs: number;
}

interface BatchStat {
  readonly batch_size: number;
  readonly compute_infer: { readonly count: number; readonly ns: number };
}

interface Stats {
  readonly inference_count: number;
  readonly execution_count: number;
  readonly batch_stats: readonly BatchStat[];
}

/** default: Triton's default scheduler; dynamic: dynamic_batching; early: dynamic_batching + early dispatch. */
type Scheduler = 'default' | 'dynamic' | 'early';

const SCHEDULER_LABEL: Readonly<Record<Scheduler, string>> = {
  default: 'default',
  dynamic: 'dynamic',
  early: 'dynamic, early dispatch',
};

interface Point {
  readonly family: string;
  readonly scheduler: Scheduler;
  readonly concurrency: number;
  readonly perSec: number;
  readonly p99Ms: number;
  readonly p50Ms: number;
  /** batch size → executions during the point */
  readonly formed: Map<number, number>;
  readonly mode: string;
}

const POINT = /^served-(\w+?)_(unbatched|dynamic|early)-c(\d+)\.csv$/;
const TARGET_BARE_RATIO = 0.85;
const TARGET_MLP_SPEEDUP = 2;
const TARGET_CONCURRENCY = 32;

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

function statsOf(file: string): Stats {
  const body = readJson<{ model_stats: Stats[] }>(file);
  return body.model_stats[0];
}

/** Executions per batch size between two stats snapshots. */
function formedBetween(before: Stats, after: Stats): Map<number, number> {
  const counts = new Map<number, number>();
  for (const b of after.batch_stats) counts.set(b.batch_size, b.compute_infer.count);
  for (const b of before.batch_stats)
    counts.set(b.batch_size, (counts.get(b.batch_size) ?? 0) - b.compute_infer.count);
  for (const [k, v] of counts) if (v <= 0) counts.delete(k);
  return counts;
}

/** The batch size that carried the most rows. */
function dominant(formed: ReadonlyMap<number, number>): number | undefined {
  let best: number | undefined;
  let bestRows = -1;
  for (const [size, count] of formed) {
    if (size * count > bestRows) {
      best = size;
      bestRows = size * count;
    }
  }
  return best;
}

function readCsvRow(file: string): Record<string, string> {
  const [header, row] = readFileSync(file, 'utf8').trim().split(/\r?\n/);
  if (!header || !row) throw new Error(`${file}: no measurement row`);
  const keys = header.split(',');
  const values = row.split(',');
  return Object.fromEntries(keys.map((k, i) => [k, values[i] ?? '']));
}

function readPoints(results: string): Point[] {
  const points: Point[] = [];
  for (const name of readdirSync(results).sort()) {
    const m = POINT.exec(name);
    if (!m) continue;
    const [, family, kind, c] = m;
    const base = path.join(results, name.replace(/\.csv$/, ''));
    const row = readCsvRow(path.join(results, name));
    const before = statsOf(`${base}.stats-before.json`);
    const after = statsOf(`${base}.stats-after.json`);
    points.push({
      family,
      scheduler: kind === 'unbatched' ? 'default' : (kind as Scheduler),
      concurrency: Number(c),
      perSec: Number(row['Inferences/Second']),
      p50Ms: Number(row['p50 latency']) / 1000,
      p99Ms: Number(row['p99 latency']) / 1000,
      formed: formedBetween(before, after),
      mode: existsSync(`${base}.mode`) ? readFileSync(`${base}.mode`, 'utf8').trim() : '',
    });
  }
  return points;
}

function readBare(results: string, family: string): Map<number, BareRecord> {
  const best = new Map<number, BareRecord>();
  for (const suffix of ['', '-after']) {
    const file = path.join(results, `bare-${family}${suffix}.json`);
    if (!existsSync(file)) continue;
    for (const r of readJson<BareRecord[]>(file)) {
      const prev = best.get(r.batch);
      if (!prev || r.imagesPerSec > prev.imagesPerSec) best.set(r.batch, r);
    }
  }
  return best;
}

/** max_batch_size of the family's served models (from the repository run.sh wrote). */
function maxBatchSize(results: string, family: string | undefined): number | undefined {
  const config = path.join(results, 'repo', `${family}_dynamic`, 'config.pbtxt');
  if (!existsSync(config)) return undefined;
  const m = /max_batch_size:\s*(\d+)/.exec(readFileSync(config, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

/** The bare echo's p99 (ms) for this family's request at this concurrency, if run.sh measured it. */
function echoP99Ms(results: string, family: string, concurrency: number): number | undefined {
  const file = path.join(results, `echo-${family}-c${concurrency}.csv`);
  if (!existsSync(file)) return undefined;
  const p99 = Number(readCsvRow(file)['p99 latency']) / 1000;
  return Number.isFinite(p99) && p99 > 0 ? p99 : undefined;
}

/**
 * What explains a missed p99 bound. Out of reach, when that can be shown:
 * - Little's law: `c` requests always in flight, served at most at the best bare rate, spend on average at
 *   least c / rate in the server. Above the loosest bound any measured batch size allows (run.sh measures
 *   the largest batch the model takes): no scheduler can meet it; above the bound at the size formed
 *   only: not with batches of that size;
 * Besides, as context and not as proof (Nereid's own gRPC server, on node:http2, can beat the
 * @grpc/grpc-js echo's tail), what a bare echo server's p99 for the same request is at this concurrency,
 * and the number of batches a round of `c` requests needs (each waits for those ahead of it).
 */
function whyMissed(
  p: Point,
  bound: number,
  size: number | undefined,
  best: {
    readonly rate: number;
    readonly rateBatch: number;
    readonly bound: number;
    readonly boundBatch: number;
  },
  echoP99: number | undefined,
): string {
  const reasons: string[] = [];
  const littleMs = best.rate > 0 ? (1000 * p.concurrency) / best.rate : undefined;
  if (littleMs !== undefined && littleMs > bound) {
    const law =
      `${p.concurrency} requests in flight at ≤ ${fmt(best.rate)} inf/s (bare, batch ${best.rateBatch}) ` +
      `spend ≥ ${fmt(littleMs)} ms each on average (Little's law)`;
    reasons.push(
      littleMs > best.bound
        ? `unattainable: ${law}`
        : `not with batches of ${size ?? '?'}: ${law}; batches of ${best.boundBatch} would allow ${fmt(best.bound)} ms`,
    );
  }
  if (reasons.length === 0) {
    const batchesAhead = Math.ceil(p.concurrency / Math.max(1, size ?? 1));
    if (batchesAhead > 1) reasons.push(`${batchesAhead} batches per round at this concurrency`);
  }
  if (echoP99 !== undefined) reasons.push(`a bare echo's own p99 for this request: ${fmt(echoP99)} ms`);
  return reasons.length === 0 ? '' : ` (${reasons.join('; ')})`;
}

const fmt = (n: number | undefined, digits = 1): string =>
  n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);

function histogram(formed: ReadonlyMap<number, number>): string {
  return [...formed]
    .sort((a, b) => a[0] - b[0])
    .map(([size, count]) => `${size}×${count}`)
    .join(' ');
}

function summarize(results: string): string {
  const meta = readJson<{
    delayUs: number;
    seconds: number;
    cpus: number;
    loadavg: number;
    commit: string;
    protocol?: string;
  }>(path.join(results, 'meta.json'));
  const points = readPoints(results);
  const delayMs = meta.delayUs / 1000;
  const lines = [
    `Dynamic batching, max_queue_delay ${meta.delayUs} µs, perf_analyzer over ${meta.protocol ?? 'http'}, ` +
      `${meta.seconds} s per point, ${meta.cpus} CPUs, ` +
      `load average ${meta.loadavg} before the run, commit ${meta.commit}.`,
    '',
    '| model | scheduler | concurrency | served inf/s | batches formed (size×count) | bare inf/s at that size | served/bare | p50 ms | p99 ms | p99 bound ms | measurement |',
    '|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|',
  ];
  const verdicts: string[] = [];
  for (const family of [...new Set(points.map((p) => p.family))]) {
    const bare = readBare(results, family);
    // The best bare rate at any batch size, and the loosest p99 bound any batch size measured allows.
    const records = [...bare.values()];
    const fastest = [...records].sort((a, b) => b.imagesPerSec - a.imagesPerSec)[0];
    const slowest = [...records].sort((a, b) => b.meanLatencyMs - a.meanLatencyMs)[0];
    const best = {
      rate: fastest?.imagesPerSec ?? 0,
      rateBatch: fastest?.batch ?? 0,
      bound: slowest ? 1.2 * (delayMs + slowest.meanLatencyMs) : 0,
      boundBatch: slowest?.batch ?? 0,
    };
    const of = (scheduler: Scheduler, c: number): Point | undefined =>
      points.find((p) => p.family === family && p.scheduler === scheduler && p.concurrency === c);
    for (const p of points.filter((x) => x.family === family)) {
      const size = dominant(p.formed);
      const b = size === undefined ? undefined : bare.get(size);
      const ratio = b ? p.perSec / b.imagesPerSec : undefined;
      // One batch: the queue delay, then one compute of the formed size; +20% slack.
      const batched = p.scheduler !== 'default';
      const bound = batched && b ? 1.2 * (delayMs + b.meanLatencyMs) : undefined;
      lines.push(
        `| ${family} | ${SCHEDULER_LABEL[p.scheduler]} | ${p.concurrency} | ${fmt(p.perSec)} | ` +
          `${histogram(p.formed)} | ${fmt(b?.imagesPerSec)} | ${fmt(ratio, 2)} | ${fmt(p.p50Ms)} | ` +
          `${fmt(p.p99Ms)} | ${fmt(bound)} | ${p.mode} |`,
      );
      if (batched && bound !== undefined) {
        const met = p.p99Ms <= bound;
        const note = met ? '' : whyMissed(p, bound, size, best, echoP99Ms(results, family, p.concurrency));
        verdicts.push(
          `p99 ${family} ${SCHEDULER_LABEL[p.scheduler]} c=${p.concurrency}: ${fmt(p.p99Ms)} ms vs bound ${fmt(bound)} ms: ` +
            `${met ? 'met' : 'NOT met'}${note}`,
        );
      }
    }
    const plain = of('default', TARGET_CONCURRENCY);
    const targets: string[] = [];
    for (const scheduler of ['dynamic', 'early'] as const) {
      const dyn = of(scheduler, TARGET_CONCURRENCY);
      const label = SCHEDULER_LABEL[scheduler];
      if (family === 'densenet' && dyn) {
        const size = dominant(dyn.formed);
        const b = size === undefined ? undefined : bare.get(size);
        const ratio = b ? dyn.perSec / b.imagesPerSec : undefined;
        targets.push(
          `densenet, ${label} at concurrency ${TARGET_CONCURRENCY}: ${fmt(ratio, 2)} of bare at batch ${size ?? '?'} ` +
            `(target ≥ ${TARGET_BARE_RATIO}): ${ratio !== undefined && ratio >= TARGET_BARE_RATIO ? 'met' : 'NOT met'}`,
        );
      }
      if (family === 'mlp' && dyn && plain) {
        const speedup = dyn.perSec / plain.perSec;
        targets.push(
          `mlp, ${label} vs default scheduler at concurrency ${TARGET_CONCURRENCY}: ${fmt(speedup, 2)}× ` +
            `(target ≥ ${TARGET_MLP_SPEEDUP}×): ${speedup >= TARGET_MLP_SPEEDUP ? 'met' : 'NOT met'}`,
        );
      }
    }
    verdicts.unshift(...targets);
  }
  lines.push('', ...verdicts.map((v) => `- ${v}`));
  if (meta.loadavg > 0.25 * meta.cpus) {
    lines.push(
      '',
      `Warning: the load average was ${meta.loadavg} on ${meta.cpus} CPUs before the run; other work skews these numbers.`,
    );
  }
  return lines.join('\n') + '\n';
}

function main(argv: readonly string[]): void {
  const [results, flag, family] = argv;
  if (!results) throw new Error('usage: summarize.js <results dir> [--formed <family>]');
  if (flag === '--formed') {
    // Batch 1, the largest batch the model takes (what a full batch would cost), and every formed size.
    const sizes = new Set<number>([1]);
    const largest = maxBatchSize(results, family);
    if (largest !== undefined) sizes.add(largest);
    for (const p of readPoints(results)) {
      const size = p.family === family ? dominant(p.formed) : undefined;
      if (size !== undefined) sizes.add(size);
    }
    process.stdout.write([...sizes].sort((a, b) => a - b).join(',') + '\n');
    return;
  }
  const table = summarize(results);
  writeFileSync(path.join(results, 'summary.md'), table);
  process.stdout.write(table);
}

main(process.argv.slice(2));
