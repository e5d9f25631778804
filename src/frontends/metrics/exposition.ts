/**
 * Prometheus text exposition format 0.0.4: HELP/TYPE headers, escaped label values, and value formatting,
 * laid out as prometheus-cpp (Triton's serializer) does — labels sorted by name with `quantile`/`le` last,
 * summaries and histograms as _count, _sum, then their quantile or bucket lines.
 */
import type { Family } from './families.js';

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** [name, value] pairs, already in output order. */
export type Labels = readonly (readonly [string, string])[];

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function isValidLabelName(name: string): boolean {
  return LABEL_NAME.test(name) && !name.startsWith('__');
}

export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\\' ? '\\\\' : c === '"' ? '\\"' : '\\n'));
}

export function escapeHelp(v: string): string {
  return v.replace(/[\\\n]/g, (c) => (c === '\\' ? '\\\\' : '\\n'));
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** Sorts by label name (byte order, like a std::map) so every series prints its labels the same way. */
export function sortLabels(labels: Iterable<readonly [string, string]>): Labels {
  return [...labels].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

export function sample(name: string, labels: Labels, value: number): string {
  if (labels.length === 0) return `${name} ${formatValue(value)}\n`;
  const body = labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',');
  return `${name}{${body}} ${formatValue(value)}\n`;
}

/** A family with its samples; nothing at all when it has none (as prometheus-cpp omits empty families). */
export function familyText(family: Family, samples: readonly string[]): string {
  if (samples.length === 0) return '';
  return `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n${samples.join('')}`;
}

export interface SummaryValues {
  readonly count: number;
  readonly sum: number;
  readonly quantiles: readonly (readonly [number, number])[];
}

export function summarySamples(name: string, labels: Labels, s: SummaryValues): string {
  let out = sample(`${name}_count`, labels, s.count) + sample(`${name}_sum`, labels, s.sum);
  for (const [q, v] of s.quantiles) out += sample(name, [...labels, ['quantile', formatValue(q)]], v);
  return out;
}

export interface HistogramValues {
  readonly count: number;
  readonly sum: number;
  /** [upper bound, cumulative count], ascending; +Inf is added here. */
  readonly buckets: readonly (readonly [number, number])[];
}

export function histogramSamples(name: string, labels: Labels, h: HistogramValues): string {
  let out = sample(`${name}_count`, labels, h.count) + sample(`${name}_sum`, labels, h.sum);
  for (const [le, c] of h.buckets) out += sample(`${name}_bucket`, [...labels, ['le', formatValue(le)]], c);
  out += sample(`${name}_bucket`, [...labels, ['le', '+Inf']], h.count);
  return out;
}
