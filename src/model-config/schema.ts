/**
 * A descriptor table of Triton's model_config.proto (package `inference`): every message, field name,
 * field number, type, label (singular / repeated / map) and oneof, in the proto's declaration order.
 * The text-format parser, the JSON reader and printer, and the gRPC encoder are all driven by this one
 * table, so it must match the proto exactly; field numbers are the wire contract.
 */

export type ScalarType = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float' | 'double';
export type FieldType = ScalarType | 'enum' | 'message';
export type FieldLabel = 'singular' | 'repeated' | 'map';

export interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  /** For a map field this is the type of the map's value. */
  readonly type: FieldType;
  /** Enum or message type name (nested names joined with '.', e.g. 'ModelInput.Format'). */
  readonly typeName?: string;
  readonly label: FieldLabel;
  /** Map key type (maps only). */
  readonly keyType?: ScalarType;
  /** Name of the oneof this field belongs to. */
  readonly oneof?: string;
  /** proto3 JSON name (lowerCamelCase), also accepted by the JSON reader. */
  readonly jsonName: string;
}

export interface MessageDescriptor {
  /** Name relative to the package, nested names joined with '.'. */
  readonly name: string;
  readonly fullName: string;
  readonly fields: readonly FieldDescriptor[];
  readonly oneofs: readonly string[];
}

export interface EnumDescriptor {
  readonly name: string;
  readonly values: readonly { readonly name: string; readonly number: number }[];
}

export const PACKAGE = 'inference';

// ---- table builders (kept tiny so the table below reads like the proto) ----

interface FieldSpec {
  name: string;
  number: number;
  type: FieldType;
  typeName?: string;
  label: FieldLabel;
  keyType?: ScalarType;
  oneof?: string;
}

const s = (name: string, number: number, type: ScalarType): FieldSpec => ({
  name,
  number,
  type,
  label: 'singular',
});
const e = (name: string, number: number, typeName: string): FieldSpec => ({
  name,
  number,
  type: 'enum',
  typeName,
  label: 'singular',
});
const m = (name: string, number: number, typeName: string): FieldSpec => ({
  name,
  number,
  type: 'message',
  typeName,
  label: 'singular',
});
const rep = (f: FieldSpec): FieldSpec => ({ ...f, label: 'repeated' });
const map = (
  name: string,
  number: number,
  keyType: ScalarType,
  value: ScalarType | [FieldType, string],
): FieldSpec =>
  typeof value === 'string'
    ? { name, number, type: value, label: 'map', keyType }
    : { name, number, type: value[0], typeName: value[1], label: 'map', keyType };
const oneof = (group: string, ...fields: FieldSpec[]): FieldSpec[] =>
  fields.map((f) => ({ ...f, oneof: group }));

function jsonNameOf(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_all, c: string) => c.toUpperCase());
}

// ---- enums ----

const ENUM_TABLE: Record<string, readonly string[]> = {
  DataType: [
    'TYPE_INVALID',
    'TYPE_BOOL',
    'TYPE_UINT8',
    'TYPE_UINT16',
    'TYPE_UINT32',
    'TYPE_UINT64',
    'TYPE_INT8',
    'TYPE_INT16',
    'TYPE_INT32',
    'TYPE_INT64',
    'TYPE_FP16',
    'TYPE_FP32',
    'TYPE_FP64',
    'TYPE_STRING',
    'TYPE_BF16',
  ],
  'ModelInstanceGroup.Kind': ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'],
  'ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind': ['KIND_NVDLA'],
  'ModelInput.Format': ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'],
  'BatchInput.Kind': [
    'BATCH_ELEMENT_COUNT',
    'BATCH_ACCUMULATED_ELEMENT_COUNT',
    'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
    'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
    'BATCH_ITEM_SHAPE',
    'BATCH_ITEM_SHAPE_FLATTEN',
  ],
  'BatchOutput.Kind': ['BATCH_SCATTER_WITH_INPUT_SHAPE'],
  'ModelOptimizationPolicy.ModelPriority': ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN'],
  'ModelQueuePolicy.TimeoutAction': ['REJECT', 'DELAY'],
  'ModelSequenceBatching.Control.Kind': [
    'CONTROL_SEQUENCE_START',
    'CONTROL_SEQUENCE_READY',
    'CONTROL_SEQUENCE_END',
    'CONTROL_SEQUENCE_CORRID',
  ],
};

