/**
 * The per-request part of the metrics: latency summaries (summary_latencies=true) and the first-response
 * histogram (histogram_latencies=true). Unlike the counters, these need every observation, so this
 * observer is registered with the core only when one of them is enabled. State lives per series and goes
 * away with it (WeakMap), so a model unloaded and loaded again starts a fresh series, as in Triton.
 */
import type { LatencyObserver, MetricSeries, SuccessSample } from '../../core/index.js';
import { DEFAULT_FIRST_RESPONSE_BUCKETS_MS, type MetricsSettings } from './config.js';
import type { HistogramValues, SummaryValues } from './exposition.js';
import { TimeWindowQuantiles, type QuantileTarget } from './quantiles.js';

export class WindowedSummary {
  private count = 0;
  private sum = 0;
  private readonly window: TimeWindowQuantiles;

  constructor(
    private readonly targets: readonly QuantileTarget[],
    now?: () => number,
  ) {
    this.window = new TimeWindowQuantiles(targets, 60_000, 5, now);
  }

  observe(v: number): void {
    this.count++;
    this.sum += v;
    this.window.insert(v);
  }

  values(): SummaryValues {
    return {
      count: this.count,
      sum: this.sum,
      quantiles: this.targets.map((t) => [t.quantile, this.window.get(t.quantile)] as const),
    };
  }
}

export class BucketHistogram {
  private readonly counts: number[];
  private count = 0;
  private sum = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(v: number): void {
    this.count++;
    this.sum += v;
    // Few buckets: a linear scan beats anything cleverer.
    for (let i = 0; i < this.bounds.length; i++) {
      if (v <= this.bounds[i]) {
        this.counts[i]++;
        return;
      }
    }
  }

  values(): HistogramValues {
    let cumulative = 0;
    const buckets = this.bounds.map((b, i) => [b, (cumulative += this.counts[i])] as const);
    return { count: this.count, sum: this.sum, buckets };
  }
}

export interface SeriesLatency {
  /** Absent for a series with a response cache (Triton disables it there: it would mislead). */
  readonly request: WindowedSummary | undefined;
  readonly queue: WindowedSummary;
  readonly computeInput: WindowedSummary;
  readonly computeInfer: WindowedSummary;
  readonly computeOutput: WindowedSummary;
  /** Present for a series with a response cache: hit and miss durations. */
  readonly cacheHit: WindowedSummary | undefined;
  readonly cacheMiss: WindowedSummary | undefined;
  readonly firstResponse: BucketHistogram;
}

const US = 1_000;
const MS = 1_000_000;

export class LatencyTracker implements LatencyObserver {
  private readonly bySeries = new WeakMap<MetricSeries, SeriesLatency>();

  constructor(
    private readonly settings: MetricsSettings,
    private readonly now?: () => number,
  ) {}

  /** The series' state, created on first use (a scrape shows empty summaries for an idle model). */
  of(series: MetricSeries): SeriesLatency {
    let s = this.bySeries.get(series);
    if (!s) {
      const summary = (): WindowedSummary => new WindowedSummary(this.settings.quantiles, this.now);
      s = {
        request: series.cacheEnabled ? undefined : summary(),
        queue: summary(),
        computeInput: summary(),
        computeInfer: summary(),
        computeOutput: summary(),
        cacheHit: series.cacheEnabled ? summary() : undefined,
        cacheMiss: series.cacheEnabled ? summary() : undefined,
        firstResponse: new BucketHistogram(
          series.firstResponseBucketsMs ?? DEFAULT_FIRST_RESPONSE_BUCKETS_MS,
        ),
      };
      this.bySeries.set(series, s);
    }
    return s;
  }

  // Triton observes whole microseconds / milliseconds (integer division), and so do we.
  success(series: MetricSeries, sample: SuccessSample): void {
    if (!this.settings.summaryLatencies) return;
    const s = this.of(series);
    s.request?.observe(Math.floor(sample.requestNs / US));
    s.queue.observe(Math.floor(sample.queueNs / US));
    s.computeInput.observe(Math.floor(sample.computeInputNs / US));
    s.computeInfer.observe(Math.floor(sample.computeInferNs / US));
    s.computeOutput.observe(Math.floor(sample.computeOutputNs / US));
  }

  firstResponse(series: MetricSeries, ns: number): void {
    if (!this.settings.histogramLatencies) return;
    this.of(series).firstResponse.observe(Math.floor(ns / MS));
  }

  // Triton's cache hit: the queue summary and the cache hit summary (no request summary with a cache).
  cacheHit(series: MetricSeries, queueNs: number, hitNs: number): void {
    if (!this.settings.summaryLatencies) return;
    const s = this.of(series);
    s.queue.observe(Math.floor(queueNs / US));
    s.cacheHit?.observe(Math.floor(hitNs / US));
  }

  cacheMiss(series: MetricSeries, ns: number): void {
    if (!this.settings.summaryLatencies) return;
    this.of(series).cacheMiss?.observe(Math.floor(ns / US));
  }
}
