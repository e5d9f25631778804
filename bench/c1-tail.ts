/**
 * Where a concurrency-1 request's time goes, tail included (bench/c1-tail.sh). Reads a Triton-mode trace
 * file of a run with every request traced (`--trace-config rate=1`, level TIMESTAMPS) and, optionally, the
 * GC log of bench/c1-tail-gc.ts; splits each request's cycle (its arrival to the next request's arrival:
 * what a closed-loop client at concurrency 1 sees, plus its own turn) into
 *
 *   pre        arrival → COMPUTE_START: the frontend's read and decode, the core, the queue
 *   to_stub    COMPUTE_START → the stub's execute starts: EXECUTE encoded and written, the stub woken, read
 *   model      the stub's execute (its own clock stamps, clamped to what the host saw)
 *   from_stub  → COMPUTE_END: EXECUTE_DONE written, the host woken, read, the outputs
 *   post       COMPUTE_END → the response written (HTTP_SEND_END / GRPC_SEND_END)
 *   gap        → the next request's arrival: the response on the wire, the client's turn, its next request
 *
 * and prints each part's percentiles, the parts of the slowest 1 % of cycles, which part grew most in
 * each of those, and how many of them ran a garbage collection. The first `skip` cycles (default: a tenth)
 * are left out as warm-up. Usage:
 *
 *   node dist/bench/c1-tail.js <trace.json> [gc.log] [skip]
 */
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const PARTS = ['pre', 'to_stub', 'model', 'from_stub', 'post', 'gap'] as const;
export type Part = (typeof PARTS)[number];

/** One request's cycle, in µs per part, and where it began and ended (ns, the trace's clock). */
export interface Cycle {
  readonly parts: Record<Part, number>;
  readonly total: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
}

/** One collection from the GC log: start (ns, hrtime clock), duration (ns), V8's kind. */
export interface Collection {
  readonly startNs: bigint;
  readonly durationNs: number;
  readonly kind: number;
}

interface TraceEvent {
  readonly id?: number;
  readonly timestamps?: readonly { readonly name: string; readonly ns: number | string }[];
}

/** Each request's first timestamp of each name, by trace id, in id order. */
export function requestTimestamps(events: readonly TraceEvent[]): Map<number, Map<string, bigint>> {
  const byId = new Map<number, Map<string, bigint>>();
  for (const e of events) {
    if (e.id === undefined || e.timestamps === undefined) continue;
    let t = byId.get(e.id);
    if (t === undefined) byId.set(e.id, (t = new Map<string, bigint>()));
    for (const s of e.timestamps) if (!t.has(s.name)) t.set(s.name, BigInt(s.ns));
  }
  return new Map([...byId].sort((a, b) => a[0] - b[0]));
}

const ARRIVAL = ['HTTP_RECV_START', 'GRPC_WAITREAD_END'];
const SENT = ['HTTP_SEND_END', 'GRPC_SEND_END'];
const NEEDED = ['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END'];

function first(t: Map<string, bigint>, names: readonly string[]): bigint | undefined {
  for (const n of names) {
    const v = t.get(n);
    if (v !== undefined) return v;
  }
  return undefined;
}

const us = (a: bigint, b: bigint): number => Number(b - a) / 1e3;

/**
 * The cycles of consecutive requests (by trace id: a concurrency-1 client sends them one after the other).
 * A request without every timestamp (an error, a health check's) ends no cycle.
 */
export function cycles(byId: Map<number, Map<string, bigint>>): Cycle[] {
  const reqs = [...byId.values()];
  const out: Cycle[] = [];
  for (let i = 0; i + 1 < reqs.length; i++) {
    const r = reqs[i];
    const arrived = first(r, ARRIVAL);
    const sent = first(r, SENT);
    const next = first(reqs[i + 1], ARRIVAL);
    if (arrived === undefined || sent === undefined || next === undefined) continue;
    if (NEEDED.some((n) => !r.has(n))) continue;
    const [cs, ie, os, ce] = NEEDED.map((n) => r.get(n)!) as [bigint, bigint, bigint, bigint];
    out.push({
      parts: {
        pre: us(arrived, cs),
        to_stub: us(cs, ie),
        model: us(ie, os),
        from_stub: us(os, ce),
        post: us(ce, sent),
        gap: us(sent, next),
      },
      total: us(arrived, next),
      startNs: arrived,
      endNs: next,
    });
  }
  return out;
}

export function parseGcLog(text: string): Collection[] {
  const out: Collection[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || f[0] === '') continue;
    out.push({ startNs: BigInt(f[0]), durationNs: Number(f[1]), kind: Number(f[2]) });
  }
  return out.sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
}

/** The value below which a fraction `p` of `xs` lies (nearest rank). */
export function quantile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

/** Whether a collection started within the cycle. */
export function ranGc(c: Cycle, gcs: readonly Collection[]): boolean {
  return gcs.some((g) => g.startNs >= c.startNs && g.startNs < c.endNs);
}

