/**
 * Checks one inference request against its model's frozen config and turns it into what a backend sees:
 * inputs by name with the config's reshape applied, the set of outputs to produce, the batch size, and the
 * sequence fields. Error texts follow Triton's (clients and Triton's own QA match on substrings).
 */
import { dataTypeInfo, fromConfigDataType, type DataType } from '../common/datatype.js';
import { NereidError, invalidArg } from '../common/errors.js';
import { countBytesElements, elementCount, type Tensor } from '../common/tensor.js';
import type { FrozenModelConfig } from '../model-config/model-config.js';
import type { InferInput, InferenceRequest, Parameters, ParameterValue } from './types.js';

export interface OutputPlan {
  readonly name: string;
  /** Top-N classification requested for this output (0 = none). */
  readonly classification: number;
}

export interface PreparedRequest {
  readonly id: string;
  readonly inputs: ReadonlyMap<string, Tensor>;
  /** Outputs the client receives, in request order (or config order when none were named). */
  readonly outputs: readonly OutputPlan[];
  readonly batchSize: number;
  readonly correlationId: bigint | string;
  readonly flags: number;
  readonly priority: number;
  readonly timeoutUs: number;
  readonly parameters: Readonly<Parameters>;
}

export const SEQUENCE_START = 1;
export const SEQUENCE_END = 2;

const dimsToString = (dims: readonly number[]): string => `[${dims.join(',')}]`;

function matchesWithWildcard(expected: readonly number[], actual: readonly number[]): boolean {
  if (expected.length !== actual.length) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== actual[i]) return false;
  }
  return true;
}

/** Applies a reshape (which may hold one -1) to a shape with the same element count. */
export function applyReshape(shape: readonly number[], reshape: readonly number[]): number[] {
  const total = elementCount(shape);
  let known = 1;
  let wildcard = -1;
  for (let i = 0; i < reshape.length; i++) {
    if (reshape[i] === -1) wildcard = i;
    else known *= reshape[i];
  }
  const out = [...reshape];
  if (wildcard >= 0) out[wildcard] = known === 0 ? 0 : total / known;
  return out;
}

function toBoolean(v: ParameterValue | undefined): boolean {
  return v === true || v === 'true' || v === 1;
}

function toInteger(name: string, v: ParameterValue | undefined): number {
  if (v === undefined) return 0;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER))
    return Number(v);
  throw invalidArg(`parameter '${name}' must be an integer`);
}

function correlationIdOf(v: ParameterValue | undefined): bigint | string {
  if (v === undefined) return 0n;
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' && v >= 0n) return v;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return BigInt(v);
  throw invalidArg(`parameter 'sequence_id' must be an unsigned integer or a string`);
}

/** Errors Triton raises without the request-id prefix (name lookups done while the request is built). */
const UNPREFIXED = new WeakSet<NereidError>();
function plainInvalidArg(message: string): NereidError {
  const err = invalidArg(message);
  UNPREFIXED.add(err);
  return err;
}

/**
 * A requested output named twice. Triton finds it while the frontend builds the request, before the
 * core's validation, so this check runs first and its message carries no request-id prefix.
 */
function rejectDuplicateOutputs(request: InferenceRequest): void {
  const outputs = new Set<string>();
  for (const output of request.outputs ?? []) {
    if (outputs.has(output.name)) throw plainInvalidArg(`output '${output.name}' already exists in request`);
    outputs.add(output.name);
  }
}

type ConfigInput = FrozenModelConfig['input'][number];

interface InputPlan {
  readonly config: ConfigInput;
  /** The full expected shape: the batch dimension (-1) first when the model batches. */
  readonly dims: readonly number[];
}

/** What validating a request needs from its model's config, worked out once per (frozen) config. */
interface ConfigPlan {
  readonly byName: ReadonlyMap<string, InputPlan>;
  readonly required: readonly string[];
  readonly outputNames: ReadonlySet<string>;
}

const plans = new WeakMap<FrozenModelConfig, ConfigPlan>();

function planOf(config: FrozenModelConfig): ConfigPlan {
  let plan = plans.get(config);
  if (plan === undefined) {
    const batching = config.max_batch_size > 0;
    plan = {
      byName: new Map(
        config.input.map((i) => [i.name, { config: i, dims: batching ? [-1, ...i.dims] : [...i.dims] }]),
      ),
      required: config.input.filter((i) => !i.optional).map((i) => i.name),
      outputNames: new Set(config.output.map((o) => o.name)),
    };
    plans.set(config, plan);
  }
  return plan;
}

/**
 * Inputs by name: none twice, Triton's count error before the names (too few or too many inputs), then
 * no unknown name, then every required one present.
 */
