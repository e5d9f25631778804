/**
 * Renders the metric families models defined themselves (pb_utils.MetricFamily, the JavaScript SDK's
 * MetricFamily) in Prometheus text format, after Nereid's own families. Like Triton, the series carry
 * exactly the labels the model gave: nothing (not even model or version) is added.
 *
 * What models report is treated as hostile: a family or label name that Prometheus would not accept, a
 * label value that is not a string, histogram bounds that do not ascend, a family whose name is Nereid's
 * (nv_* or one of the process families) or whose series would collide with another family's, are all left
 * out and described in `problems` (the caller logs each once) — the rest of the scrape is unaffected.
 *
 * The same family from several models (or versions) is one family: its kind must match the first one seen
 * (models are read ordered by name and version), and series with the same labels are summed — what one
 * shared prometheus-cpp series would hold in Triton, where every model's families live in one registry.
 */
import type { CustomMetricFamily, CustomMetricKind } from '../../backend-api/backend.js';
import type { ModelCustomMetrics } from '../../core/index.js';
import {
  familyText,
  histogramSamples,
  isValidLabelName,
  sample,
  sortLabels,
  type Labels,
} from './exposition.js';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const KINDS: ReadonlySet<string> = new Set<CustomMetricKind>(['counter', 'gauge', 'histogram']);

export function isValidMetricName(name: string): boolean {
  return METRIC_NAME.test(name);
}

/** Names a custom family may not take: Nereid's own families (and their series), and all of nv_*. */
export class ReservedNames {
  private readonly exact = new Set<string>();

  constructor(families: Iterable<string>) {
    for (const n of families) for (const s of seriesNames(n, 'histogram')) this.exact.add(s);
  }

  has(name: string): boolean {
    return name.startsWith('nv_') || this.exact.has(name);
  }
}

/** Sample names a family writes (a histogram's _bucket, _sum and _count besides its own name). */
function seriesNames(name: string, kind: string): string[] {
  return kind === 'histogram' ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
}

