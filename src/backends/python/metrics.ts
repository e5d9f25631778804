/**
 * A Python model's custom metrics (pb_utils.MetricFamily / Metric) for ModelHandle.customMetrics: the
 * METRICS frame each stub answers a METRICS_QUERY with (python/nereid_stub/metrics.py writes it), checked
 * as hostile input, and the merge of a model's instances (../custom-metrics.ts groups them). In Triton
 * every instance's series with the same family and labels is one prometheus-cpp series in the server, so
 * the merge computes what that shared series would hold:
 *
 * - counters and histograms: summed (histograms only with the same bucket bounds; others are left out);
 * - gauges: summed while no instance has called set() on the series (increments from every instance add
 *   up, as on a shared gauge); once one has, the value of the instance that set it most recently (set()
 *   overwrites a shared gauge; that instance's own later increments are included, other instances'
 *   increments are not).
 */
import type { CustomMetricFamily, CustomMetricKind, CustomMetricSample } from '../../backend-api/backend.js';
import { mergeInstanceMetrics, sumSeries, type InstanceMetricFamily } from '../custom-metrics.js';
import { isJsonObject, listOf } from './frames.js';

/** One series as one stub holds it. */
export interface StubSeries extends CustomMetricSample {
  /** Gauges: CLOCK_MONOTONIC nanoseconds of the last set() (the same clock in every stub); 0 = never. */
  readonly setAt: number;
}

export type StubFamily = InstanceMetricFamily<StubSeries>;

const KINDS: ReadonlySet<unknown> = new Set<CustomMetricKind>(['counter', 'gauge', 'histogram']);
const isKind = (k: unknown): k is CustomMetricKind => KINDS.has(k);
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
  if (!isJsonObject(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') return undefined;
    out[k] = x;
  }
  return out;
}

function seriesOf(v: unknown, histogram: boolean): StubSeries | undefined {
  // An array has none of the fields, so it is refused below like any malformed series.
  const m = isJsonObject(v) ? v : Array.isArray(v) ? {} : undefined;
  if (m === undefined) return undefined;
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
  const f = isJsonObject(header) ? header.families : undefined;
  if (!Array.isArray(f)) return [];
  const out: StubFamily[] = [];
  let total = 0;
  for (const family of listOf(f).slice(0, MAX_FAMILIES)) {
    if (!isJsonObject(family)) continue;
    const { n: name, d: description, k: kind, m: metrics } = family;
    if (typeof name !== 'string' || typeof description !== 'string' || !isKind(kind)) continue;
    if (!Array.isArray(metrics)) continue;
    const series: StubSeries[] = [];
    for (const m of listOf(metrics)) {
      if (total >= MAX_SERIES) break;
      const s = seriesOf(m, kind === 'histogram');
      if (!s) continue;
      series.push(s);
      total++;
    }
    out.push({ name, description, kind, metrics: series });
  }
  return out;
}

/** A series of several instances: a gauge someone set() is the latest setter's value; the rest sum up. */
function mergeSeries(kind: CustomMetricKind, samples: readonly StubSeries[]): CustomMetricSample {
  const setters = kind === 'gauge' ? samples.filter((s) => s.setAt > 0) : [];
  if (setters.length === 0) return sumSeries(kind, samples);
  const last = setters.reduce((a, b) => (b.setAt > a.setAt ? b : a));
  return { labels: samples[0].labels, value: last.value };
}

/** The instances' families merged into the model's, in name order. */
export function mergeStubMetrics(instances: readonly (readonly StubFamily[])[]): CustomMetricFamily[] {
  return mergeInstanceMetrics(instances, mergeSeries).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
}
