/**
 * The metrics side of the statistics: one series per (model, version, metric_tags) label set, shared by
 * every loaded instance of that version, like Triton's MetricModelReporter. A reload builds a new
 * ModelVersion (fresh statistics for the statistics extension) while the old one drains; both feed the
 * same series, and a detached version's final counts stay in it, so counters never go backwards across
 * reloads. The series disappears once no version with its labels is loaded (Triton removes it too).
 *
 * Frontends read it through MetricsSource: counters at scrape time (nothing is updated per request for
 * them), plus an observer hook for the per-request latency summaries and histograms.
 */
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import {
  addCounters,
  emptyCounters,
  type ModelStats,
  type StatsCounters,
  type StatsSink,
  type SuccessSample,
} from './model-stats.js';

/** Triton's only histogram family whose buckets model_metrics may override. */
export const FIRST_RESPONSE_HISTOGRAM = 'nv_inference_first_response_histogram_ms';

export interface MetricSeries {
  readonly model: string;
  readonly version: string;
  /** The config's metric_tags (label `_<key>` on every series of this version). */
  readonly tags: Readonly<Record<string, string>>;
  /** model_metrics bucket override for the first-response histogram, ascending; undefined = defaults. */
  readonly firstResponseBucketsMs: readonly number[] | undefined;
  /** The version uses a response cache (cache metrics are emitted only then). */
  readonly cacheEnabled: boolean;
  /** Seconds the most recent load of this version took. */
  readonly loadDurationSecs: number;
  /** Cumulative counters since the series appeared (a fresh copy). */
  totals(): StatsCounters;
  /** Requests queued and not yet executing, over every loaded instance of the version. */
  pending(): number;
}

/** Per-request observations for latency summaries and histograms. */
export interface LatencyObserver {
  success(series: MetricSeries, sample: SuccessSample): void;
  /** Request start to its first response (or error), in nanoseconds. */
  firstResponse(series: MetricSeries, ns: number): void;
  /** A response-cache hit: the request's queue time and the lookup's time, in nanoseconds. */
  cacheHit?(series: MetricSeries, queueNs: number, hitNs: number): void;
  /** A response-cache miss: lookup plus insert time, in nanoseconds. */
  cacheMiss?(series: MetricSeries, ns: number): void;
}

/** What a metrics frontend reads. */
export interface MetricsSource {
  /** Every live series, ordered by model, version and tags. The same object while the series lives. */
  metricSeries(): readonly MetricSeries[];
  /** Starts per-request observations; returns the function that stops them. */
  addLatencyObserver(observer: LatencyObserver): () => void;
}

export interface StatsRegistryOptions {
  /** A response cache exists on this server (models with response_cache.enable then get cache metrics). */
  readonly responseCache?: boolean;
}

function bucketsOf(config: FrozenModelConfig): number[] | undefined {
  for (const control of config.model_metrics?.metric_control ?? []) {
    if (control.metric_identifier?.family !== FIRST_RESPONSE_HISTOGRAM) continue;
    const raw = control.histogram_options?.buckets ?? [];
    return [...new Set(raw.filter((b) => Number.isFinite(b)))].sort((a, b) => a - b);
  }
  return undefined;
}

class Series implements MetricSeries, StatsSink {
  readonly live = new Set<ModelStats>();
  private readonly retired = emptyCounters();
  loadDurationSecs = 0;

  constructor(
    private readonly observers: ReadonlySet<LatencyObserver>,
    readonly key: string,
    readonly model: string,
    readonly version: string,
    readonly tags: Readonly<Record<string, string>>,
    readonly firstResponseBucketsMs: readonly number[] | undefined,
    readonly cacheEnabled: boolean,
  ) {}

  totals(): StatsCounters {
    const t = emptyCounters();
    addCounters(t, this.retired);
    for (const s of this.live) addCounters(t, s.counters());
    return t;
  }

  pending(): number {
    let n = 0;
    for (const s of this.live) n += s.pending;
    return n;
  }

  retire(stats: ModelStats): void {
    if (!this.live.delete(stats)) return;
    addCounters(this.retired, stats.counters());
  }

  success(sample: SuccessSample): void {
    for (const o of this.observers) o.success(this, sample);
  }

  firstResponse(ns: number): void {
    for (const o of this.observers) o.firstResponse(this, ns);
  }

  cacheHit(queueNs: number, hitNs: number): void {
    for (const o of this.observers) o.cacheHit?.(this, queueNs, hitNs);
  }

  cacheMiss(ns: number): void {
    for (const o of this.observers) o.cacheMiss?.(this, ns);
  }
}

export class StatsRegistry implements MetricsSource {
  private readonly series = new Map<string, Series>();
  private readonly observers = new Set<LatencyObserver>();

  constructor(private readonly options: StatsRegistryOptions = {}) {}

  /**
   * Joins a version's statistics to its series (creating the series for a first load). Returns the
   * function to call once the version has drained and its statistics can no longer change.
   */
  attach(stats: ModelStats, config: FrozenModelConfig, loadDurationNs?: number): () => void {
    const tags: Record<string, string> = {};
    for (const k of Object.keys(config.metric_tags).sort()) tags[k] = config.metric_tags[k];
    const key = JSON.stringify([stats.modelName, stats.version, tags]);
    let series = this.series.get(key);
    if (!series) {
      series = new Series(
        this.observers,
        key,
        stats.modelName,
        stats.version,
        Object.freeze(tags),
        bucketsOf(config),
        this.options.responseCache === true && config.response_cache?.enable === true,
      );
      this.series.set(key, series);
    }
    if (loadDurationNs !== undefined) series.loadDurationSecs = loadDurationNs / 1e9;
    series.live.add(stats);
    stats.sink = series;
    const s = series;
    return () => {
      s.retire(stats);
      if (stats.sink === s) stats.sink = undefined;
      if (s.live.size === 0 && this.series.get(s.key) === s) this.series.delete(s.key);
    };
  }

  metricSeries(): readonly MetricSeries[] {
    const collator = (a: Series, b: Series): number =>
      a.model < b.model
        ? -1
        : a.model > b.model
          ? 1
          : Number(a.version) - Number(b.version) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    return [...this.series.values()].sort(collator);
  }

  addLatencyObserver(observer: LatencyObserver): () => void {
    this.observers.add(observer);
    return () => {
      this.observers.delete(observer);
    };
  }
}
