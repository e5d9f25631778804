/**
 * `--metrics-config <setting>=<value>` as Triton reads it: counter_latencies=false drops the *_duration_us
 * counters, summary_latencies=true adds the *_summary_us summaries, histogram_latencies=true adds the
 * first-response histogram, summary_quantiles="<q>:<error>,..." replaces the default quantiles. Like
 * Triton, only the exact strings "false"/"true" switch, and a malformed quantile pair is logged and skipped.
 */
import type { Logger } from '../../common/logger.js';
import type { QuantileTarget } from './quantiles.js';

export interface MetricsSettings {
  readonly counterLatencies: boolean;
  readonly summaryLatencies: boolean;
  readonly histogramLatencies: boolean;
  readonly quantiles: readonly QuantileTarget[];
}

/** prometheus-cpp's defaults as Triton sets them. */
export const DEFAULT_QUANTILES: readonly QuantileTarget[] = Object.freeze([
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.001 },
]);

/** Default first-response histogram buckets, in milliseconds. */
export const DEFAULT_FIRST_RESPONSE_BUCKETS_MS: readonly number[] = Object.freeze([100, 500, 2000, 5000]);

const KNOWN = new Set(['counter_latencies', 'summary_latencies', 'histogram_latencies', 'summary_quantiles']);

const NUMBER = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/** Parses "0.5:0.05,0.9:0.01"; bad pairs go to `onError` and are skipped. */
export function parseQuantiles(text: string, onError: (message: string) => void): QuantileTarget[] {
  const out: QuantileTarget[] = [];
  for (const pair of text.split(',')) {
    const colon = pair.indexOf(':');
    if (colon < 0) {
      onError(`Invalid option: [${pair}]. No ':' delimiter found. Expected format is <quantile>:<error>`);
      continue;
    }
    const q = pair.slice(0, colon);
    const e = pair.slice(colon + 1);
    if (!NUMBER.test(q) || !NUMBER.test(e)) {
      onError(`Invalid option: [${pair}]. Expected format is <quantile>:<error> with numbers`);
      continue;
    }
    const quantile = Number(q);
    const error = Number(e);
    if (quantile < 0 || quantile > 1 || error < 0 || error > 1) {
      onError(`Invalid option: [${pair}]. Quantile and error must be between 0 and 1`);
      continue;
    }
    out.push({ quantile, error });
  }
  return out;
}

export function metricsSettings(config: ReadonlyMap<string, string>, log?: Logger): MetricsSettings {
  const get = (k: string): string | undefined => config.get(k);
  for (const k of config.keys()) {
    if (!KNOWN.has(k)) log?.warn(`unknown --metrics-config setting '${k}' is ignored`);
  }
  let quantiles: readonly QuantileTarget[] = DEFAULT_QUANTILES;
  const qs = get('summary_quantiles');
  if (qs !== undefined) {
    const parsed = parseQuantiles(qs, (m) => log?.error(m));
    if (parsed.length > 0) quantiles = parsed;
  }
  return {
    counterLatencies: get('counter_latencies') !== 'false',
    summaryLatencies: get('summary_latencies') === 'true',
    histogramLatencies: get('histogram_latencies') === 'true',
    quantiles,
  };
}
