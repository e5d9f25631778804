/**
 * The package's public entry (`import ... from 'nereid-server'`):
 * - the in-process API: `Nereid.start({ modelRepository })` → NereidServer (infer, inferStream, load,
 *   unload, listenHttp/listenGrpc/listenMetrics, close) — docs/embedding.md;
 * - the model-author SDK (Tensor, InferenceRequest, InferenceResponse, ...), also `nereid-server/sdk` — what a
 *   JavaScript/TypeScript model imports (docs/javascript-models.md);
 * - the command line's composition: startNereid from tritonserver-style flags (parseFlags).
 * The core's wire-level request types keep their names with a `Core` prefix where the SDK has a class of
 * the same name.
 */
export * from './sdk/index.js';
export * from './embedded/index.js';
export { startNereid, type RunningNereid, type Endpoint } from './compose/compose.js';
export { parseFlags } from './compose/flags.js';
export type { ServerOptions } from './compose/options.js';
export type { InferenceServerApi, ResolvedModel } from './core/index.js';
export type {
  InferenceRequest as CoreInferenceRequest,
  InferenceResponse as CoreInferenceResponse,
  InferInput,
  OutputTensor,
  RequestedOutput,
  SharedMemoryRef,
  TensorMetadata,
  ModelMetadata,
  ServerMetadata,
  ModelVersionState,
  RepositoryIndexEntry,
  LoadOptions,
  StatisticDuration,
  InferStatistics,
  InferBatchStatistics,
  ModelStatistics,
  SystemSharedMemoryRegionStatus,
  LogSettingsView,
  LogSettingsUpdate,
  TraceSettings,
  TraceSettingsUpdate,
} from './core/index.js';
export { Logger, type LogSettings } from './common/logger.js';
export type { Tensor as CoreTensor } from './common/tensor.js';