export function checkInputNames(
  config: FrozenModelConfig,
  inputs: readonly { readonly name: string }[],
): void {
  const model = config.name;
  const { byName, required } = planOf(config);
  const seen = new Set<string>();
  for (const input of inputs) {
    if (seen.has(input.name)) {
      throw invalidArg(`input '${input.name}' already exists in request`);
    }
    seen.add(input.name);
  }
  const missing = required.filter((n) => !seen.has(n));
  if (inputs.length > config.input.length || inputs.length < required.length) {
    const total = config.input.length;
    const expected =
      required.length === total
        ? `expected ${total} inputs`
        : `expected number of inputs between ${required.length} and ${total}`;
    const got = [...seen].map((n) => `'${n}'`).join(',');
    const miss = missing.map((n) => `'${n}'`).join(',');
    throw invalidArg(
      `${expected} but got ${inputs.length} inputs for model '${model}'. Got input(s) [${got}], ` +
        `but missing required input(s) [${miss}]. Please provide all required input(s).`,
    );
  }
  for (const input of inputs) {
    if (!byName.has(input.name)) {
      throw plainInvalidArg(`unexpected inference input '${input.name}' for model '${model}'`);
    }
  }
  if (missing.length > 0) {
    throw invalidArg(
      `missing required input(s) [${missing.map((n) => `'${n}'`).join(',')}] for model '${model}'`,
    );
  }
}

/** One input's datatype and shape against its config entry (the batch dimension, -1, first when batching). */
function checkInputShape(model: string, batching: boolean, plan: InputPlan, input: InferInput): void {
  const { config: cfg, dims: expectedDims } = plan;
  const expectedType: DataType | undefined = fromConfigDataType(cfg.data_type);
  if (input.datatype !== expectedType) {
    throw invalidArg(
      `inference input '${input.name}' data-type is '${input.datatype}', but model '${model}' expects '${expectedType ?? cfg.data_type}'`,
    );
  }
  for (const d of input.shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw invalidArg(`invalid shape ${dimsToString(input.shape)} for input '${input.name}'`);
    }
  }
  if (!matchesWithWildcard(expectedDims, input.shape)) {
    // Triton always ends the sentence with '. ', followed by the batching note when there is one.
    const note = batching
      ? '. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be ' +
        'prepended to each input shape. If you want to specify the full shape including the batch dim in ' +
        'your input dims config, try setting max_batch_size to zero. See the model configuration docs for ' +
        'more info on max_batch_size.'
      : '. ';
    throw invalidArg(
      `unexpected shape for input '${input.name}' for model '${model}'. Expected ${dimsToString(expectedDims)}, got ${dimsToString(input.shape)}${note}`,
    );
  }
}

/**
 * The batch size after the `index`th input of a batching model: the first input sets it (its first
 * dimension), every later one must agree.
 */
export function nextBatchSize(
  model: string,
  index: number,
  batchSize: number,
  input: { readonly name: string; readonly shape: readonly number[] },
): number {
  const b = input.shape[0];
  if (index === 0) return b;
  if (b !== batchSize) {
    throw invalidArg(`input '${input.name}' batch size does not match other inputs for '${model}'`);
  }
  return batchSize;
}

/** A batching model's request batch: 1 ≤ batch size ≤ max_batch_size (a request without inputs passes). */
export function checkBatchSize(config: FrozenModelConfig, inputCount: number, batchSize: number): void {
  const model = config.name;
  if (batchSize > config.max_batch_size) {
    throw invalidArg(`inference request batch-size must be <= ${config.max_batch_size} for '${model}'`);
  }
  if (inputCount > 0 && batchSize === 0) {
    throw invalidArg(`inference request batch-size must be >= 1 for '${model}'`);
  }
}

/** One input's data length against its shape: bytes for fixed-size types, elements for BYTES. */
function checkInputData(model: string, input: InferInput): void {
  const count = elementCount(input.shape);
  const info = dataTypeInfo(input.datatype);
  if (info.byteSize === 0) {
    const n = countBytesElements(input.data);
    if (n !== count) {
      throw invalidArg(
        `expected ${count} string elements for inference input '${input.name}' for model '${model}', got ${n}`,
      );
    }
  } else if (input.data.length !== count * info.byteSize) {
    throw invalidArg(
      `input byte size mismatch for input '${input.name}' for model '${model}'. Expected ${count * info.byteSize}, got ${input.data.length}`,
    );
  }
}

