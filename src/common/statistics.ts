/**
 * The per-model statistics records both sides of the wire read the same way: field names as in Triton's
 * statistics JSON (server docs/protocol/extension_statistics.md). The core fills them (core/types.ts
 * ModelStatistics), the client returns them (client/types.ts); written once here.
 */

export interface StatisticDuration {
  count: number;
  ns: number;
}

export interface InferStatistics {
  success: StatisticDuration;
  fail: StatisticDuration;
  queue: StatisticDuration;
  compute_input: StatisticDuration;
  compute_infer: StatisticDuration;
  compute_output: StatisticDuration;
  cache_hit: StatisticDuration;
  cache_miss: StatisticDuration;
}

export interface InferBatchStatistics {
  batch_size: number;
  compute_input: StatisticDuration;
  compute_infer: StatisticDuration;
  compute_output: StatisticDuration;
}

/** One entry of `response_stats` (decoupled models), keyed by the response's index within its request. */
export interface InferResponseStatistics {
  compute_infer: StatisticDuration;
  compute_output: StatisticDuration;
  success: StatisticDuration;
  fail: StatisticDuration;
  empty_response: StatisticDuration;
  cancel: StatisticDuration;
}
