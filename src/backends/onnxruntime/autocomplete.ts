/**
 * Triton's auto-complete for ONNX models, as a pure function of (config, what the session reports):
 * skipped when the config already names inputs and outputs; otherwise the model decides whether it can
 * batch (every input and output has a dynamic first dim), max_batch_size 0 becomes
 * `default-max-batch-size`, and the missing input or output list is filled from the model.
 */
import { fromOrtType, toConfigDataType, type ConfigDataType } from '../../common/datatype.js';
import { invalidArg, unsupported } from '../../common/errors.js';
import type {
  ModelConfig,
  ModelDynamicBatching,
  ModelInput,
  ModelOutput,
} from '../../model-config/model-config.js';
import type { IoMeta, ModelIo } from './protocol.js';

export const DEFAULT_MAX_BATCH_SIZE = 4;

/** `default-max-batch-size` from the backend config (Triton's global default is 4). */
export function defaultMaxBatchSize(backendConfig: Readonly<Record<string, string>>): number {
  const raw = backendConfig['default-max-batch-size'];
  if (raw === undefined) return DEFAULT_MAX_BATCH_SIZE;
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isSafeInteger(n)) {
    throw invalidArg(`backend config 'default-max-batch-size' must be an integer, got '${raw}'`);
  }
  return Math.max(0, n);
}

/** TYPE_* of a model tensor; throws for sequences, maps and types Triton has no name for. */
export function configTypeOf(modelName: string, kind: 'input' | 'output', io: IoMeta): ConfigDataType {
  const dt = io.isTensor ? fromOrtType(io.ortType) : undefined;
  if (dt === undefined) {
    const what = io.isTensor ? `onnxruntime type '${io.ortType}'` : 'a non-tensor type (sequence or map)';
    throw unsupported(
      `model '${modelName}': ${kind} '${io.name}' has ${what}, which Triton cannot represent`,
    );
  }
  return toConfigDataType(dt);
}

export function supportsBatching(io: ModelIo): boolean {
  return [...io.inputs, ...io.outputs].every((t) => t.shape.length > 0 && t.shape[0] === -1);
}

/** The proto defaults of an empty `dynamic_batching {}`. */
function emptyDynamicBatching(): ModelDynamicBatching {
  return {
    preferred_batch_size: [],
    max_queue_delay_microseconds: 0,
    preserve_ordering: false,
    priority_levels: 0,
    default_priority_level: 0,
    priority_queue_policy: {},
  };
}

function completeTensor(
  modelName: string,
  kind: 'input' | 'output',
  io: IoMeta,
  maxBatchSize: number,
): ModelInput & ModelOutput {
  const dims = maxBatchSize > 0 ? io.shape.slice(1) : [...io.shape];
  const out: ModelInput & ModelOutput = { name: io.name, data_type: configTypeOf(modelName, kind, io), dims };
  if (dims.length === 0) {
    // A scalar per batch item: config dims cannot be empty, so [1] reshaped to [] (only valid with batching).
    out.dims = [1];
    if (maxBatchSize > 0) out.reshape = { shape: [] };
  }
  return out;
}

export interface AutoCompleteResult {
  readonly config: ModelConfig;
  /** Lines for the load log (Triton logs the same events). */
  readonly notes: readonly string[];
}

export function autoCompleteFromModel(
  config: ModelConfig,
  io: ModelIo,
  defaultMaxBatch: number,
): AutoCompleteResult {
  const name = config.name;
  const inputCount = (config.input?.length ?? 0) + (config.batch_input?.length ?? 0);
  const outputCount = config.output?.length ?? 0;
  if (inputCount > 0 && outputCount > 0) {
    return {
      config,
      notes: [
        `skipping model configuration auto-complete for '${name}': inputs and outputs already specified`,
      ],
    };
  }

  const out = structuredClone(config);
  const notes: string[] = [];
  out.max_batch_size ??= 0;
  if (supportsBatching(io)) {
    if (out.max_batch_size === 0) {
      out.max_batch_size = Math.max(0, defaultMaxBatch);
      notes.push(
        `autofilled max_batch_size to ${out.max_batch_size} for model '${name}' since batching is supported but no max_batch_size is specified in model configuration`,
      );
    }
    if (out.max_batch_size > 1 && !out.sequence_batching && !out.dynamic_batching) {
      out.dynamic_batching = emptyDynamicBatching();
    }
  } else if (out.max_batch_size !== 0) {
    throw invalidArg(
      `autofill failed for model '${name}': model does not support batching while non-zero max_batch_size is specified`,
    );
  }

  if (inputCount === 0) {
    out.input = io.inputs.map((t) => completeTensor(name, 'input', t, out.max_batch_size));
  }
  if (outputCount === 0) {
    out.output = io.outputs.map((t) => {
      const { name: n, data_type, dims, reshape } = completeTensor(name, 'output', t, out.max_batch_size);
      return reshape ? { name: n, data_type, dims, reshape } : { name: n, data_type, dims };
    });
  }
  return { config: out, notes };
}
