/**
 * The API every frontend (HTTP, gRPC, the in-process embedding) calls. One data plane behind all
 * protocols: handlers translate wire formats to these calls and back, nothing more. Every method throws
 * NereidError on failure.
 */
import type { JsonObject } from '../model-config/json.js';
import type {
  LogSettingsUpdate,
  LogSettingsView,
  CudaSharedMemoryRegionStatus,
  SystemSharedMemoryRegionStatus,
  TraceSettings,
  TraceSettingsUpdate,
  InferenceRequest,
  InferenceResponse,
  LoadOptions,
  ModelMetadata,
  ModelStatistics,
  RepositoryIndexEntry,
  ServerMetadata,
} from './types.js';
import type { ResolvedModel } from './model-handle.js';
import type { RequestTrace, TraceCarrier } from './trace/types.js';

export interface InferenceServerApi {
  isLive(): boolean;
  /** With strict readiness: live, started, and every model READY; otherwise live and started. */
  isReady(): boolean;
  serverMetadata(): ServerMetadata;

  /** `version` '' or undefined = the default version. Unknown model → false (never throws). */
  isModelReady(name: string, version?: string): boolean;
  modelMetadata(name: string, version?: string): ModelMetadata;
  /** The model config as Triton's JSON (GET /v2/models/<m>/config). */
  modelConfigJson(name: string, version?: string): JsonObject;
  /**
   * Resolves a model name and version ('' or undefined = the default version) once for one request: the
   * handle answers what a frontend asks before running it (decoupled, shared-memory use, metadata,
   * config) and runs it on that version, which it holds until release() (model-handle.ts). Throws
   * NOT_FOUND / UNAVAILABLE as an inference request for the model would.
   */
  resolveModel(name: string, version?: string, queuedSince?: bigint): ResolvedModel;
  /**
   * On-demand model control: undefined when resolveModel(name) can answer now, else a promise that
   * resolves once the model is loaded (with the time the wait began: pass it to resolveModel as
   * `queuedSince`, so the wait counts as the request's queue time) or rejects with why it cannot be (its
   * load failed, no room within --model-load-wait-secs). Frontends await it before resolveModel. Optional:
   * an API without on-demand loading never waits.
   */
  whenServable?(name: string, version?: string): Promise<bigint> | undefined;

  /**
   * Runs one request (resolveModel + stream + release). The stream yields 0..n responses; the last has
   * final=true. A non-decoupled model yields exactly one. Validation errors reject the first next() (or
   * are thrown synchronously by infer()).
   */
  infer(request: InferenceRequest): AsyncIterable<InferenceResponse>;
  /** Convenience for non-decoupled models: the one (final) response. */
  inferOnce(request: InferenceRequest): Promise<InferenceResponse>;

  /** name undefined = every model. */
  modelStatistics(name?: string, version?: string): ModelStatistics[];

  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[];
  loadModel(name: string, options?: LoadOptions): Promise<void>;
  unloadModel(name: string, options?: { unloadDependents?: boolean }): Promise<void>;

  // System shared memory extension (needs --allow-client-shm): regions are POSIX shm objects by key.
  systemSharedMemoryStatus(name?: string): SystemSharedMemoryRegionStatus[];
  registerSystemSharedMemory(name: string, key: string, offset: number, byteSize: number): Promise<void>;
  /** name undefined or '' = every region. */
  unregisterSystemSharedMemory(name?: string): Promise<void>;
  // CUDA shared memory extension, as Triton answers it on a machine without a GPU (core/shm/cuda.ts):
  // status lists no region, unregister has nothing to do, register is refused.
  cudaSharedMemoryStatus(name?: string): CudaSharedMemoryRegionStatus[];
  /**
   * Always throws: ALREADY_EXISTS for a name already taken, else INVALID_ARG (no GPU). The handle,
   * device and size are what the frontends parsed, checked there as Triton checks them.
   */
  registerCudaSharedMemory(name: string, rawHandle: Buffer, deviceId: number, byteSize: number): void;
  /** name undefined or '' = every region. */
  unregisterCudaSharedMemory(name?: string): void;

  // Logging extension.
  logSettings(): LogSettingsView;
  updateLogSettings(update: LogSettingsUpdate): LogSettingsView;

  /**
   * Samples an inference request for tracing (call once per request, before decoding it): a trace the
   * frontend passes in InferenceRequest.trace and ends after its reply, or undefined (not traced). Optional:
   * an API without tracing never traces.
   */
  startTrace?(modelName: string, carrier?: TraceCarrier): RequestTrace | undefined;
  // Trace extension: model undefined = the global settings.
  traceSettings(model?: string): TraceSettings;
  updateTraceSettings(model: string | undefined, update: TraceSettingsUpdate): TraceSettings;
}
