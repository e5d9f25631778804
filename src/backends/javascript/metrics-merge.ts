/**
 * Merges the custom metric snapshots of a model's instances into one list, as the backend contract asks
 * (ModelHandle.customMetrics): each worker keeps its own registry, while Triton's Python models share one
 * prometheus-cpp family per name, so the same family and label set from several instances is one series.
 *
 * - counters and histograms: values, bucket counts and counts are summed (what a shared series would hold);
 * - gauges: summed as well. A gauge moved with increment() then equals Triton's shared gauge (the sum of
 *   every instance's moves); for set(), Triton reports whichever instance set it last, which a snapshot
 *   cannot know, and the sum (e.g. the model's total queue depth) is the meaningful whole;
 * - the first instance's description wins; a family whose kind differs from the first instance's, and a
 *   histogram series whose bucket bounds differ, are left out (model code made them disagree).
 */
import type { CustomMetricFamily, CustomMetricSample } from '../../backend-api/backend.js';

interface Series {
  labels: Readonly<Record<string, string>>;
  value: number;
  buckets?: readonly number[];
  bucketCounts?: number[];
  count?: number;
}

interface Merged {
  readonly family: CustomMetricFamily;
  readonly series: Map<string, Series>;
}

/** A label set's identity, whatever order the labels were given in. */
export function labelKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const sameBounds = (a: readonly number[] | undefined, b: readonly number[] | undefined): boolean =>
  a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

function add(into: Series, m: CustomMetricSample, histogram: boolean): void {
  if (!histogram) {
    into.value += m.value;
    return;
  }
  if (!sameBounds(into.buckets, m.buckets) || !into.bucketCounts || !m.bucketCounts) return;
  into.value += m.value;
  into.count = (into.count ?? 0) + (m.count ?? 0);
  const counts = m.bucketCounts;
  into.bucketCounts = into.bucketCounts.map((c, i) => c + (counts[i] ?? 0));
}

function fresh(m: CustomMetricSample): Series {
  const s: Series = { labels: m.labels, value: m.value };
  if (m.buckets) s.buckets = m.buckets;
  if (m.bucketCounts) s.bucketCounts = [...m.bucketCounts];
  if (m.count !== undefined) s.count = m.count;
  return s;
}

export function mergeMetricFamilies(lists: readonly (readonly CustomMetricFamily[])[]): CustomMetricFamily[] {
  const byName = new Map<string, Merged>();
  for (const families of lists) {
    for (const f of families) {
      let merged = byName.get(f.name);
      if (!merged) byName.set(f.name, (merged = { family: f, series: new Map() }));
      else if (merged.family.kind !== f.kind) continue;
      const histogram = f.kind === 'histogram';
      for (const m of f.metrics) {
        const key = labelKey(m.labels);
        const s = merged.series.get(key);
        if (s) add(s, m, histogram);
        else merged.series.set(key, fresh(m));
      }
    }
  }
  return [...byName.values()].map(({ family, series }) => ({
    name: family.name,
    description: family.description,
    kind: family.kind,
    metrics: [...series.values()],
  }));
}