// Every enum in model_config.proto numbers its values 0..n-1 in declaration order.
export const ENUMS: ReadonlyMap<string, EnumDescriptor> = new Map(
  Object.entries(ENUM_TABLE).map(([name, values]) => [
    name,
    { name, values: values.map((v, i) => ({ name: v, number: i })) },
  ]),
);

// ---- messages, in the proto's declaration order (field order = JSON print order) ----

const MESSAGE_TABLE: Record<string, FieldSpec[]> = {
  'ModelRateLimiter.Resource': [s('name', 1, 'string'), s('global', 2, 'bool'), s('count', 3, 'uint32')],
  ModelRateLimiter: [rep(m('resources', 1, 'ModelRateLimiter.Resource')), s('priority', 2, 'uint32')],
  'ModelInstanceGroup.SecondaryDevice': [
    e('kind', 1, 'ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind'),
    s('device_id', 2, 'int64'),
  ],
  ModelInstanceGroup: [
    s('name', 1, 'string'),
    e('kind', 4, 'ModelInstanceGroup.Kind'),
    s('count', 2, 'int32'),
    m('rate_limiter', 6, 'ModelRateLimiter'),
    rep(s('gpus', 3, 'int32')),
    rep(m('secondary_devices', 8, 'ModelInstanceGroup.SecondaryDevice')),
    rep(s('profile', 5, 'string')),
    s('passive', 7, 'bool'),
    s('host_policy', 9, 'string'),
  ],
  ModelTensorReshape: [rep(s('shape', 1, 'int64'))],
  ModelInput: [
    s('name', 1, 'string'),
    e('data_type', 2, 'DataType'),
    e('format', 3, 'ModelInput.Format'),
    rep(s('dims', 4, 'int64')),
    m('reshape', 5, 'ModelTensorReshape'),
    s('is_shape_tensor', 6, 'bool'),
    s('allow_ragged_batch', 7, 'bool'),
    s('optional', 8, 'bool'),
    s('is_non_linear_format_io', 9, 'bool'),
  ],
  ModelOutput: [
    s('name', 1, 'string'),
    e('data_type', 2, 'DataType'),
    rep(s('dims', 3, 'int64')),
    m('reshape', 5, 'ModelTensorReshape'),
    s('label_filename', 4, 'string'),
    s('is_shape_tensor', 6, 'bool'),
    s('is_non_linear_format_io', 7, 'bool'),
  ],
  BatchInput: [
    e('kind', 1, 'BatchInput.Kind'),
    rep(s('target_name', 2, 'string')),
    e('data_type', 3, 'DataType'),
    rep(s('source_input', 4, 'string')),
  ],
  BatchOutput: [
    rep(s('target_name', 1, 'string')),
    e('kind', 2, 'BatchOutput.Kind'),
    rep(s('source_input', 3, 'string')),
  ],
  'ModelVersionPolicy.Latest': [s('num_versions', 1, 'uint32')],
  'ModelVersionPolicy.All': [],
  'ModelVersionPolicy.Specific': [rep(s('versions', 1, 'int64'))],
  ModelVersionPolicy: oneof(
    'policy_choice',
    m('latest', 1, 'ModelVersionPolicy.Latest'),
    m('all', 2, 'ModelVersionPolicy.All'),
    m('specific', 3, 'ModelVersionPolicy.Specific'),
  ),
  'ModelOptimizationPolicy.Graph': [s('level', 1, 'int32')],
  'ModelOptimizationPolicy.Cuda.GraphSpec.Shape': [rep(s('dim', 1, 'int64'))],
  'ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound': [
    s('batch_size', 1, 'int32'),
    map('input', 2, 'string', ['message', 'ModelOptimizationPolicy.Cuda.GraphSpec.Shape']),
  ],
  'ModelOptimizationPolicy.Cuda.GraphSpec': [
    s('batch_size', 1, 'int32'),
    map('input', 2, 'string', ['message', 'ModelOptimizationPolicy.Cuda.GraphSpec.Shape']),
    m('graph_lower_bound', 3, 'ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound'),
  ],
  'ModelOptimizationPolicy.Cuda': [
    s('graphs', 1, 'bool'),
    s('busy_wait_events', 2, 'bool'),
    rep(m('graph_spec', 3, 'ModelOptimizationPolicy.Cuda.GraphSpec')),
    s('output_copy_stream', 4, 'bool'),
  ],
  'ModelOptimizationPolicy.ExecutionAccelerators.Accelerator': [
    s('name', 1, 'string'),
    map('parameters', 2, 'string', 'string'),
  ],
  'ModelOptimizationPolicy.ExecutionAccelerators': [
    rep(m('gpu_execution_accelerator', 1, 'ModelOptimizationPolicy.ExecutionAccelerators.Accelerator')),
    rep(m('cpu_execution_accelerator', 2, 'ModelOptimizationPolicy.ExecutionAccelerators.Accelerator')),
  ],
  'ModelOptimizationPolicy.PinnedMemoryBuffer': [s('enable', 1, 'bool')],
  ModelOptimizationPolicy: [
    m('graph', 1, 'ModelOptimizationPolicy.Graph'),
    e('priority', 2, 'ModelOptimizationPolicy.ModelPriority'),
    m('cuda', 3, 'ModelOptimizationPolicy.Cuda'),
    m('execution_accelerators', 4, 'ModelOptimizationPolicy.ExecutionAccelerators'),
    m('input_pinned_memory', 5, 'ModelOptimizationPolicy.PinnedMemoryBuffer'),
    m('output_pinned_memory', 6, 'ModelOptimizationPolicy.PinnedMemoryBuffer'),
    s('gather_kernel_buffer_threshold', 7, 'uint32'),
    s('eager_batching', 8, 'bool'),
  ],
  ModelQueuePolicy: [
    e('timeout_action', 1, 'ModelQueuePolicy.TimeoutAction'),
    s('default_timeout_microseconds', 2, 'uint64'),
    s('allow_timeout_override', 3, 'bool'),
    s('max_queue_size', 4, 'uint32'),
  ],
  ModelDynamicBatching: [
    rep(s('preferred_batch_size', 1, 'int32')),
    s('max_queue_delay_microseconds', 2, 'uint64'),
    s('preserve_ordering', 3, 'bool'),
    s('priority_levels', 4, 'uint64'),
    s('default_priority_level', 5, 'uint64'),
    m('default_queue_policy', 6, 'ModelQueuePolicy'),
    map('priority_queue_policy', 7, 'uint64', ['message', 'ModelQueuePolicy']),
  ],
  'ModelSequenceBatching.Control': [
    e('kind', 1, 'ModelSequenceBatching.Control.Kind'),
    rep(s('int32_false_true', 2, 'int32')),
    rep(s('fp32_false_true', 3, 'float')),
    rep(s('bool_false_true', 5, 'bool')),
    e('data_type', 4, 'DataType'),
  ],
  'ModelSequenceBatching.ControlInput': [
    s('name', 1, 'string'),
    rep(m('control', 2, 'ModelSequenceBatching.Control')),
  ],
  'ModelSequenceBatching.InitialState': [
    e('data_type', 1, 'DataType'),
    rep(s('dims', 2, 'int64')),
    ...oneof('state_data', s('zero_data', 3, 'bool'), s('data_file', 4, 'string')),
    s('name', 5, 'string'),
  ],
  'ModelSequenceBatching.State': [
    s('input_name', 1, 'string'),
    s('output_name', 2, 'string'),
    e('data_type', 3, 'DataType'),
    rep(s('dims', 4, 'int64')),
    rep(m('initial_state', 5, 'ModelSequenceBatching.InitialState')),
    s('use_same_buffer_for_input_output', 6, 'bool'),
    s('use_growable_memory', 7, 'bool'),
  ],
  'ModelSequenceBatching.StrategyDirect': [
    s('max_queue_delay_microseconds', 1, 'uint64'),
    s('minimum_slot_utilization', 2, 'float'),
  ],
  'ModelSequenceBatching.StrategyOldest': [
    s('max_candidate_sequences', 1, 'int32'),
    rep(s('preferred_batch_size', 2, 'int32')),
    s('max_queue_delay_microseconds', 3, 'uint64'),
    s('preserve_ordering', 4, 'bool'),
  ],
  ModelSequenceBatching: [
    ...oneof(
      'strategy_choice',
      m('direct', 3, 'ModelSequenceBatching.StrategyDirect'),
      m('oldest', 4, 'ModelSequenceBatching.StrategyOldest'),
    ),
    s('max_sequence_idle_microseconds', 1, 'uint64'),
    rep(m('control_input', 2, 'ModelSequenceBatching.ControlInput')),
    rep(m('state', 5, 'ModelSequenceBatching.State')),
    s('iterative_sequence', 6, 'bool'),
  ],
  'ModelEnsembling.Step': [
    s('model_name', 1, 'string'),
    s('model_version', 2, 'int64'),
    map('input_map', 3, 'string', 'string'),
    map('output_map', 4, 'string', 'string'),
    s('model_namespace', 5, 'string'),
  ],
  ModelEnsembling: [rep(m('step', 1, 'ModelEnsembling.Step')), s('max_inflight_requests', 2, 'uint32')],
  ModelParameter: [s('string_value', 1, 'string')],
  'ModelWarmup.Input': [
    e('data_type', 1, 'DataType'),
    rep(s('dims', 2, 'int64')),
    ...oneof(
      'input_data_type',
      s('zero_data', 3, 'bool'),
      s('random_data', 4, 'bool'),
      s('input_data_file', 5, 'string'),
    ),
  ],
  ModelWarmup: [
    s('name', 1, 'string'),
    s('batch_size', 2, 'uint32'),
    map('inputs', 3, 'string', ['message', 'ModelWarmup.Input']),
    s('count', 4, 'uint32'),
  ],
  ModelOperations: [rep(s('op_library_filename', 1, 'string'))],
  ModelTransactionPolicy: [s('decoupled', 1, 'bool')],
  'ModelRepositoryAgents.Agent': [s('name', 1, 'string'), map('parameters', 2, 'string', 'string')],
  ModelRepositoryAgents: [rep(m('agents', 1, 'ModelRepositoryAgents.Agent'))],
  ModelResponseCache: [s('enable', 1, 'bool')],
  'ModelMetrics.MetricControl.MetricIdentifier': [s('family', 1, 'string')],
  'ModelMetrics.MetricControl.HistogramOptions': [rep(s('buckets', 1, 'double'))],
  'ModelMetrics.MetricControl': [
    m('metric_identifier', 1, 'ModelMetrics.MetricControl.MetricIdentifier'),
    ...oneof('metric_options', m('histogram_options', 2, 'ModelMetrics.MetricControl.HistogramOptions')),
  ],
  ModelMetrics: [rep(m('metric_control', 1, 'ModelMetrics.MetricControl'))],
  ModelConfig: [
    s('name', 1, 'string'),
    s('platform', 2, 'string'),
    s('backend', 17, 'string'),
    s('runtime', 25, 'string'),
    m('version_policy', 3, 'ModelVersionPolicy'),
    s('max_batch_size', 4, 'int32'),
    rep(m('input', 5, 'ModelInput')),
    rep(m('output', 6, 'ModelOutput')),
    rep(m('batch_input', 20, 'BatchInput')),
    rep(m('batch_output', 21, 'BatchOutput')),
    m('optimization', 12, 'ModelOptimizationPolicy'),
    ...oneof(
      'scheduling_choice',
      m('dynamic_batching', 11, 'ModelDynamicBatching'),
      m('sequence_batching', 13, 'ModelSequenceBatching'),
      m('ensemble_scheduling', 15, 'ModelEnsembling'),
    ),
    rep(m('instance_group', 7, 'ModelInstanceGroup')),
    s('default_model_filename', 8, 'string'),
    map('cc_model_filenames', 9, 'string', 'string'),
    map('metric_tags', 10, 'string', 'string'),
    map('parameters', 14, 'string', ['message', 'ModelParameter']),
    rep(m('model_warmup', 16, 'ModelWarmup')),
    m('model_operations', 18, 'ModelOperations'),
    m('model_transaction_policy', 19, 'ModelTransactionPolicy'),
    m('model_repository_agents', 23, 'ModelRepositoryAgents'),
    m('response_cache', 24, 'ModelResponseCache'),
    m('model_metrics', 26, 'ModelMetrics'),
  ],
};

