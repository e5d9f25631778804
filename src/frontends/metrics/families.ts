/**
 * Triton's metric families in one table: names, types and HELP texts exactly as Triton's core registers
 * them (src/metrics.cc), so existing dashboards and alerts work unchanged.
 */

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary';

export interface Family {
  readonly name: string;
  readonly type: FamilyType;
  readonly help: string;
}

const f = (name: string, type: FamilyType, help: string): Family => Object.freeze({ name, type, help });

export const FAMILIES = Object.freeze({
  // Counts (always on).
  success: f(
    'nv_inference_request_success',
    'counter',
    'Number of successful inference requests, all batch sizes',
  ),
  failure: f(
    'nv_inference_request_failure',
    'counter',
    'Number of failed inference requests, all batch sizes',
  ),
  count: f(
    'nv_inference_count',
    'counter',
    'Number of inferences performed (does not include cached requests)',
  ),
  execCount: f(
    'nv_inference_exec_count',
    'counter',
    'Number of model executions performed (does not include cached requests)',
  ),
  // Latency counters (counter_latencies, on by default).
  requestDuration: f(
    'nv_inference_request_duration_us',
    'counter',
    'Cumulative inference request duration in microseconds (includes cached requests)',
  ),
  queueDuration: f(
    'nv_inference_queue_duration_us',
    'counter',
    'Cumulative inference queuing duration in microseconds (includes cached requests)',
  ),
  computeInputDuration: f(
    'nv_inference_compute_input_duration_us',
    'counter',
    'Cumulative compute input duration in microseconds (does not include cached requests)',
  ),
  computeInferDuration: f(
    'nv_inference_compute_infer_duration_us',
    'counter',
    'Cumulative compute inference duration in microseconds (does not include cached requests)',
  ),
  computeOutputDuration: f(
    'nv_inference_compute_output_duration_us',
    'counter',
    'Cumulative inference compute output duration in microseconds (does not include cached requests)',
  ),
  // Gauges.
  pending: f(
    'nv_inference_pending_request_count',
    'gauge',
    'Instantaneous number of pending requests awaiting execution per-model.',
  ),
  loadDuration: f('nv_model_load_duration_secs', 'gauge', 'Model load time in seconds'),
  pinnedTotal: f(
    'nv_pinned_memory_pool_total_bytes',
    'gauge',
    'Pinned memory pool total memory size, in bytes',
  ),
  pinnedUsed: f('nv_pinned_memory_pool_used_bytes', 'gauge', 'Pinned memory pool used memory size, in bytes'),
  // Response cache (only for models that use a cache).
  cacheHits: f('nv_cache_num_hits_per_model', 'counter', 'Number of cache hits per model'),
  cacheHitDuration: f(
    'nv_cache_hit_duration_per_model',
    'counter',
    'Total cache hit duration per model, in microseconds',
  ),
  cacheMisses: f('nv_cache_num_misses_per_model', 'counter', 'Number of cache misses per model'),
  cacheMissDuration: f(
    'nv_cache_miss_duration_per_model',
    'counter',
    'Total cache miss (insert+lookup) duration per model, in microseconds',
  ),
  // Histograms (histogram_latencies=true).
  firstResponse: f(
    'nv_inference_first_response_histogram_ms',
    'histogram',
    'Duration from request to first response in milliseconds',
  ),
  // Summaries (summary_latencies=true).
  requestSummary: f(
    'nv_inference_request_summary_us',
    'summary',
    'Summary of inference request duration in microseconds (includes cached requests)',
  ),
  queueSummary: f(
    'nv_inference_queue_summary_us',
    'summary',
    'Summary of inference queuing duration in microseconds (includes cached requests)',
  ),
  computeInputSummary: f(
    'nv_inference_compute_input_summary_us',
    'summary',
    'Cumulative compute input duration in microseconds (does not include cached requests)',
  ),
  computeInferSummary: f(
    'nv_inference_compute_infer_summary_us',
    'summary',
    'Cumulative compute inference duration in microseconds (does not include cached requests)',
  ),
  computeOutputSummary: f(
    'nv_inference_compute_output_summary_us',
    'summary',
    'Cumulative inference compute output duration in microseconds (does not include cached requests)',
  ),
  // CPU (per interval, --allow-cpu-metrics).
  cpuUtilization: f('nv_cpu_utilization', 'gauge', 'CPU utilization rate [0.0 - 1.0]'),
  cpuMemoryTotal: f('nv_cpu_memory_total_bytes', 'gauge', 'CPU total memory (RAM), in bytes'),
  cpuMemoryUsed: f('nv_cpu_memory_used_bytes', 'gauge', 'CPU used memory (RAM), in bytes'),
});
