/**
 * Collects the metric families that loaded models defined themselves (ModelHandle.customMetrics), for the
 * metrics endpoint. Every version is asked at once and each answer is bounded by a timeout, so one slow
 * or stuck model costs a scrape at most `timeoutMs` and leaves the other models' families intact.
 */
import type { CustomMetricFamily } from '../../backend-api/backend.js';
import { NereidError } from '../../common/errors.js';

/** One loaded version's answer. */
export interface ModelCustomMetrics {
  readonly model: string;
  readonly version: string;
  readonly families: readonly CustomMetricFamily[];
  /** Why `families` is empty: the model failed or did not answer within the timeout. */
  readonly error?: string;
}

/** What a version must offer to be asked (ModelVersion does). */
export interface CustomMetricsProvider {
  readonly modelName: string;
  readonly version: number;
  customMetrics(): Promise<readonly CustomMetricFamily[]>;
}

export const DEFAULT_CUSTOM_METRICS_TIMEOUT_MS = 2000;

async function ask(v: CustomMetricsProvider, timeoutMs: number): Promise<ModelCustomMetrics> {
  const base = { model: v.modelName, version: String(v.version) };
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<ModelCustomMetrics>((resolve) => {
    timer = setTimeout(
      () => resolve({ ...base, families: [], error: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
  });
  const answer = (async (): Promise<ModelCustomMetrics> => {
    try {
      const families = await v.customMetrics();
      return { ...base, families: Array.isArray(families) ? families : [] };
    } catch (err) {
      return { ...base, families: [], error: NereidError.from(err).message };
    }
  })();
  try {
    return await Promise.race([answer, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every provider's families, ordered by model name and version; resolves within about `timeoutMs`. */
export async function collectCustomMetrics(
  versions: readonly CustomMetricsProvider[],
  timeoutMs: number = DEFAULT_CUSTOM_METRICS_TIMEOUT_MS,
): Promise<ModelCustomMetrics[]> {
  const sorted = [...versions].sort(
    (a, b) => (a.modelName < b.modelName ? -1 : a.modelName > b.modelName ? 1 : 0) || a.version - b.version,
  );
  return Promise.all(sorted.map((v) => ask(v, timeoutMs)));
}
