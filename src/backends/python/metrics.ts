/**
 * A Python model's custom metrics (pb_utils.MetricFamily / Metric) for ModelHandle.customMetrics: the
 * METRICS frame each stub answers a METRICS_QUERY with (python/nereid_stub/metrics.py writes it), checked
 * as hostile input, and the merge of a model's instances. In Triton every instance's series with the same
 * family and labels is one prometheus-cpp series in the server, so the merge computes what that shared
 * series would hold:
 *
 * - counters and histograms: summed (histograms only with the same bucket bounds; others are left out);
 * - gauges: summed while no instance has called set() on the series (increments from every instance add
 *   up, as on a shared gauge); once one has, the value of the instance that set it most recently (set()
 *   overwrites a shared gauge; that instance's own later increments are included, other instances'
 *   increments are not);
 * - the first instance's description wins; a family whose kind differs from the first one's is left out.
 */
import type { CustomMetricFamily, CustomMetricKind, CustomMetricSample } from '../../backend-api/backend.js';

/** One series as one stub holds it. */
export interface StubSeries extends CustomMetricSample {
  /** Gauges: CLOCK_MONOTONIC nanoseconds of the last set() (the same clock in every stub); 0 = never. */
  readonly setAt: number;
}

export interface StubFamily {
  readonly name: string;
  readonly description: string;
  readonly kind: CustomMetricKind;
  readonly series: readonly StubSeries[];
}

const KINDS: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram']);
/** How many families and series one stub may report (a runaway model must not flood a scrape). */
const MAX_FAMILIES = 1000;
const MAX_SERIES = 10_000;

/** A number as the stub writes it: JSON numbers, and NaN / ±Inf as Prometheus spells them. */
function number(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return undefined;
}

function numbers(v: unknown): number[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: number[] = [];
  for (const x of v) {
    const n = number(x);
    if (n === undefined) return undefined;
    out.push(n);
  }
  return out;
}

function labelsOf(v: unknown): Record<string, string> | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (typeof x !== 'string') return undefined;
    out[k] = x;
  }
  return out;
}

function seriesOf(v: unknown, histogram: boolean): StubSeries | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const m = v as Record<string, unknown>;
  const labels = labelsOf(m.l);
  const value = number(m.v);
  if (!labels || value === undefined) return undefined;
  const setAt = typeof m.s === 'number' && Number.isFinite(m.s) ? m.s : 0;
  if (!histogram) return { labels, value, setAt };
  const buckets = numbers(m.b);
  const bucketCounts = numbers(m.bc);
  const count = number(m.c);
  if (!buckets || !bucketCounts || buckets.length !== bucketCounts.length || count === undefined)
    return undefined;
  return { labels, value, buckets, bucketCounts, count, setAt };
}

/** The families of a METRICS frame header; whatever is malformed is left out. */
export function parseMetricsReply(header: unknown): StubFamily[] {
  const f = (header as { f?: unknown } | null)?.f;
  if (!Array.isArray(f)) return [];
  const out: StubFamily[] = [];
  let total = 0;
  for (const raw of f.slice(0, MAX_FAMILIES) as unknown[]) {
    if (typeof raw !== 'object' || raw === null) continue;
    const family = raw as Record<string, unknown>;
    const { n: name, d: description, k: kind, m: metrics } = family;
    if (typeof name !== 'string' || typeof description !== 'string' || typeof kind !== 'string') continue;
    if (!KINDS.has(kind) || !Array.isArray(metrics)) continue;
    const series: StubSeries[] = [];
    for (const m of metrics as unknown[]) {
      if (total >= MAX_SERIES) break;
      const s = seriesOf(m, kind === 'histogram');
      if (!s) continue;
      series.push(s);
      total++;
    }
    out.push({ name, description, kind: kind as CustomMetricKind, series });
  }
  return out;
}

/** A label set's identity, whatever order the labels came in. */
function labelKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const sameBounds = (a: readonly number[] | undefined, b: readonly number[] | undefined): boolean =>
  a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

function mergeSeries(kind: CustomMetricKind, samples: readonly StubSeries[]): CustomMetricSample {
  const first = samples[0];
  if (kind === 'gauge') {
    const setters = samples.filter((s) => s.setAt > 0);
    if (setters.length > 0) {
      const last = setters.reduce((a, b) => (b.setAt > a.setAt ? b : a));
      return { labels: first.labels, value: last.value };
    }
    return { labels: first.labels, value: samples.reduce((sum, s) => sum + s.value, 0) };
  }
  if (kind === 'counter') {
    return { labels: first.labels, value: samples.reduce((sum, s) => sum + s.value, 0) };
  }
  const same = samples.filter((s) => sameBounds(s.buckets, first.buckets));
  const counts = first.bucketCounts!.map((_, i) => same.reduce((sum, s) => sum + s.bucketCounts![i], 0));
  return {
    labels: first.labels,
    value: same.reduce((sum, s) => sum + s.value, 0),
    buckets: first.buckets,
    bucketCounts: counts,
    count: same.reduce((sum, s) => sum + (s.count ?? 0), 0),
  };
}

/** The instances' families merged into the model's, in name order. */
export function mergeInstanceMetrics(instances: readonly (readonly StubFamily[])[]): CustomMetricFamily[] {
  const byName = new Map<string, { family: StubFamily; series: Map<string, StubSeries[]> }>();
  for (const families of instances) {
    for (const f of families) {
      let merged = byName.get(f.name);
      if (!merged) byName.set(f.name, (merged = { family: f, series: new Map() }));
      else if (merged.family.kind !== f.kind) continue;
      for (const s of f.series) {
        const key = labelKey(s.labels);
        const list = merged.series.get(key);
        if (list) list.push(s);
        else merged.series.set(key, [s]);
      }
    }
  }
  return [...byName.values()]
    .sort((a, b) => (a.family.name < b.family.name ? -1 : a.family.name > b.family.name ? 1 : 0))
    .map(({ family, series }) => ({
      name: family.name,
      description: family.description,
      kind: family.kind,
      metrics: [...series.values()].map((samples) => mergeSeries(family.kind, samples)),
    }));
}
