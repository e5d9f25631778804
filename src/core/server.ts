/**
 * InferenceServer: the one data plane behind every frontend. It owns the repository manager and answers
 * the InferenceServerApi; it knows no protocol. Frontends (or an application embedding Nereid) call it.
 */
import { invalidArg } from '../common/errors.js';
import { isLogFormat, type Logger } from '../common/logger.js';
import type { JsonObject } from '../model-config/json.js';
import { modelConfigToJson } from '../model-config/index.js';
import type { ServableVersion } from './model/servable.js';
import {
  collectCustomMetrics,
  DEFAULT_CUSTOM_METRICS_TIMEOUT_MS,
  type ModelCustomMetrics,
} from './model/custom-metrics.js';
import { ModelVersion, modelMetadataOf } from './model/model-version.js';
import type { OnDemandStatus } from './repository/index.js';
import { VersionHandle, type ResolvedModel } from './model-handle.js';
import type { InferenceServerApi } from './server-api.js';
import { DEFAULT_TRACE_OPTIONS } from './trace/options.js';
import { Tracer } from './trace/tracer.js';
import { isInferenceTrace, type RequestTrace, type TraceCarrier } from './trace/types.js';
import { CudaSharedMemory, SystemSharedMemoryManager } from './shm/index.js';
import type {
  CudaSharedMemoryRegionStatus,
  LogSettingsUpdate,
  LogSettingsView,
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

/** What the server needs from the repository manager. */
export interface RepositoryPort {
  /** A READY version ('' / undefined = the default one); throws NOT_FOUND / UNAVAILABLE. */
  getVersion(name: string, version?: string): ServableVersion;
  /** Every version currently loaded (any state that can still serve or drain). */
  loadedVersions(): ServableVersion[];
  /** READY version numbers of a model, ascending. */
  readyVersions(name: string): number[];
  /** Every model the server is expected to serve is READY (strict readiness). */
  allReady(): boolean;
  index(readyOnly: boolean): RepositoryIndexEntry[];
  load(name: string, options?: LoadOptions): Promise<void>;
  unload(name: string, options: { unloadDependents: boolean }): Promise<void>;
  /** On-demand mode: undefined when `name` serves now, else its load (ModelRepositoryManager). */
  ensureServable?(name: string, caller?: string): Promise<bigint> | undefined;
  /** On-demand mode's limits, counters and measured memory; undefined in the other modes. */
  onDemandStatus?(): OnDemandStatus | undefined;
}

export interface ServerIdentity {
  /** `--id`; Triton answers 'triton'. */
  readonly name: string;
  readonly version: string;
  readonly strictReadiness: boolean;
}

/** Extensions this build supports, as advertised by GET /v2. */
export const SUPPORTED_EXTENSIONS: readonly string[] = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'system_shared_memory',
  // Answered as Triton answers it without a GPU: status and unregister work, register is refused.
  'cuda_shared_memory',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];

export class InferenceServer implements InferenceServerApi {
  private started = false;
  private stopping = false;
  readonly tracer: Tracer;
  private readonly cudaSharedMemory: CudaSharedMemory;

  constructor(
    private readonly identity: ServerIdentity,
    private readonly repository: RepositoryPort,
    private readonly log: Logger,
    /** `--log-file`, reported read-only by the logging extension. */
    private readonly logFile = '',
    /** System shared-memory regions (`--allow-client-shm`); the caller closes it on stop. */
    private readonly sharedMemory = new SystemSharedMemoryManager({ allowClientShm: false }),
    /** `--trace-config` and friends; tracing off by default. */
    traceOptions = DEFAULT_TRACE_OPTIONS,
  ) {
    this.cudaSharedMemory = new CudaSharedMemory(sharedMemory);
    this.tracer = new Tracer(traceOptions, log, (name) =>
      this.repository.index(false).some((e) => e.name === name),
    );
  }

  /** Marks startup complete (called once the initial model loads have settled). */
  markStarted(): void {
    this.started = true;
  }

  /** Marks the server as shutting down: not ready, still live until the process exits. */
  markStopping(): void {
    this.stopping = true;
  }

  isLive(): boolean {
    return true;
  }

  isReady(): boolean {
    if (!this.started || this.stopping) return false;
    return this.identity.strictReadiness ? this.repository.allReady() : true;
  }

  serverMetadata(): ServerMetadata {
    return {
      name: this.identity.name,
      version: this.identity.version,
      extensions: [...SUPPORTED_EXTENSIONS],
    };
  }