/** The tensor a backend sees: the config's reshape applied behind the batch dimension. */
function reshapedInput(cfg: ConfigInput, batching: boolean, input: InferInput): Tensor {
  let shape: readonly number[] = input.shape;
  if (cfg.reshape) {
    const inner = batching ? shape.slice(1) : shape;
    const reshaped = applyReshape(inner, cfg.reshape.shape);
    shape = batching ? [shape[0], ...reshaped] : reshaped;
  }
  return { name: input.name, datatype: input.datatype, shape, data: input.data };
}

/**
 * Every input checked in request order (datatype, shape, batch agreement, data length: Triton's order,
 * so a request wrong twice gets Triton's error) and reshaped; the batch size (1 for a model that does not
 * batch). The names have been checked (checkInputNames).
 */
export function prepareInputs(
  config: FrozenModelConfig,
  requested: readonly InferInput[],
): { inputs: Map<string, Tensor>; batchSize: number } {
  const model = config.name;
  const batching = config.max_batch_size > 0;
  const { byName } = planOf(config);
  let batchSize = 1;
  const inputs = new Map<string, Tensor>();
  for (const [index, input] of requested.entries()) {
    const plan = byName.get(input.name)!;
    checkInputShape(model, batching, plan, input);
    if (batching) batchSize = nextBatchSize(model, index, batchSize, input);
    checkInputData(model, input);
    inputs.set(input.name, reshapedInput(plan.config, batching, input));
  }
  if (batching) checkBatchSize(config, requested.length, batchSize);
  return { inputs, batchSize };
}

/** Outputs: known names, none twice, a valid classification count; none named → all, in config order. */
export function prepareOutputs(
  config: FrozenModelConfig,
  requested: InferenceRequest['outputs'],
): OutputPlan[] {
  const model = config.name;
  const { outputNames } = planOf(config);
  const outputs: OutputPlan[] = [];
  if (requested && requested.length > 0) {
    const seen = new Set<string>();
    for (const out of requested) {
      if (!outputNames.has(out.name)) {
        throw plainInvalidArg(`unexpected inference output '${out.name}' for model '${model}'`);
      }
      if (seen.has(out.name)) {
        throw invalidArg(`output '${out.name}' already exists in request`);
      }
      seen.add(out.name);
      const cls = out.parameters?.classification;
      let classification = 0;
      if (cls !== undefined) {
        if (typeof cls !== 'number' || !Number.isInteger(cls) || cls < 0) {
          throw invalidArg(`classification parameter of output '${out.name}' must be a non-negative integer`);
        }
        classification = cls;
      }
      outputs.push({ name: out.name, classification });
    }
  } else {
    for (const o of config.output) outputs.push({ name: o.name, classification: 0 });
  }
  return outputs;
}

/** The request parameters the scheduler reads: sequence id and flags, priority, timeout. */
export function requestControls(
  params: Readonly<Parameters>,
): Pick<PreparedRequest, 'correlationId' | 'flags' | 'priority' | 'timeoutUs'> {
  const correlationId = correlationIdOf(params.sequence_id);
  let flags = 0;
  if (toBoolean(params.sequence_start)) flags |= SEQUENCE_START;
  if (toBoolean(params.sequence_end)) flags |= SEQUENCE_END;
  const priority = toInteger('priority', params.priority);
  const timeoutUs = toInteger('timeout', params.timeout);
  if (priority < 0) throw invalidArg(`parameter 'priority' must be >= 0`);
  if (timeoutUs < 0) throw invalidArg(`parameter 'timeout' must be >= 0`);
  return { correlationId, flags, priority, timeoutUs };
}

/** Checks a request against its model's config, in Triton's order, and builds what a backend sees. */
export function prepareRequest(config: FrozenModelConfig, request: InferenceRequest): PreparedRequest {
  rejectDuplicateOutputs(request);
  checkInputNames(config, request.inputs);
  const { inputs, batchSize } = prepareInputs(config, request.inputs);
  const outputs = prepareOutputs(config, request.outputs);
  const params = request.parameters ?? {};
  const { correlationId, flags, priority, timeoutUs } = requestControls(params);
  return {
    id: request.id ?? '',
    inputs,
    outputs,
    batchSize,
    correlationId,
    flags,
    priority,
    timeoutUs,
    parameters: params,
  };
}

/**
 * Triton prefixes request-validation errors with the request id (`<id_unknown>` when the request has
 * none); clients and Triton's QA match on the text after it, tools on the prefix.
 */
export function withRequestId(err: unknown, id: string | undefined): unknown {
  if (!(err instanceof NereidError) || UNPREFIXED.has(err)) return err;
  return new NereidError(err.code, `[request id: ${id || '<id_unknown>'}] ${err.message}`, { cause: err });
}