/** A name or value quoted for a log line: escaped, and cut short. */
function shown(v: unknown): string {
  const text = typeof v === 'string' ? v : String(v);
  const q = JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}...` : text);
  return q;
}

interface Series {
  readonly labels: Labels;
  value: number;
  /** Histograms: finite ascending bounds and their cumulative counts, plus the total count. */
  readonly bounds?: readonly number[];
  counts?: number[];
  count?: number;
}

interface Merged {
  readonly name: string;
  readonly kind: CustomMetricKind;
  readonly help: string;
  /** The model that defined it first (named in conflict messages). */
  readonly owner: string;
  readonly series: Map<string, Series>;
}

export interface CustomRender {
  readonly text: string;
  /** What was left out and why, one sentence each. */
  readonly problems: string[];
}

/** Checks one sample; returns the series it contributes or why it is left out. */
function readSample(raw: unknown, kind: CustomMetricKind): Series | string {
  if (typeof raw !== 'object' || raw === null) return 'a metric that is not an object';
  const m = raw as Record<string, unknown>;
  const labels: [string, string][] = [];
  const rawLabels = m.labels ?? {};
  if (typeof rawLabels !== 'object' || rawLabels === null || Array.isArray(rawLabels)) {
    return 'labels that are not an object';
  }
  for (const [k, v] of Object.entries(rawLabels as Record<string, unknown>)) {
    if (!isValidLabelName(k) || (kind === 'histogram' && k === 'le')) return `invalid label name ${shown(k)}`;
    if (typeof v !== 'string') return `label ${shown(k)} whose value is not a string`;
    labels.push([k, v]);
  }
  if (typeof m.value !== 'number') return 'a value that is not a number';
  const series: Series = { labels: sortLabels(labels), value: m.value };
  if (kind !== 'histogram') return series;

  const bounds = m.buckets;
  const counts = m.bucketCounts;
  if (!Array.isArray(bounds) || !Array.isArray(counts) || bounds.length !== counts.length) {
    return 'histogram buckets without one count per bound';
  }
  if (!bounds.every((b, i) => typeof b === 'number' && !Number.isNaN(b) && (i === 0 || b > bounds[i - 1]))) {
    return 'histogram bounds that do not ascend';
  }
  if (!counts.every((c) => typeof c === 'number' && Number.isFinite(c)))
    return 'histogram counts that are not numbers';
  const b = bounds as number[];
  const c = counts as number[];
  // +Inf is the exposition's own last bucket (the total count).
  const keep = b[b.length - 1] === Infinity ? b.length - 1 : b.length;
  const total = typeof m.count === 'number' ? m.count : (c[c.length - 1] ?? 0);
  return { ...series, bounds: b.slice(0, keep), counts: c.slice(0, keep), count: total };
}

function addTo(into: Series, s: Series): boolean {
  if (!into.bounds) {
    into.value += s.value;
    return true;
  }
  const a = into.bounds;
  const b = s.bounds!;
  if (a.length !== b.length || a.some((x, i) => x !== b[i])) return false;
  into.value += s.value;
  into.count = (into.count ?? 0) + (s.count ?? 0);
  into.counts = into.counts!.map((x, i) => x + s.counts![i]);
  return true;
}

export function renderCustomMetrics(
  models: readonly ModelCustomMetrics[],
  reserved: ReservedNames,
): CustomRender {
  const problems: string[] = [];
  const families = new Map<string, Merged>();
  /** Sample name → the family writing it, across custom families. */
  const claimed = new Map<string, string>();

  for (const entry of models) {
    const who = `model '${entry.model}' version ${entry.version}`;
    const list: readonly unknown[] = Array.isArray(entry.families) ? entry.families : [];
    for (const rawFamily of list) {
      if (typeof rawFamily !== 'object' || rawFamily === null) {
        problems.push(`a custom metric family of ${who} is not an object; left out`);
        continue;
      }
      const f = rawFamily as Partial<Record<keyof CustomMetricFamily, unknown>>;
      const name = f.name;
      if (typeof name !== 'string' || !isValidMetricName(name)) {
        problems.push(`custom metric family ${shown(name)} of ${who} has an invalid name; left out`);
        continue;
      }
      if (typeof f.kind !== 'string' || !KINDS.has(f.kind)) {
        problems.push(
          `custom metric family '${name}' of ${who} has an unknown kind ${shown(f.kind)}; left out`,
        );
        continue;
      }
      const kind = f.kind as CustomMetricKind;
      if (reserved.has(name) || seriesNames(name, kind).some((s) => reserved.has(s))) {
        problems.push(
          `custom metric family '${name}' of ${who} takes a name of Nereid's own metrics; left out`,
        );
        continue;
      }
      let merged = families.get(name);
      if (merged && merged.kind !== kind) {
        problems.push(
          `custom metric family '${name}' of ${who} is a ${kind}, but ${merged.owner} defined it as a ${merged.kind}; left out`,
        );
        continue;
      }
      if (!merged) {
        const clash = seriesNames(name, kind).find((s) => claimed.has(s));
        if (clash !== undefined) {
          problems.push(
            `custom metric family '${name}' of ${who} would write '${clash}', which family '${claimed.get(clash)}' writes; left out`,
          );
          continue;
        }
        for (const s of seriesNames(name, kind)) claimed.set(s, name);
        const help = typeof f.description === 'string' ? f.description : '';
        merged = { name, kind, help, owner: who, series: new Map() };
        families.set(name, merged);
      }
      const metrics: readonly unknown[] = Array.isArray(f.metrics) ? f.metrics : [];
      for (const raw of metrics) {
        const s = readSample(raw, kind);
        if (typeof s === 'string') {
          problems.push(`a metric of custom family '${name}' of ${who} has ${s}; left out`);
          continue;
        }
        const key = JSON.stringify(s.labels);
        const existing = merged.series.get(key);
        if (!existing) merged.series.set(key, s);
        else if (!addTo(existing, s)) {
          problems.push(
            `a metric of custom histogram '${name}' of ${who} has other bucket bounds than the same labels elsewhere; left out`,
          );
        }
      }
    }
  }

  let text = '';
  for (const f of [...families.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const samples = [...f.series.values()].map((s) =>
      s.bounds
        ? histogramSamples(f.name, s.labels, {
            count: s.count ?? 0,
            sum: s.value,
            buckets: s.bounds.map((le, i) => [le, s.counts![i]] as const),
          })
        : sample(f.name, s.labels, s.value),
    );
    text += familyText({ name: f.name, type: f.kind, help: f.help }, samples);
  }
  return { text, problems };
}