  private version(name: string, version?: string): ServableVersion {
    return this.repository.getVersion(name, version);
  }

  isModelReady(name: string, version?: string): boolean {
    try {
      return this.repository.getVersion(name, version).isReady();
    } catch {
      return false;
    }
  }

  modelMetadata(name: string, version?: string): ModelMetadata {
    const v = this.repository.getVersion(name, version);
    const versions = version ? [String(v.version)] : this.repository.readyVersions(name).map(String);
    return modelMetadataOf(v.config, versions);
  }

  modelConfigJson(name: string, version?: string): JsonObject {
    return modelConfigToJson(this.repository.getVersion(name, version).config);
  }

  resolveModel(name: string, version?: string, queuedSince?: bigint): ResolvedModel {
    return new VersionHandle(name, this.version(name, version), this.sharedMemory, queuedSince);
  }

  whenServable(name: string, _version?: string, caller?: string): Promise<bigint> | undefined {
    return this.repository.ensureServable?.(name, caller);
  }

  infer(request: InferenceRequest): AsyncIterable<InferenceResponse> {
    const wait = this.whenServable(request.modelName, request.modelVersion, request.callerModel);
    if (wait !== undefined) return this.inferAfter(wait, request);
    return this.inferNow(request);
  }

  private async *inferAfter(
    wait: Promise<bigint>,
    request: InferenceRequest,
  ): AsyncGenerator<InferenceResponse, void, undefined> {
    const since = await wait;
    yield* this.inferNow(request, since);
  }

  private inferNow(request: InferenceRequest, queuedSince?: bigint): AsyncIterable<InferenceResponse> {
    const model = this.resolveModel(request.modelName, request.modelVersion, queuedSince);
    try {
      return model.stream(withChildTrace(request));
    } finally {
      // The version has accepted (or refused) the request, or the run holds it (model-handle.ts).
      model.release();
    }
  }

  startTrace(modelName: string, carrier?: TraceCarrier): RequestTrace | undefined {
    return this.tracer.start(modelName, carrier);
  }

  async inferOnce(request: InferenceRequest): Promise<InferenceResponse> {
    const wait = this.whenServable(request.modelName, request.modelVersion, request.callerModel);
    const since = wait === undefined ? undefined : await wait;
    const model = this.resolveModel(request.modelName, request.modelVersion, since);
    try {
      return await model.infer(request);
    } finally {
      model.release();
    }
  }

  modelStatistics(name?: string, version?: string): ModelStatistics[] {
    if (name === undefined || name === '') {
      return this.repository
        .loadedVersions()
        .sort((a, b) => a.modelName.localeCompare(b.modelName) || a.version - b.version)
        .map((v) => v.stats.snapshot());
    }
    // Triton's statistics API answers INVALID_ARG with its own wording, not the inference path's NOT_FOUND.
    const all = this.repository
      .loadedVersions()
      .filter((v) => v.modelName === name)
      .sort((a, b) => a.version - b.version);
    if (all.length === 0) throw invalidArg(`requested model '${name}' is not available`);
    if (version) {
      const v = all.find((x) => String(x.version) === version);
      if (!v) throw invalidArg(`requested model version is not available for model '${name}'`);
      return [v.stats.snapshot()];
    }
    return all.map((v) => v.stats.snapshot());
  }

  /**
   * The repository's index, where a READY version whose model reports itself not ready (model-health.ts)
   * shows as UNAVAILABLE with that reason, and is left out of a ready-only index.
   */
  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[] {
    const entries = this.repository.index(readyOnly);
    const notReady = new Map<string, string>();
    for (const v of this.repository.loadedVersions()) {
      const reason = v instanceof ModelVersion ? v.notReadyReason() : undefined;
      if (reason !== undefined) notReady.set(`${v.modelName}\0${v.version}`, reason);
    }
    if (notReady.size === 0) return entries;
    return entries.flatMap((e) => {
      const reason =
        e.state === 'READY' && e.version !== undefined ? notReady.get(`${e.name}\0${e.version}`) : undefined;
      if (reason === undefined) return [e];
      return readyOnly ? [] : [{ ...e, state: 'UNAVAILABLE' as const, reason }];
    });
  }