export interface TailReport {
  readonly count: number;
  readonly percentiles: Record<Part | 'cycle', { p50: number; p90: number; p99: number; mean: number }>;
  /** The slowest 1 % of the cycles (threshold: the fastest of them). */
  readonly top: {
    readonly count: number;
    readonly threshold: number;
    readonly meanParts: Record<Part, number>;
  };
  /** In each top cycle, the part furthest above its own median: how many times each part was that one. */
  readonly grewMost: Record<Part, number>;
  readonly gc?: {
    readonly collections: number;
    readonly requestsPerCollection: number;
    readonly pauseUsPerRequest: number;
    readonly medianPauseUs: number;
    readonly topWithGc: number;
    readonly allWithGc: number;
  };
}

export function tailReport(all: readonly Cycle[], gcs?: readonly Collection[]): TailReport {
  const percentiles = {} as TailReport['percentiles'];
  const column = (k: Part | 'cycle'): number[] => all.map((c) => (k === 'cycle' ? c.total : c.parts[k]));
  for (const k of [...PARTS, 'cycle'] as const) {
    const xs = column(k);
    const mean = xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
    percentiles[k] = { p50: quantile(xs, 0.5), p90: quantile(xs, 0.9), p99: quantile(xs, 0.99), mean };
  }
  // The slowest 1 % by rank (at least one), so that ties at the threshold do not swell it.
  const top = [...all].sort((a, b) => b.total - a.total).slice(0, Math.max(1, Math.ceil(all.length / 100)));
  const threshold = top.length > 0 ? top[top.length - 1].total : NaN;
  const meanParts = {} as Record<Part, number>;
  const grewMost = {} as Record<Part, number>;
  for (const k of PARTS) {
    meanParts[k] = top.reduce((a, c) => a + c.parts[k], 0) / Math.max(top.length, 1);
    grewMost[k] = 0;
  }
  for (const c of top) {
    let best: Part = 'pre';
    for (const k of PARTS) {
      if (c.parts[k] - percentiles[k].p50 > c.parts[best] - percentiles[best].p50) best = k;
    }
    grewMost[best]++;
  }
  const report: TailReport = {
    count: all.length,
    percentiles,
    top: { count: top.length, threshold, meanParts },
    grewMost,
  };
  if (gcs === undefined || all.length === 0) return report;
  const from = all[0].startNs;
  const to = all[all.length - 1].endNs;
  const within = gcs.filter((g) => g.startNs >= from && g.startNs < to);
  const pauses = within.map((g) => g.durationNs / 1e3);
  return {
    ...report,
    gc: {
      collections: within.length,
      requestsPerCollection: all.length / Math.max(within.length, 1),
      pauseUsPerRequest: pauses.reduce((a, b) => a + b, 0) / all.length,
      medianPauseUs: quantile(pauses, 0.5),
      topWithGc: top.filter((c) => ranGc(c, within)).length,
      allWithGc: all.filter((c) => ranGc(c, within)).length,
    },
  };
}

function print(r: TailReport): void {
  const f = (x: number): string => x.toFixed(0).padStart(7);
  console.log(`${r.count} cycles measured`);
  console.log(`${'part'.padEnd(10)}    p50     p90     p99    mean  (µs)`);
  for (const [k, p] of Object.entries(r.percentiles)) {
    console.log(`${k.padEnd(10)}${f(p.p50)} ${f(p.p90)} ${f(p.p99)} ${f(p.mean)}`);
  }
  const parts = PARTS.map((k) => `${k} ${r.top.meanParts[k].toFixed(0)}`).join(', ');
  console.log(`slowest 1 % (${r.top.count} cycles >= ${r.top.threshold.toFixed(0)} µs), mean µs: ${parts}`);
  console.log(
    `  the part furthest above its median: ${PARTS.map((k) => `${k} ${r.grewMost[k]}`).join(', ')}`,
  );
  const g = r.gc;
  if (g !== undefined) {
    console.log(
      `gc: ${g.collections} collections (one per ${g.requestsPerCollection.toFixed(0)} requests), ` +
        `${g.pauseUsPerRequest.toFixed(1)} µs/request, median pause ${g.medianPauseUs.toFixed(0)} µs; ` +
        `a collection ran in ${g.topWithGc} of the slowest 1 % and in ${g.allWithGc} cycles in all`,
    );
  }
}

function main(): void {
  const [tracePath, gcPath, skipArg] = process.argv.slice(2);
  const skip = skipArg === undefined ? undefined : Number(skipArg);
  if (tracePath === undefined || (skip !== undefined && !(Number.isInteger(skip) && skip >= 0))) {
    console.error('usage: node dist/bench/c1-tail.js <trace.json> [gc.log] [skip: a whole number]');
    process.exit(2);
  }
  const all = cycles(requestTimestamps(JSON.parse(readFileSync(tracePath, 'utf8')) as TraceEvent[]));
  const measured = all.slice(skip ?? Math.floor(all.length / 10));
  const gcs =
    gcPath !== undefined && existsSync(gcPath) ? parseGcLog(readFileSync(gcPath, 'utf8')) : undefined;
  print(tailReport(measured, gcs));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