export const MESSAGES: ReadonlyMap<string, MessageDescriptor> = new Map(
  Object.entries(MESSAGE_TABLE).map(([name, specs]) => {
    const fields: FieldDescriptor[] = specs.map((f) => ({ ...f, jsonName: jsonNameOf(f.name) }));
    const oneofs = [...new Set(fields.flatMap((f) => (f.oneof === undefined ? [] : [f.oneof])))];
    return [name, { name, fullName: `${PACKAGE}.${name}`, fields, oneofs }];
  }),
);

export function messageDescriptor(name: string): MessageDescriptor {
  const d = MESSAGES.get(name);
  if (d === undefined) throw new Error(`model-config schema has no message '${name}'`);
  return d;
}

export function enumDescriptor(name: string): EnumDescriptor {
  const d = ENUMS.get(name);
  if (d === undefined) throw new Error(`model-config schema has no enum '${name}'`);
  return d;
}

export function findField(msg: MessageDescriptor, name: string): FieldDescriptor | undefined {
  return msg.fields.find((f) => f.name === name);
}

export function enumValueByName(enumName: string, valueName: string): number | undefined {
  return enumDescriptor(enumName).values.find((v) => v.name === valueName)?.number;
}

export function enumValueByNumber(enumName: string, num: number): string | undefined {
  return enumDescriptor(enumName).values.find((v) => v.number === num)?.name;
}

/** proto3 encodes repeated scalar numeric, bool and enum fields packed by default. */
export function isPackable(field: FieldDescriptor): boolean {
  return field.label === 'repeated' && field.type !== 'string' && field.type !== 'message';
}

/** The synthetic `{ key = 1; value = 2 }` entry message protobuf uses on the wire for a map field. */
export function mapEntryFields(field: FieldDescriptor): readonly [FieldDescriptor, FieldDescriptor] {
  if (field.label !== 'map' || field.keyType === undefined)
    throw new Error(`field '${field.name}' is not a map`);
  const key: FieldDescriptor = {
    name: 'key',
    number: 1,
    type: field.keyType,
    label: 'singular',
    jsonName: 'key',
  };
  const value: FieldDescriptor = {
    name: 'value',
    number: 2,
    type: field.type,
    label: 'singular',
    jsonName: 'value',
    ...(field.typeName === undefined ? {} : { typeName: field.typeName }),
  };
  return [key, value];
}

export const MODEL_CONFIG = 'ModelConfig';
