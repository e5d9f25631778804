/**
 * Implicit state (`sequence_batching.state`): for each state the backend receives an input tensor
 * (`input_name`) that holds zeros or the configured `initial_state` on a sequence's first request and,
 * after that, whatever the model produced as `output_name` on the sequence's previous request. This module
 * compiles the state config once per model (checking it with Triton's messages) and keeps one sequence's
 * state tensors; the batcher owns when a sequence starts and ends.
 */
import { fromConfigDataType, dataTypeInfo, type DataType } from '../../../common/datatype.js';
import { invalidArg, unsupported } from '../../../common/errors.js';
import { elementCount, type Tensor } from '../../../common/tensor.js';
import type { FrozenModelConfig } from '../../../model-config/model-config.js';

export interface StateSpec {
  readonly inputName: string;
  readonly outputName: string;
  readonly datatype: DataType;
  /** What the state input holds on a sequence's first request (a batch dimension of 1 included). */
  readonly initial: Tensor;
}

/** Reads `<model>/initial_state/<file>`; absent when the scheduler does not know the model directory. */
export type InitialStateReader = (file: string) => Buffer;

/** Zero-filled bytes for a tensor: zeros, or one empty string per element for BYTES. */
export function zeroData(datatype: DataType, shape: readonly number[]): Buffer {
  const size = dataTypeInfo(datatype).byteSize;
  // A BYTES element of length 0 is its 4-byte length prefix, all zeros.
  return Buffer.alloc(elementCount(shape) * (size === 0 ? 4 : size));
}

function byteSize(datatype: DataType, shape: readonly number[]): number {
  return elementCount(shape) * dataTypeInfo(datatype).byteSize;
}

export function compileStates(config: FrozenModelConfig, readFile?: InitialStateReader): StateSpec[] {
  const batchDim = config.max_batch_size > 0 ? [1] : [];
  const specs: StateSpec[] = [];
  const inputs = new Set<string>();
  const outputs = new Set<string>();
  for (const state of config.sequence_batching?.state ?? []) {
    const name = state.input_name;
    const datatype = fromConfigDataType(state.data_type);
    if (!datatype) throw invalidArg(`state '${name}' of model '${config.name}' has no usable data type`);
    // Triton ignores a repeated input or output name (with a warning); so do we.
    if (inputs.has(name) || outputs.has(state.output_name)) continue;
    inputs.add(name);
    outputs.add(state.output_name);
    if (state.initial_state.length > 1) {
      throw invalidArg(
        `initial_state field for state input '${name}' must contain exactly one or zero element. Found '${state.initial_state.length}' elements.`,
      );
    }
    let initial: Tensor;
    if (state.initial_state.length === 0) {
      // A variable dim starts at 1; the model may grow it with the state it returns.
      const shape = [...batchDim, ...state.dims.map((d) => (d === -1 ? 1 : d))];
      initial = { name, datatype, shape, data: zeroData(datatype, shape) };
    } else {
      const init = state.initial_state[0];
      if (init.data_type !== state.data_type) {
        throw invalidArg(
          `The data type used for 'initial_state' field of state '${name}' does not match the state data type.`,
        );
      }
      if (!init.name) {
        throw invalidArg(`Field 'name' must be set when using initial_state for state input '${name}'.`);
      }
      if (init.dims.length !== state.dims.length) {
        throw invalidArg(
          `Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input '${name}'. ${init.dims.length} != ${state.dims.length}`,
        );
      }
      init.dims.forEach((d, i) => {
        if (d === -1) {
          throw invalidArg(
            `'initial_state' field for state input name '${name}' contains variable dimensions.`,
          );
        }
        if (state.dims[i] !== -1 && d !== state.dims[i]) {
          throw invalidArg(
            `'initial_state' dim for input name '${name}' doesn't match 'state' dim description. ${d} != ${state.dims[i]}`,
          );
        }
      });
      const shape = [...batchDim, ...init.dims];
      let data: Buffer;
      if (init.zero_data !== undefined) {
        data = zeroData(datatype, shape);
      } else if (init.data_file !== undefined) {
        if (!readFile) {
          throw unsupported(
            `initial_state data_file '${init.data_file}' for state input '${name}' is not supported here; use zero_data`,
          );
        }
        const file = readFile(init.data_file);
        if (datatype === 'BYTES') {
          data = file;
        } else {
          const need = byteSize(datatype, init.dims);
          if (file.length < need) {
            throw invalidArg(
              `initial_state setting expects ${need} bytes, but the data provided from ${init.data_file}only has ${file.length} bytes.`,
            );
          }
          data = file.subarray(0, need);
        }
      } else {
        throw invalidArg(`initial_state setting expects state'${name}' to have state_data set`);
      }
      initial = { name, datatype, shape, data };
    }
    specs.push({ inputName: name, outputName: state.output_name, datatype, initial });
  }
  return specs;
}

/** One sequence's current state inputs, by input name. */
export type SequenceStates = Map<string, Tensor>;

export function initialStates(specs: readonly StateSpec[]): SequenceStates {
  return new Map(specs.map((s) => [s.inputName, s.initial]));
}

/**
 * Keeps the state outputs among a response's tensors as the sequence's next state inputs. The tensors are
 * kept as they are (views over the backend's output): the backend gave them to the core, and copying a
 * large state on every step would cost more than the batch buffer it keeps alive.
 */
export function captureStates(
  specs: readonly StateSpec[],
  outputs: readonly Tensor[],
  into: SequenceStates,
): void {
  for (const spec of specs) {
    const out = outputs.find((t) => t.name === spec.outputName);
    if (out) into.set(spec.inputName, { ...out, name: spec.inputName });
  }
}
