/**
 * The metric families a model defines itself (pb_utils.MetricFamily, the JavaScript SDK's MetricFamily), as
 * the backends report them to the core and the metrics frontend prints them. In common/ because both the
 * backend contract (backend-api/) and the model authors' SDK (sdk/metrics.ts) speak them.
 */
export type CustomMetricKind = 'counter' | 'gauge' | 'histogram';

/** One labelled series of a model-defined metric, as the model holds it right now. */
export interface CustomMetricSample {
  readonly labels: Readonly<Record<string, string>>;
  /** Counter/gauge value; for a histogram, the sum of observations. */
  readonly value: number;
  /** Histograms: upper bounds and the cumulative count at each (same length), plus the total count. */
  readonly buckets?: readonly number[];
  readonly bucketCounts?: readonly number[];
  readonly count?: number;
}

/** A metric family a model defined (pb_utils.MetricFamily, the JavaScript SDK's MetricFamily). */
export interface CustomMetricFamily {
  readonly name: string;
  readonly description: string;
  readonly kind: CustomMetricKind;
  readonly metrics: readonly CustomMetricSample[];
}
