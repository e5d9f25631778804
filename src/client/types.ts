/**
 * What both clients share: the per-call options, the answers of the metadata, model-control, statistics,
 * shared-memory, logging and trace APIs (field names as in Triton's HTTP JSON, so they read like Triton's
 * documentation whichever protocol carried them), and the InferenceClient interface HttpClient and
 * GrpcClient implement.
 */
import type { ModelMetadata, ServerMetadata, TensorMetadata } from '../common/metadata.js';
import type { TraceSettings } from '../common/trace-settings.js';
import type {
  InferBatchStatistics,
  InferResponseStatistics,
  InferStatistics,
  StatisticDuration,
} from '../common/statistics.js';
import type { InferInput, InferRequestedOutput, ParameterValue } from './infer-input.js';
import type { InferResult } from './infer-result.js';

export interface CallOptions {
  /** Extra headers (HTTP) or metadata (gRPC) for this call. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Aborts the call; the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

export interface InferOptions extends CallOptions {
  /** '' or omitted: the version the model's version policy picks. */
  readonly modelVersion?: string | number;
  /** Outputs to return; omitted: every output, as binary data. */
  readonly outputs?: readonly InferRequestedOutput[];
  readonly requestId?: string;
  /** Correlation id of a sequence (0 / '' / omitted: not in a sequence). */
  readonly sequenceId?: number | bigint | string;
  readonly sequenceStart?: boolean;
  readonly sequenceEnd?: boolean;
  /** 1 is the highest priority; 0 / omitted: the model's default. */
  readonly priority?: number;
  /** Server-side queue timeout in microseconds (needs `allow_timeout_override` in the model config). */
  readonly timeout?: number;
  /** Custom request parameters passed to the model. */
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
}

// The metadata answers as the server gives them: common/metadata.ts.
export type { TensorMetadata, ModelMetadata, ServerMetadata };

/** The model configuration in Triton's JSON form (model_config.proto field names). */
export type ModelConfigJson = Record<string, unknown>;

export interface RepositoryIndexEntry {
  name: string;
  /** Absent when no version of the model was loaded or attempted. */
  version?: string;
  /** READY, UNAVAILABLE, LOADING, UNLOADING, ... ('' when the server does not know the model's state) */
  state: string;
  reason: string;
}

// The statistics records the client returns as they are: common/statistics.ts.
export type { StatisticDuration, InferStatistics, InferBatchStatistics, InferResponseStatistics };

export interface MemoryUsage {
  type: string;
  id: number;
  byte_size: number;
}

export interface ModelStatistics {
  name: string;
  version: string;
  /** Milliseconds since the epoch; 0 before the first inference. */
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: InferStatistics;
  batch_stats: InferBatchStatistics[];
  memory_usage: MemoryUsage[];
  response_stats: Record<string, InferResponseStatistics>;
}

export interface LoadModelOptions extends CallOptions {
  /** A model configuration that replaces config.pbtxt for this load: JSON text or an object. */
  readonly config?: string | Readonly<Record<string, unknown>>;
  /**
   * Files that override the model directory's, keyed by path relative to it (`1/model.onnx`; a leading
   * `file:` is accepted too). Triton requires `config` with them.
   */
  readonly files?: Readonly<Record<string, Uint8Array | string>>;
}

export interface UnloadModelOptions extends CallOptions {
  /** Also unload the models that depend on this one (ensembles). */
  readonly unloadDependents?: boolean;
}

export interface RepositoryIndexOptions extends CallOptions {
  /** Only models that are ready. */
  readonly ready?: boolean;
}

export interface SystemSharedMemoryStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

export interface CudaSharedMemoryStatus {
  name: string;
  device_id: number;
  byte_size: number;
}

export interface LogSettings {
  log_file?: string;
  log_info?: boolean;
  log_warning?: boolean;
  log_error?: boolean;
  log_verbose_level?: number;
  log_format?: string;
  [key: string]: string | number | boolean | undefined;
}

// Trace settings as the server answers them: common/trace-settings.ts.
export type { TraceSettings };
/** A trace settings update; null clears a model's key back to the global value. */
export type TraceSettingsUpdate = Record<string, string | number | string[] | null>;

/** The calls HttpClient and GrpcClient both offer, with the same arguments and answers. */
export interface InferenceClient {
  isServerLive(options?: CallOptions): Promise<boolean>;
  isServerReady(options?: CallOptions): Promise<boolean>;
  isModelReady(name: string, version?: string | number, options?: CallOptions): Promise<boolean>;
  serverMetadata(options?: CallOptions): Promise<ServerMetadata>;
  modelMetadata(name: string, version?: string | number, options?: CallOptions): Promise<ModelMetadata>;
  modelConfig(name: string, version?: string | number, options?: CallOptions): Promise<ModelConfigJson>;

  infer(model: string, inputs: readonly InferInput[], options?: InferOptions): Promise<InferResult>;

  /** Statistics of one model (and version), or of every model when `name` is omitted. */
  modelStatistics(
    name?: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelStatistics[]>;

  repositoryIndex(options?: RepositoryIndexOptions): Promise<RepositoryIndexEntry[]>;
  loadModel(name: string, options?: LoadModelOptions): Promise<void>;
  unloadModel(name: string, options?: UnloadModelOptions): Promise<void>;

  systemSharedMemoryStatus(region?: string, options?: CallOptions): Promise<SystemSharedMemoryStatus[]>;
  registerSystemSharedMemory(
    region: string,
    key: string,
    byteSize: number,
    offset?: number,
    options?: CallOptions,
  ): Promise<void>;
  /** Omitting `region` unregisters every region. */
  unregisterSystemSharedMemory(region?: string, options?: CallOptions): Promise<void>;
  cudaSharedMemoryStatus(region?: string, options?: CallOptions): Promise<CudaSharedMemoryStatus[]>;
  registerCudaSharedMemory(
    region: string,
    rawHandle: Uint8Array,
    deviceId: number,
    byteSize: number,
    options?: CallOptions,
  ): Promise<void>;
  unregisterCudaSharedMemory(region?: string, options?: CallOptions): Promise<void>;

  logSettings(options?: CallOptions): Promise<LogSettings>;
  /** Returns the settings after the update. */
  updateLogSettings(settings: Readonly<LogSettings>, options?: CallOptions): Promise<LogSettings>;
  /** The global trace settings, or one model's when `model` is given. */
  traceSettings(model?: string, options?: CallOptions): Promise<TraceSettings>;
  /** Returns the settings after the update. */
  updateTraceSettings(
    settings: Readonly<TraceSettingsUpdate>,
    model?: string,
    options?: CallOptions,
  ): Promise<TraceSettings>;

  /** Releases connections; calls after close() fail. */
  close(): void;
}
