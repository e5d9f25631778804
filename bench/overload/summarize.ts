/**
 * Prints the overload benchmark's table (markdown) from a results folder of drive.ts outputs, with the
 * goals of issue 23: no accepted request lost, health p99 < 100 ms, RSS flat within ±10 % in the soak
 * (drift of the mean between the two halves after warm-up; see drive.ts).
 *
 * Usage: node dist/bench/overload/summarize.js bench/results/overload-<time>
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

type Obj = Record<string, unknown>;
const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: summarize.js <results folder>');
const meta = JSON.parse(readFileSync(path.join(dir, 'meta.json'), 'utf8')) as Obj;

const n = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(v) : '-');
const lines: string[] = [
  `Commit ${String(meta.commit)}, ${String(meta.node)}, ${String(meta.cpus)} CPUs, somaxconn ${String(meta.somaxconn)}, ` +
    `load average at start ${String(meta.loadavg)}. Scenarios ${String(meta.seconds)} s, soak ${String(meta.soakSeconds)} s, ` +
    `JSON ${String(meta.jsonCount)} x ${String(meta.jsonMb)} MB.`,
  '',
  '| scenario | load avg | accepted | 503 | lost | accepted p99 ms | health p99 ms: new conn / kept-alive / health port | health failed | RSS MB: start → end (peak) | RSS drift % (steady min-max MB) |',
  '|---|---:|---:|---:|---:|---:|---|---:|---|---:|',
];
const goals: string[] = [];
for (const s of ['capacity', 'connections', 'soak', 'json']) {
  const file = path.join(dir, `${s}.json`);
  if (!existsSync(file)) continue;
  const r = JSON.parse(readFileSync(file, 'utf8')) as Obj;
  const load = r.load as Obj;
  const health = r.health as Record<string, Obj>;
  const rss = r.rss as Obj;
  const samples = rss.every10s as { rssMb: number }[];
  const series = ['fresh', 'kept', 'healthPort'].map((k) => health[k]);
  const p99 = series.map((x) => (x === undefined ? '-' : n(x.p99))).join(' / ');
  const failed = series.reduce((a, x) => a + (x === undefined ? 0 : Number(x.failed)), 0);
  const label =
    s === 'capacity' || s === 'soak'
      ? `${s} (2 × ${n(r.capacityPerSecond)}/s)`
      : s === 'json'
        ? `json (${n(load.count)} × ${Math.round(Number(load.bodyBytes) / 1e6)} MB)`
        : 'connections (2,000)';
  lines.push(
    `| ${label} | ${n(r.loadBefore)} → ${n(r.loadAfter)} | ${n(load.ok)} | ${n(load.refused503)} | ${n(load.lost)} | ` +
      `${n((load.acceptedMs as Obj).p99)} | ${p99} | ${failed} | ${n(samples[0]?.rssMb)} → ${n(samples[samples.length - 1]?.rssMb)} (${n(rss.peakMb)}) | ` +
      `${n(rss.steadyDriftPct)} (${n(rss.steadyMinMb)}-${n(rss.steadyMaxMb)}) |`,
  );
  if (Number(load.lost) !== 0) goals.push(`${s}: ${n(load.lost)} requests lost`);
  for (const [k, x] of [
    ['new connection', series[0]],
    ['kept-alive', series[1]],
    ['health port', series[2]],
  ] as const) {
    if (x !== undefined && !(Number(x.p99) < 100)) goals.push(`${s}: health p99 on a ${k} ${n(x.p99)} ms`);
  }
  if (s === 'soak' && !(Math.abs(Number(rss.steadyDriftPct)) <= 10)) {
    goals.push(`soak: RSS drifted ${n(rss.steadyDriftPct)} % after warm-up`);
  }
}
lines.push('', goals.length === 0 ? 'Goals met.' : `Goals missed: ${goals.join('; ')}.`);
process.stdout.write(lines.join('\n') + '\n');
