/**
 * Merging a model's custom metrics across its instances, for ModelHandle.customMetrics. Every instance
 * (a JavaScript worker, a Python stub) keeps its own registry, while Triton's Python models share one
 * prometheus-cpp family per name in the server, so the same family and label set from several instances
 * is one series. What one series holds is the caller's rule (`mergeSeries`); the grouping is shared:
 *
 * - families by name, in the order they are first seen; the first instance's description and kind win,
 *   and a family whose kind differs from the first one's is left out (model code made them disagree);
 * - series by label set, whatever order the labels were given in.
 */
import type { CustomMetricFamily, CustomMetricKind, CustomMetricSample } from '../backend-api/backend.js';

/** A family as one instance reports it; `S` may carry what a backend's merge rule needs. */
export interface InstanceMetricFamily<S extends CustomMetricSample> {
  readonly name: string;
  readonly description: string;
  readonly kind: CustomMetricKind;
  readonly metrics: readonly S[];
}

/** A label set's identity, whatever order its labels come in. */
export function labelKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const sameBounds = (a: readonly number[] | undefined, b: readonly number[] | undefined): boolean =>
  a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * What a shared series would hold: counter and gauge values summed; histogram sums, bucket counts and
 * counts summed over the samples with the first one's bucket bounds (others are left out).
 */
export function sumSeries(
  kind: CustomMetricKind,
  samples: readonly CustomMetricSample[],
): CustomMetricSample {
  const first = samples[0];
  if (kind !== 'histogram') {
    return { labels: first.labels, value: samples.reduce((sum, s) => sum + s.value, 0) };
  }
  const same = samples.filter((s) => sameBounds(s.buckets, first.buckets) && s.bucketCounts !== undefined);
  const counts = (first.bucketCounts ?? []).map((_, i) =>
    same.reduce((sum, s) => sum + (s.bucketCounts![i] ?? 0), 0),
  );
  return {
    labels: first.labels,
    value: same.reduce((sum, s) => sum + s.value, 0),
    buckets: first.buckets,
    bucketCounts: counts,
    count: same.reduce((sum, s) => sum + (s.count ?? 0), 0),
  };
}

/** The instances' families merged into the model's; the inputs are left untouched. */
export function mergeInstanceMetrics<S extends CustomMetricSample>(
  instances: readonly (readonly InstanceMetricFamily<S>[])[],
  mergeSeries: (kind: CustomMetricKind, samples: readonly S[]) => CustomMetricSample = sumSeries,
): CustomMetricFamily[] {
  const byName = new Map<string, { family: InstanceMetricFamily<S>; series: Map<string, S[]> }>();
  for (const families of instances) {
    for (const f of families) {
      let merged = byName.get(f.name);
      if (!merged) byName.set(f.name, (merged = { family: f, series: new Map() }));
      else if (merged.family.kind !== f.kind) continue;
      for (const s of f.metrics) {
        const key = labelKey(s.labels);
        const list = merged.series.get(key);
        if (list) list.push(s);
        else merged.series.set(key, [s]);
      }
    }
  }
  return [...byName.values()].map(({ family, series }) => ({
    name: family.name,
    description: family.description,
    kind: family.kind,
    metrics: [...series.values()].map((samples) => mergeSeries(family.kind, samples)),
  }));
}
