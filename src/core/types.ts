/**
 * The core's request and response types: what frontends build from the wire and read back. No HTTP or
 * gRPC here. Shapes are plain numbers (int64 dims beyond 2^53 are rejected at the edge).
 */
import type { LogFormat } from '../common/logger.js';
import type { DataType } from '../common/datatype.js';
import type { ModelMetadata, ServerMetadata, TensorMetadata } from '../common/metadata.js';
import type { InferBatchStatistics, InferStatistics, StatisticDuration } from '../common/statistics.js';
import type { Tensor } from '../common/tensor.js';
import type { Parameters, ParameterValue } from '../common/parameters.js';
import type { SharedMemoryRef } from '../common/shared-memory-ref.js';
import type { TraceSettings } from '../common/trace-settings.js';
import type { InferenceTrace, TraceSettingsUpdate } from './trace/types.js';

// Shared with the backends, the client and the SDK: common/parameters.ts.
export type { Parameters, ParameterValue };

// A slice of a registered shared-memory region, shared with the client: common/shared-memory-ref.ts.
export type { SharedMemoryRef };

export interface InferInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** Row-major bytes (BYTES: length-prefixed elements). Empty when `sharedMemory` is set. */
  readonly data: Buffer;
  /** The input's bytes live in a registered region; the core reads them before validation. */
  readonly sharedMemory?: SharedMemoryRef;
  readonly parameters?: Readonly<Parameters>;
}

export interface RequestedOutput {
  readonly name: string;
  /** e.g. `classification` (top-N count), `binary_data` (frontend-only, ignored by the core). */
  readonly parameters?: Readonly<Parameters>;
  /** Write this output into a registered region instead of returning its bytes. */
  readonly sharedMemory?: SharedMemoryRef;
}

/** A response tensor; when `sharedMemory` is set its bytes were written there and `data` is empty. */
export interface OutputTensor extends Tensor {
  readonly sharedMemory?: SharedMemoryRef;
}

export interface InferenceRequest {
  readonly modelName: string;
  /** '' or undefined selects the version policy's default (highest ready version). */
  readonly modelVersion?: string;
  readonly id?: string;
  readonly inputs: readonly InferInput[];
  /** Omitted → every output of the model. */
  readonly outputs?: readonly RequestedOutput[];
  /** Request parameters: sequence_id, sequence_start, sequence_end, priority, timeout, custom keys. */
  readonly parameters?: Readonly<Parameters>;
  /** Aborted when the client disconnects or cancels. */
  readonly signal?: AbortSignal;
  /** Set when the request is traced (a frontend sampled it, or it is an ensemble step of a traced one). */
  readonly trace?: InferenceTrace;
  /** A model's own request's trace token (BLS): the request is traced as its child. */
  readonly parentTrace?: unknown;
  /** The model that sends this request (BLS), for on-demand mode's eviction rules. */
  readonly callerModel?: string;
  /** Filled in by the core when the request ends, for the access log: nanoseconds queued and computing. */
  readonly timings?: RequestTimings;
}

/** What the core measured of one request (the access log reads it after the response). */
export interface RequestTimings {
  queueNs: number;
  computeNs: number;
}

export interface InferenceResponse {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly outputs: readonly OutputTensor[];
  readonly parameters: Readonly<Parameters>;
  /** Last response of the request. A non-decoupled model sends exactly one, final. */
  readonly final: boolean;
}

// Shared with the client: common/metadata.ts.
export type { TensorMetadata, ModelMetadata, ServerMetadata };

export type ModelVersionState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface RepositoryIndexEntry {
  name: string;
  /** Absent for a model with no version loaded or attempted. */
  version?: string;
  state: ModelVersionState;
  reason: string;
}

export interface LoadOptions {
  /** ModelConfig JSON that replaces config.pbtxt for this load. */
  readonly config?: string;
  /** `file:<version>/<path>` overrides: relative path → content. Require `config`. */
  readonly files?: ReadonlyMap<string, Buffer>;
}

// Shared with the client: common/statistics.ts.
export type { StatisticDuration, InferStatistics, InferBatchStatistics };

/** Field names as in Triton's statistics JSON (server docs/protocol/extension_statistics.md). */
export interface ModelStatistics {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: InferStatistics;
  batch_stats: InferBatchStatistics[];
  memory_usage: { type: string; id: number; byte_size: number }[];
  response_stats: Record<string, unknown>;
}

/** GET /v2/systemsharedmemory/status entries (field names as Triton's JSON). */
export interface SystemSharedMemoryRegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

/** One CUDA shared-memory region (Triton's status fields); a server without GPUs never has one. */
export interface CudaSharedMemoryRegionStatus {
  name: string;
  device_id: number;
  byte_size: number;
}

/** The logging extension's settings, with Triton's keys. */
export interface LogSettingsView {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: LogFormat;
}

export type LogSettingsUpdate = Partial<Omit<LogSettingsView, 'log_file'>>;

// The trace extension's settings (Triton's form), shared with the client: common/trace-settings.ts.
export type { TraceSettings };
// A trace settings update: the tracer's own type (trace/ is below this module).
export type { TraceSettingsUpdate };