  /** The instance count of every loaded model version that is READY, ordered by model and version. */
  modelInstanceCounts(): {
    model: string;
    version: string;
    count: number;
    restarts?: number;
    residentBytes?: number;
  }[] {
    return this.repository
      .loadedVersions()
      .filter((v): v is ModelVersion => v instanceof ModelVersion && v.isReady())
      .map((v) => ({
        model: v.modelName,
        version: String(v.version),
        count: v.instanceCount,
        // Instances in processes of their own (Python stubs): their restarts and resident memory.
        ...v.instanceProcesses(),
      }))
      .sort((a, b) =>
        a.model === b.model ? Number(a.version) - Number(b.version) : a.model < b.model ? -1 : 1,
      );
  }

  /**
   * The metric families every READY model version defined itself (ModelHandle.customMetrics), ordered by
   * model and version. Each version gets `timeoutMs` to answer; one that does not (or fails) comes back
   * with no families and an `error`, so a scrape never waits longer than that.
   */
  customMetrics(timeoutMs = DEFAULT_CUSTOM_METRICS_TIMEOUT_MS): Promise<ModelCustomMetrics[]> {
    const versions = this.repository
      .loadedVersions()
      .filter((v): v is ModelVersion => v instanceof ModelVersion);
    return collectCustomMetrics(versions, timeoutMs);
  }

  /** On-demand mode's limits, counters and each model's measured memory (metrics); undefined otherwise. */
  onDemandStatus(): OnDemandStatus | undefined {
    return this.repository.onDemandStatus?.();
  }

  loadModel(name: string, options?: LoadOptions): Promise<void> {
    return this.repository.load(name, options);
  }

  unloadModel(name: string, options?: { unloadDependents?: boolean }): Promise<void> {
    return this.repository.unload(name, { unloadDependents: options?.unloadDependents === true });
  }

  systemSharedMemoryStatus(name?: string): SystemSharedMemoryRegionStatus[] {
    return this.sharedMemory.status(name);
  }

  registerSystemSharedMemory(name: string, key: string, offset: number, byteSize: number): Promise<void> {
    return this.sharedMemory.register(name, key, offset, byteSize);
  }

  unregisterSystemSharedMemory(name?: string): Promise<void> {
    return this.sharedMemory.unregister(name);
  }

  cudaSharedMemoryStatus(name?: string): CudaSharedMemoryRegionStatus[] {
    return this.cudaSharedMemory.status(name);
  }

  registerCudaSharedMemory(name: string, _rawHandle: Buffer, _deviceId: number, _byteSize: number): void {
    this.cudaSharedMemory.register(name);
  }

  unregisterCudaSharedMemory(_name?: string): void {
    this.cudaSharedMemory.unregister();
  }

  logSettings(): LogSettingsView {
    const s = this.log.settings;
    return {
      log_file: this.logFile,
      log_info: s.logInfo,
      log_warning: s.logWarning,
      log_error: s.logError,
      log_verbose_level: s.logVerbose,
      log_format: s.logFormat,
    };
  }

  updateLogSettings(update: LogSettingsUpdate): LogSettingsView {
    const s = this.log.settings;
    // Validate everything before changing anything.
    const bool = (k: string, v: unknown): boolean => {
      if (typeof v !== 'boolean') throw invalidArg(`expect boolean for '${k}'`);
      return v;
    };
    const next = { ...s };
    if (update.log_info !== undefined) next.logInfo = bool('log_info', update.log_info);
    if (update.log_warning !== undefined) next.logWarning = bool('log_warning', update.log_warning);
    if (update.log_error !== undefined) next.logError = bool('log_error', update.log_error);
    if (update.log_verbose_level !== undefined) {
      const v = update.log_verbose_level;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
        throw invalidArg(`expect unsigned integer for 'log_verbose_level'`);
      }
      next.logVerbose = v;
    }
    if (update.log_format !== undefined) {
      if (!isLogFormat(update.log_format)) {
        throw invalidArg(`invalid argument for 'log_format', got: ${String(update.log_format)}`);
      }
      next.logFormat = update.log_format;
    }
    Object.assign(s, next);
    return this.logSettings();
  }

  traceSettings(model?: string): TraceSettings {
    return this.tracer.settings(model);
  }

  updateTraceSettings(model: string | undefined, update: TraceSettingsUpdate): TraceSettings {
    return this.tracer.update(model, update);
  }
}

/**
 * A request a model sends (BLS) with its own request's trace (`trace=request.trace()` in Python) runs
 * under a child of that trace, as Triton's does.
 */
function withChildTrace(request: InferenceRequest): InferenceRequest {
  const parent = request.parentTrace;
  if (parent === undefined || request.trace !== undefined || !isInferenceTrace(parent)) return request;
  return { ...request, trace: parent.spawn() };
}
