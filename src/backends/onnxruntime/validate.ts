/**
 * Load-time check of a (completed) config against what the session reports, with the rules and the
 * wording of Triton's onnxruntime backend: every configured input and output exists in the model, the
 * input count matches, datatypes agree, and the dims agree (a model -1 accepts any configured input dim;
 * outputs must match exactly; batching models need a dynamic first dim).
 */
import { invalidArg } from '../../common/errors.js';
import type { DeepReadonly, ModelConfig } from '../../model-config/model-config.js';
import { configTypeOf } from './autocomplete.js';
import type { IoMeta, ModelIo } from './protocol.js';

type Config = DeepReadonly<ModelConfig>;
type ConfigTensor = Config['input'][number] | Config['output'][number];

const shapeText = (s: readonly number[]): string => `[${s.join(',')}]`;

function compareDims(
  modelName: string,
  io: IoMeta,
  dims: readonly number[],
  maxBatchSize: number,
  exact: boolean,
): void {
  const model = io.shape;
  const matches = (full: readonly number[]): boolean =>
    model.length === full.length && full.every((d, i) => (!exact && model[i] === -1) || model[i] === d);
  if (maxBatchSize > 0) {
    if (model.length === 0 || model[0] !== -1) {
      throw invalidArg(
        `model '${modelName}', tensor '${io.name}': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is ${shapeText(model)}`,
      );
    }
    const full = [-1, ...dims];
    if (!matches(full)) {
      throw invalidArg(
        `model '${modelName}', tensor '${io.name}': the model expects ${model.length} dimensions (shape ${shapeText(model)}) but the model configuration specifies ${full.length} dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape ${shapeText(full)})`,
      );
    }
  } else if (!matches(dims)) {
    throw invalidArg(
      `model '${modelName}', tensor '${io.name}': the model expects ${model.length} dimensions (shape ${shapeText(model)}) but the model configuration specifies ${dims.length} dimensions (shape ${shapeText(dims)})`,
    );
  }
}

function checkTensor(
  config: Config,
  kind: 'input' | 'output',
  tensor: ConfigTensor,
  available: ReadonlyMap<string, IoMeta>,
  checkDims: boolean,
): void {
  const name = config.name;
  const io = available.get(tensor.name);
  if (!io) {
    throw invalidArg(
      `unexpected inference ${kind} '${tensor.name}', allowed ${kind}s are: ${[...available.keys()].sort().join(', ')}`,
    );
  }
  const modelType = configTypeOf(name, kind, io);
  if (modelType !== tensor.data_type) {
    throw invalidArg(
      `unable to load model '${name}', configuration expects datatype ${tensor.data_type} for ${kind} '${tensor.name}', model provides ${modelType}`,
    );
  }
  if (!checkDims) return;
  const dims = tensor.reshape ? tensor.reshape.shape : tensor.dims;
  if (io.shape.length === 0) {
    if (dims.some((d) => d !== 1)) {
      throw invalidArg(
        `unable to load model '${name}', scalar tensor '${tensor.name}', should only provide 1 in the model configuration when the model doesn't support batching. Model configuration provided: ${shapeText(dims)}.`,
      );
    }
    return;
  }
  compareDims(name, io, dims, config.max_batch_size, kind === 'output');
}

/** Throws INVALID_ARG naming the first tensor where config and model disagree. */
export function validateAgainstModel(config: Config, io: ModelIo): void {
  const name = config.name;
  const inputs = new Map(io.inputs.map((t) => [t.name, t]));
  const outputs = new Map(io.outputs.map((t) => [t.name, t]));
  const seq = config.sequence_batching;

  let expected =
    (config.batch_input?.length ?? 0) + (seq?.control_input.length ?? 0) + (seq?.state.length ?? 0);
  for (const t of config.input ?? []) {
    if (t.optional && config.max_batch_size !== 0) {
      throw invalidArg(
        `unable to load model '${name}', optional input '${t.name}' is not supported for models that support batching`,
      );
    }
    if (!t.optional) expected++;
  }
  if (io.inputs.length !== expected) {
    throw invalidArg(
      `unable to load model '${name}', configuration expects ${expected} inputs, model provides ${io.inputs.length}`,
    );
  }

  for (const t of config.input ?? []) {
    checkTensor(config, 'input', t, inputs, !t.allow_ragged_batch);
    if (t.allow_ragged_batch) {
      const shape = inputs.get(t.name)!.shape;
      if (shape.length !== 1 || shape[0] !== -1) {
        throw invalidArg(
          `unable to load model '${name}', configuration expects model provides input with shape [-1] for ragged input '${t.name}', model provides ${shapeText(shape)}`,
        );
      }
    }
  }
  for (const control of seq?.control_input ?? []) {
    if (!inputs.has(control.name)) {
      throw invalidArg(
        `unable to load model '${name}', sequence control input '${control.name}' is not an input of the model; model inputs are: ${[...inputs.keys()].sort().join(', ')}`,
      );
    }
  }
  const batchOutputs = new Set((config.batch_output ?? []).flatMap((b) => b.target_name));
  for (const t of config.output ?? []) {
    checkTensor(config, 'output', t, outputs, !batchOutputs.has(t.name));
  }
}
