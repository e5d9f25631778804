/**
 * The core's face: everything a frontend, the embedding API (embedded/) and the package entry (index.ts)
 * may use of the core — the server API they call (InferenceServerApi, a ResolvedModel handle), the data
 * types it takes and returns (types.ts), what a frontend adds to a request's trace, and what the metrics
 * frontend reads. Nothing else of src/core/ is imported from outside it (the layer lint, eslint.config.js,
 * refuses deeper imports); the composition root wires the core's parts through ./assembly.ts.
 */
export type * from './types.js';
export type { InferenceServerApi } from './server-api.js';
export type { ResolvedModel } from './model-handle.js';

// Tracing: the frontend's side of a sampled exchange and where the request came in.
export type { RequestTrace, TraceCarrier, TraceEdge } from './trace/types.js';
export { hostAndPort, traceCarrier } from './trace/carrier.js';

// What the metrics frontend reads at scrape time.
export { FAILURE_REASONS, type SuccessSample } from './stats/model-stats.js';
export type { LatencyObserver, MetricSeries, MetricsSource } from './stats/registry.js';
export type { ModelCustomMetrics } from './model/custom-metrics.js';
export type { CacheMetrics } from './cache/index.js';
export type { OnDemandStatus } from './repository/index.js';

// CUDA shared memory: the size of the handle a registration carries.
export { CUDA_IPC_HANDLE_BYTES } from './shm/cuda.js';

// One inference call, as every frontend runs it: resolve, refuse a decoupled model, run (call.ts).
export {
  callRequest,
  forwardedParameters,
  refuseDecoupled,
  resolveCall,
  runCall,
  streamCall,
  type CallContext,
  type DecodedRequest,
} from './call.js';
