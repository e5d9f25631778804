/**
 * Custom metrics from model code, shaped like pb_utils.MetricFamily / Metric: counters, gauges and
 * histograms with labels. Values live in the thread that records them (a model's worker keeps its own
 * registry); the server reads every instance's registry at scrape time, merges the instances of a model
 * and publishes the families on the Prometheus endpoint with exactly the labels the model gave
 * (docs/metrics.md, "Custom metrics").
 */
import type { CustomMetricFamily, CustomMetricKind, CustomMetricSample } from '../common/metric-family.js';
import { invalidArg, unsupported } from '../common/errors.js';

/** The snapshot types are the backend contract's, so a worker's answer goes to the server as it is. */
export type MetricKind = CustomMetricKind;
export type MetricSnapshot = CustomMetricSample;
export type MetricFamilySnapshot = CustomMetricFamily;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class Metric {
  #value = 0;
  #count = 0;
  readonly #bucketCounts: number[];

  constructor(
    readonly kind: MetricKind,
    readonly labels: Readonly<Record<string, string>>,
    readonly buckets: readonly number[] | undefined,
  ) {
    this.#bucketCounts = buckets ? buckets.map(() => 0) : [];
  }

  /** Counters and gauges; a counter only goes up. */
  increment(value = 1): void {
    if (this.kind === 'histogram') throw unsupported('a histogram metric is observed, not incremented');
    if (this.kind === 'counter' && value < 0) throw invalidArg('a counter cannot be decremented');
    this.#value += value;
  }

  /** Gauges only. */
  set(value: number): void {
    if (this.kind !== 'gauge') throw unsupported(`a ${this.kind} metric cannot be set`);
    this.#value = value;
  }

  /** Histograms only. */
  observe(value: number): void {
    if (this.kind !== 'histogram') throw unsupported(`a ${this.kind} metric cannot observe values`);
    this.#value += value;
    this.#count++;
    this.buckets!.forEach((le, i) => {
      if (value <= le) this.#bucketCounts[i]++;
    });
  }

  value(): number {
    if (this.kind === 'histogram') throw unsupported('a histogram has no single value; see snapshot()');
    return this.#value;
  }

  snapshot(): MetricSnapshot {
    if (this.kind !== 'histogram') return { labels: this.labels, value: this.#value };
    return {
      labels: this.labels,
      value: this.#value,
      buckets: this.buckets,
      bucketCounts: [...this.#bucketCounts],
      count: this.#count,
    };
  }
}

export class MetricRegistry {
  readonly #families = new Map<string, MetricFamily>();

  register(family: MetricFamily): void {
    const existing = this.#families.get(family.name);
    if (existing && existing.kind !== family.kind) {
      throw invalidArg(`metric family '${family.name}' already exists with kind ${existing.kind}`);
    }
    this.#families.set(family.name, family);
  }

  snapshot(): MetricFamilySnapshot[] {
    return [...this.#families.values()].map((f) => f.snapshot());
  }
}

/** The registry of this thread (each model worker has its own). */
export const defaultMetricRegistry = new MetricRegistry();

export interface MetricFamilyInit {
  readonly name: string;
  readonly description: string;
  readonly kind: MetricKind;
}

export class MetricFamily {
  readonly name: string;
  readonly description: string;
  readonly kind: MetricKind;
  readonly #metrics = new Map<string, Metric>();

  constructor(init: MetricFamilyInit, registry: MetricRegistry = defaultMetricRegistry) {
    if (!NAME.test(init.name)) throw invalidArg(`invalid metric family name '${init.name}'`);
    if (init.kind !== 'counter' && init.kind !== 'gauge' && init.kind !== 'histogram') {
      throw invalidArg(`invalid metric kind '${String(init.kind)}'`);
    }
    this.name = init.name;
    this.description = init.description;
    this.kind = init.kind;
    registry.register(this);
  }

  /** The metric with these labels (created on first use); histograms need their bucket bounds. */
  metric(
    labels: Readonly<Record<string, string>> = {},
    options: { buckets?: readonly number[] } = {},
  ): Metric {
    for (const k of Object.keys(labels)) if (!LABEL.test(k)) throw invalidArg(`invalid metric label '${k}'`);
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
    let m = this.#metrics.get(key);
    if (!m) {
      let buckets: number[] | undefined;
      if (this.kind === 'histogram') {
        buckets = [...(options.buckets ?? [])];
        if (buckets.length === 0 || buckets.some((b, i) => i > 0 && b <= buckets![i - 1])) {
          throw invalidArg(`histogram '${this.name}' needs increasing bucket bounds`);
        }
      }
      m = new Metric(this.kind, { ...labels }, buckets);
      this.#metrics.set(key, m);
    }
    return m;
  }

  snapshot(): MetricFamilySnapshot {
    return {
      name: this.name,
      description: this.description,
      kind: this.kind,
      metrics: [...this.#metrics.values()].map((m) => m.snapshot()),
    };
  }
}
