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
  cacheHitSummary: f(
    'nv_cache_hit_summary_per_model',
    'summary',
    'Summary of cache hit counts/durations per model, in microseconds.',
  ),
  cacheMissSummary: f(
    'nv_cache_miss_summary_per_model',
    'summary',
    'Summary of cache miss counts/durations per model, in microseconds.',
  ),
  // The cache itself, server-wide (what Triton's local cache publishes; gauges, as there).
  cacheUtil: f('nv_cache_util', 'gauge', 'Cache utilization [0.0 - 1.0]'),
  cacheEntries: f('nv_cache_num_entries', 'gauge', 'Number of responses stored in response cache'),
  cacheNumHits: f('nv_cache_num_hits', 'gauge', 'Number of cache hits in response cache'),
  cacheNumMisses: f('nv_cache_num_misses', 'gauge', 'Number of cache misses in response cache'),
  cacheLookups: f('nv_cache_num_lookups', 'gauge', 'Number of cache lookups in response cache'),
  cacheEvictions: f('nv_cache_num_evictions', 'gauge', 'Number of cache evictions in response cache'),
  cacheLookupDuration: f(
    'nv_cache_lookup_duration',
    'gauge',
    'Total cache lookup duration (hit and miss), in microseconds',
  ),
  cacheInsertionDuration: f(
    'nv_cache_insertion_duration',
    'gauge',
    'Total cache insertion duration, in microseconds',
  ),
  // Nereid's own cache families (no Triton counterpart).
  cacheErrors: f(
    'nereid_cache_errors_total',
    'counter',
    'Response cache lookups and inserts that failed and were answered by computing instead',
  ),
  cacheConnected: f(
    'nereid_cache_connected',
    'gauge',
    'Whether the Redis response cache is connected (1) or not (0)',
  ),
  // Nereid's operator families (no Triton counterpart; docs/metrics.md).
  buildInfo: f(
    'nereid_build_info',
    'gauge',
    'Always 1: the Nereid version and the Node.js version this server runs, as labels',
  ),
  modelState: f(
    'nereid_model_state',
    'gauge',
    'Every model version of the repository index: 1 for the state it is in (READY, LOADING, UNLOADING, UNAVAILABLE)',
  ),
  modelInstances: f(
    'nereid_model_instances',
    'gauge',
    'Instances of each READY model version (the instance_group counts in effect)',
  ),
  instanceRestarts: f(
    'nereid_model_instance_restarts_total',
    'counter',
    'Instance processes (Python stubs) of each READY model version replaced since it loaded (a crash, a hang past execution_timeout_seconds, stub_memory_limit_mb)',
  ),
  instanceResidentBytes: f(
    'nereid_model_instance_resident_bytes',
    'gauge',
    "Resident memory (VmRSS) of each READY model version's instance processes (Python stubs), summed",
  ),
  onDemandLoads: f(
    'nereid_model_on_demand_loads_total',
    'counter',
    'On-demand mode: loads of each model made by a request or the repository API, since the server started',
  ),
  onDemandLoadFailures: f(
    'nereid_model_on_demand_load_failures_total',
    'counter',
    'On-demand mode: loads of each model that failed',
  ),
  onDemandLoadSeconds: f(
    'nereid_model_on_demand_load_seconds_total',
    'counter',
    'On-demand mode: seconds spent loading each model (divide by the loads for the mean cold start)',
  ),
  onDemandEvictions: f(
    'nereid_model_evictions_total',
    'counter',
    'On-demand mode: times each model was unloaded to make room (least recently used)',
  ),
  modelResidentBytes: f(
    'nereid_model_resident_bytes',
    'gauge',
    "On-demand mode: measured memory of each loaded model (its Python stubs' RSS, or the server's RSS growth across its load)",
  ),
  modelsLoaded: f('nereid_models_loaded', 'gauge', 'On-demand mode: models holding a slot now'),
  maxLoadedModels: f(
    'nereid_max_loaded_models',
    'gauge',
    'On-demand mode: --max-loaded-models (0 = no limit)',
  ),
  modelMemoryBudget: f(
    'nereid_model_memory_budget_bytes',
    'gauge',
    'On-demand mode: --model-memory-budget in bytes (0 = no budget)',
  ),
  httpRequests: f(
    'nereid_http_requests_total',
    'counter',
    'HTTP requests answered, by endpoint and status code',
  ),
  grpcRequests: f('nereid_grpc_requests_total', 'counter', 'gRPC calls finished, by rpc and status'),
  // CPU (per interval, --allow-cpu-metrics).
  cpuUtilization: f('nv_cpu_utilization', 'gauge', 'CPU utilization rate [0.0 - 1.0]'),
  cpuMemoryTotal: f('nv_cpu_memory_total_bytes', 'gauge', 'CPU total memory (RAM), in bytes'),
  cpuMemoryUsed: f('nv_cpu_memory_used_bytes', 'gauge', 'CPU used memory (RAM), in bytes'),
});
