/**
 * Model configuration as a JavaScript model sees it: Triton's JSON form of config.pbtxt (the text
 * `args.model_config` carries, parsed), lookup helpers shaped like triton_python_backend_utils, the
 * datatype mapping between config enums and tensor datatypes, and AutoCompleteConfig — the object a
 * model's static autoCompleteConfig() receives and edits, like pb_utils.ModelConfig.
 */
import { fromConfigDataType, isDataType, toConfigDataType, type DataType } from '../common/datatype.js';
import { invalidArg } from '../common/errors.js';

/** One `input` / `output` entry in Triton's JSON form. */
export interface TensorConfigJson {
  name: string;
  /** `TYPE_FP32`, `TYPE_STRING`, ... */
  data_type: string;
  dims: number[];
  optional?: boolean;
  reshape?: { shape: number[] };
  [key: string]: unknown;
}

/** The parts of a model config models usually read; every other field is there too, untyped. */
export interface ModelConfigJson {
  name: string;
  backend?: string;
  max_batch_size: number;
  input: TensorConfigJson[];
  output: TensorConfigJson[];
  parameters?: Record<string, { string_value: string }>;
  model_transaction_policy?: { decoupled?: boolean };
  dynamic_batching?: Record<string, unknown>;
  sequence_batching?: Record<string, unknown>;
  ensemble_scheduling?: Record<string, unknown>;
  [key: string]: unknown;
}

export function getInputConfigByName(config: ModelConfigJson, name: string): TensorConfigJson | undefined {
  return (config.input ?? []).find((t) => t.name === name);
}

export function getOutputConfigByName(config: ModelConfigJson, name: string): TensorConfigJson | undefined {
  return (config.output ?? []).find((t) => t.name === name);
}

/** `model_transaction_policy { decoupled: true }`. */
export function usingDecoupledTransactionPolicy(config: ModelConfigJson): boolean {
  return config.model_transaction_policy?.decoupled === true;
}

/** A `parameters { key: ... value: { string_value: ... } }` entry. */
export function getParameter(config: ModelConfigJson, key: string): string | undefined {
  return config.parameters?.[key]?.string_value;
}

/** `TYPE_FP32` → `FP32` (`TYPE_STRING` → `BYTES`); throws on an unknown enum name. */
export function dataTypeFromConfig(configType: string): DataType {
  const dt = fromConfigDataType(configType);
  if (!dt) throw invalidArg(`unknown config data type '${configType}'`);
  return dt;
}

/** `FP32` → `TYPE_FP32` (`BYTES` → `TYPE_STRING`). */
export function dataTypeToConfig(datatype: DataType): string {
  if (!isDataType(datatype)) throw invalidArg(`unknown datatype '${String(datatype)}'`);
  return toConfigDataType(datatype);
}

function sameDims(a: readonly number[] | undefined, b: readonly number[]): boolean {
  return a !== undefined && a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * What `static autoCompleteConfig(config)` gets: the config as read so far, to fill in what the model
 * knows. Only max_batch_size, inputs, outputs, the scheduler choice and the transaction policy change.
 * The method returns this object (or the plain config object).
 */
export class AutoCompleteConfig {
  private readonly config: ModelConfigJson;

  constructor(config: ModelConfigJson) {
    this.config = structuredClone(config);
    this.config.input ??= [];
    this.config.output ??= [];
    this.config.max_batch_size ??= 0;
  }

  /** The config as it stands (a copy). */
  asObject(): ModelConfigJson {
    return structuredClone(this.config);
  }

  get maxBatchSize(): number {
    return this.config.max_batch_size;
  }

  /** Fails, as Triton does, when the config already asks for a larger non-zero max_batch_size. */
  setMaxBatchSize(maxBatchSize: number): this {
    if (!Number.isSafeInteger(maxBatchSize) || maxBatchSize < 0) {
      throw invalidArg(`max_batch_size must be an integer >= 0, got ${maxBatchSize}`);
    }
    const current = this.config.max_batch_size;
    if (current !== 0 && current > maxBatchSize) {
      throw invalidArg(
        `configuration specified max_batch_size ${current}, but in auto-complete-config function for model '${this.config.name}' specified max_batch_size ${maxBatchSize}`,
      );
    }
    this.config.max_batch_size = maxBatchSize;
    return this;
  }

  /** Dynamic batching unless another scheduler is chosen (then an error). */
  setDynamicBatching(): this {
    if (this.config.sequence_batching !== undefined || this.config.ensemble_scheduling !== undefined) {
      throw invalidArg(
        `configuration specified a scheduler other than dynamic batching for model '${this.config.name}'`,
      );
    }
    this.config.dynamic_batching ??= {};
    return this;
  }

  setModelTransactionPolicy(policy: { decoupled: boolean }): this {
    this.config.model_transaction_policy = { decoupled: policy.decoupled === true };
    return this;
  }

  addInput(input: TensorConfigJson): this {
    this.addTensor('input', input);
    return this;
  }

  addOutput(output: TensorConfigJson): this {
    this.addTensor('output', output);
    return this;
  }

  /** An entry of the same name must agree on what both set; otherwise the new one is appended. */
  private addTensor(kind: 'input' | 'output', t: TensorConfigJson): void {
    if (typeof t?.name !== 'string' || t.name === '') throw invalidArg(`${kind} must have a name`);
    if (t.data_type !== undefined) dataTypeFromConfig(t.data_type);
    const list = this.config[kind];
    const existing = list.find((e) => e.name === t.name);
    if (!existing) {
      list.push(structuredClone(t));
      return;
    }
    const where = `${kind} '${t.name}' for model '${this.config.name}'`;
    if (t.data_type !== undefined && existing.data_type && existing.data_type !== 'TYPE_INVALID') {
      if (existing.data_type !== t.data_type) {
        throw invalidArg(
          `${where} has data_type ${t.data_type} in auto-complete-config but ${existing.data_type} in the configuration`,
        );
      }
    }
    if (t.dims !== undefined && existing.dims?.length > 0 && !sameDims(existing.dims, t.dims)) {
      throw invalidArg(
        `${where} has dims [${t.dims.join(',')}] in auto-complete-config but [${existing.dims.join(',')}] in the configuration`,
      );
    }
    Object.assign(existing, { ...structuredClone(t), ...existing });
    if (!existing.data_type || existing.data_type === 'TYPE_INVALID') existing.data_type = t.data_type;
    if (!existing.dims || existing.dims.length === 0) existing.dims = [...(t.dims ?? [])];
  }
}
