/**
 * Typed form of Triton's ModelConfig (model_config.proto). Field names are the proto field names, so the
 * JSON that GET /v2/models/<m>/config returns is this object printed as Triton prints it. A config that
 * has passed normalize() has every field the server relies on filled in; the types say which fields are
 * always present after normalisation (`NormalizedModelConfig`).
 */
import type { ConfigDataType } from '../common/datatype.js';

export type Int64 = number; // int64/uint64 fields; values beyond 2^53 are rejected by the parser

export interface ModelTensorReshape {
  shape: Int64[];
}

export type InputFormat = 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';

export interface ModelInput {
  name: string;
  data_type: ConfigDataType;
  format?: InputFormat;
  dims: Int64[];
  reshape?: ModelTensorReshape;
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface ModelOutput {
  name: string;
  data_type: ConfigDataType;
  dims: Int64[];
  reshape?: ModelTensorReshape;
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
}

export type BatchInputKind =
  | 'BATCH_ELEMENT_COUNT'
  | 'BATCH_ACCUMULATED_ELEMENT_COUNT'
  | 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO'
  | 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE'
  | 'BATCH_ITEM_SHAPE'
  | 'BATCH_ITEM_SHAPE_FLATTEN';

export interface BatchInput {
  kind: BatchInputKind;
  target_name: string[];
  data_type: ConfigDataType;
  source_input: string[];
}

export interface BatchOutput {
  target_name: string[];
  kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE';
  source_input: string[];
}

export interface ModelVersionPolicy {
  latest?: { num_versions: number };
  all?: Record<string, never>;
  specific?: { versions: Int64[] };
}

export type InstanceGroupKind = 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';

export interface ModelRateLimiter {
  resources: { name: string; global: boolean; count: number }[];
  priority: number;
}

export interface ModelInstanceGroup {
  name: string;
  kind: InstanceGroupKind;
  count: number;
  rate_limiter?: ModelRateLimiter;
  gpus: number[];
  secondary_devices: { kind: 'KIND_NVDLA'; device_id: Int64 }[];
  profile: string[];
  passive: boolean;
  host_policy: string;
}

export type TimeoutAction = 'REJECT' | 'DELAY';

export interface ModelQueuePolicy {
  timeout_action: TimeoutAction;
  default_timeout_microseconds: Int64;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: Int64;
  preserve_ordering: boolean;
  priority_levels: Int64;
  default_priority_level: Int64;
  default_queue_policy?: ModelQueuePolicy;
  priority_queue_policy: Record<string, ModelQueuePolicy>;
}

export type SequenceControlKind =
  'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_CORRID';

export interface SequenceControl {
  kind: SequenceControlKind;
  int32_false_true: number[];
  fp32_false_true: number[];
  bool_false_true: boolean[];
  data_type: ConfigDataType;
}

export interface SequenceControlInput {
  name: string;
  control: SequenceControl[];
}

export interface SequenceState {
  input_name: string;
  output_name: string;
  data_type: ConfigDataType;
  dims: Int64[];
  initial_state: {
    data_type: ConfigDataType;
    dims: Int64[];
    zero_data?: boolean;
    data_file?: string;
    name: string;
  }[];
  use_same_buffer_for_input_output?: boolean;
  use_growable_memory?: boolean;
}

export interface ModelSequenceBatching {
  direct?: { max_queue_delay_microseconds: Int64; minimum_slot_utilization: number };
  oldest?: {
    max_candidate_sequences: number;
    preferred_batch_size: number[];
    max_queue_delay_microseconds: Int64;
    preserve_ordering: boolean;
  };
  max_sequence_idle_microseconds: Int64;
  control_input: SequenceControlInput[];
  state: SequenceState[];
  iterative_sequence?: boolean;
}

export interface EnsembleStep {
  model_name: string;
  model_version: Int64;
  input_map: Record<string, string>;
  output_map: Record<string, string>;
  model_namespace?: string;
}

export interface ModelEnsembling {
  step: EnsembleStep[];
  /** Limits in-flight requests per step (0 = unlimited). Always present in parsed configs. */
  max_inflight_requests?: number;
}

export interface ModelParameter {
  string_value: string;
}

export interface ModelWarmupInput {
  data_type: ConfigDataType;
  dims: Int64[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

export interface ModelWarmup {
  name: string;
  batch_size: number;
  inputs: Record<string, ModelWarmupInput>;
  count: number;
}

export interface ModelTransactionPolicy {
  decoupled: boolean;
}

export interface ModelResponseCache {
  enable: boolean;
}

export type ModelPriority = 'PRIORITY_DEFAULT' | 'PRIORITY_MAX' | 'PRIORITY_MIN';

export interface ExecutionAccelerator {
  name: string;
  parameters: Record<string, string>;
}

export interface CudaGraphShape {
  dim: Int64[];
}

export interface CudaGraphSpec {
  batch_size: number;
  input: Record<string, CudaGraphShape>;
  graph_lower_bound?: { batch_size: number; input: Record<string, CudaGraphShape> };
}

/** `optimization`; the CPU backends read only a few keys, the rest is carried through for the config API. */
export interface ModelOptimizationPolicy {
  graph?: { level: number };
  priority: ModelPriority;
  cuda?: {
    graphs: boolean;
    busy_wait_events: boolean;
    graph_spec: CudaGraphSpec[];
    output_copy_stream: boolean;
  };
  execution_accelerators?: {
    gpu_execution_accelerator: ExecutionAccelerator[];
    cpu_execution_accelerator: ExecutionAccelerator[];
  };
  input_pinned_memory?: { enable: boolean };
  output_pinned_memory?: { enable: boolean };
  gather_kernel_buffer_threshold: number;
  eager_batching: boolean;
}

export interface ModelOperations {
  op_library_filename: string[];
}

export interface ModelRepositoryAgents {
  agents: { name: string; parameters: Record<string, string> }[];
}

export interface ModelMetricControl {
  metric_identifier?: { family: string };
  histogram_options?: { buckets: number[] };
}

export interface ModelMetrics {
  metric_control: ModelMetricControl[];
}

export interface ModelConfig {
  name: string;
  platform: string;
  backend: string;
  runtime: string;
  version_policy: ModelVersionPolicy;
  max_batch_size: number;
  input: ModelInput[];
  output: ModelOutput[];
  batch_input: BatchInput[];
  batch_output: BatchOutput[];
  optimization?: ModelOptimizationPolicy;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  ensemble_scheduling?: ModelEnsembling;
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  cc_model_filenames: Record<string, string>;
  metric_tags: Record<string, string>;
  parameters: Record<string, ModelParameter>;
  model_warmup: ModelWarmup[];
  model_operations?: ModelOperations;
  model_transaction_policy?: ModelTransactionPolicy;
  model_repository_agents?: ModelRepositoryAgents;
  response_cache?: ModelResponseCache;
  model_metrics?: ModelMetrics;
}

/** Deeply readonly view, used for configs after validation (they are also deep-frozen at run time). */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

export type FrozenModelConfig = DeepReadonly<ModelConfig>;
