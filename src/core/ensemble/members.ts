/**
 * Load-time checks of an ensemble against the completed configs of its member models (Triton's
 * ValidateEnsembleConfig, with its messages): batch-size limits, every mapped name exists on the member,
 * every required member input is fed, connected tensors agree on datatype and shape, and no step (nor the
 * ensemble's outputs) mixes tensors that descend from different decoupled steps. Also decides whether the
 * ensemble is decoupled in effect: it is when any step on its data paths is.
 */
import { invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { EnsemblePlan } from './plan.js';

interface TensorNode {
  /** The model the datatype and shape were inferred from. */
  readonly model: string;
  readonly dataType: string;
  readonly dims: readonly number[];
  /** dims with a leading -1 when that model batches. */
  readonly fullDims: readonly number[];
}

const dimsText = (dims: readonly number[]): string => `[${dims.join(',')}]`;

/** Same rank, and each pair of dims equal unless one is -1 (variable, checked at run time). */
export function dimsCompatible(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== -1 && b[i] !== -1 && a[i] !== b[i]) return false;
  }
  return true;
}

function tensorNode(model: string, batching: boolean, dataType: string, dims: readonly number[]): TensorNode {
  return { model, dataType, dims, fullDims: batching ? [-1, ...dims] : [...dims] };
}

/**
 * A batching and a non-batching model may share a tensor when the full shapes agree, e.g. [-1,16] on the
 * non-batching side and [16] (plus the batch dimension) on the other.
 */
function consistency(a: TensorNode, b: TensorNode, prefix: string): string | undefined {
  if (a.dataType !== b.dataType) {
    return `${prefix}inconsistent data type: ${a.dataType} is inferred from model ${a.model} while ${b.dataType} is inferred from model ${b.model}`;
  }
  if (!dimsCompatible(a.dims, b.dims) && !dimsCompatible(a.fullDims, b.fullDims)) {
    return `${prefix}inconsistent shape: ${dimsText(a.fullDims)} is inferred from model ${a.model} while ${dimsText(b.fullDims)} is inferred from model ${b.model}`;
  }
  return undefined;
}

export interface MemberCheck {
  /** Some step on the ensemble's data paths is decoupled, so the ensemble is too. */
  readonly decoupled: boolean;
  /** Per step: the member was decoupled at load time. */
  readonly decoupledSteps: readonly boolean[];
}

/**
 * Checks `config` (an ensemble) against `members[i]`, the completed config of step i's model. Throws
 * INVALID_ARG with Triton's message at the first problem.
 */
export function checkMembers(
  config: FrozenModelConfig,
  plan: EnsemblePlan,
  members: readonly FrozenModelConfig[],
): MemberCheck {
  const ensemble = config.name;
  const batching = config.max_batch_size > 0;
  const tensors = new Map<string, TensorNode>();
  for (const input of config.input) {
    const dims = input.reshape ? input.reshape.shape : input.dims;
    tensors.set(input.name, tensorNode(ensemble, batching, input.data_type, dims));
  }
  for (const output of config.output) {
    const dims = output.reshape ? output.reshape.shape : output.dims;
    tensors.set(output.name, tensorNode(ensemble, batching, output.data_type, dims));
  }

  for (const step of plan.steps) {
    const member = members[step.index];
    const model = step.modelName;
    if (member.max_batch_size !== 0 && member.max_batch_size < config.max_batch_size) {
      throw invalidArg(
        `ensemble ${ensemble} allows maximum batch size ${config.max_batch_size}, but it contains model ${model} which only allows maximum batch size to be ${member.max_batch_size}`,
      );
    }
    const memberBatching = member.max_batch_size > 0;
    const memberInputs = new Map(member.input.map((i) => [i.name, i]));
    for (const b of step.inputs) {
      if (!memberInputs.has(b.member)) {
        throw invalidArg(
          `in ensemble ${ensemble}, ensemble tensor ${b.tensor} is mapping to non-existing input ${b.member} in model ${model}`,
        );
      }
    }
    for (const input of member.input) {
      const b = step.inputs.find((x) => x.member === input.name);
      if (b === undefined) {
        if (input.optional === true) continue;
        throw invalidArg(
          `in ensemble ${ensemble}, input ${input.name} in model ${model} is not mapped to any ensemble tensors`,
        );
      }
      const node = tensorNode(model, memberBatching, input.data_type, input.dims);
      const known = tensors.get(b.tensor);
      if (known === undefined) tensors.set(b.tensor, node);
      else {
        const problem = consistency(known, node, `in ensemble ${ensemble}, ensemble tensor ${b.tensor}: `);
        if (problem !== undefined) throw invalidArg(problem);
      }
    }
    const memberOutputs = new Map(member.output.map((o) => [o.name, o]));
    for (const b of step.outputs) {
      const output = memberOutputs.get(b.member);
      if (output === undefined) {
        throw invalidArg(
          `in ensemble ${ensemble}, ensemble tensor ${b.tensor} is mapped from non-existing output ${b.member} in model ${model}`,
        );
      }
      const node = tensorNode(model, memberBatching, output.data_type, output.dims);
      const known = tensors.get(b.tensor);
      if (known === undefined) tensors.set(b.tensor, node);
      else {
        const problem = consistency(known, node, `in ensemble ${ensemble}, ensemble tensor ${b.tensor}: `);
        if (problem !== undefined) throw invalidArg(problem);
      }
    }
  }

  // Decoupled lineage: every response of a decoupled step starts a new lineage; a step (and the set of
  // ensemble outputs) may only combine tensors of one lineage, or it could not tell which belong together.
  const decoupledSteps = plan.steps.map((s) => members[s.index].model_transaction_policy?.decoupled === true);
  const label = new Map<string, number>();
  for (const i of plan.inputs) label.set(i, 0);
  let next = 0;
  const mixed = (model: string): Error =>
    invalidArg(
      `in ensemble ${ensemble}, step of model '${model}' receives inputs originated from different decoupled models`,
    );
  for (const levelSteps of plan.levels) {
    for (const s of levelSteps) {
      const step = plan.steps[s];
      const labels = new Set(step.inputs.map((b) => label.get(b.tensor) ?? 0));
      if (labels.size > 1) throw mixed(step.modelName);
      const inherited = [...labels][0] ?? 0;
      const own = decoupledSteps[s] ? ++next : inherited;
      for (const b of step.outputs) label.set(b.tensor, own);
    }
  }
  const outputLabels = new Set(plan.outputs.map((o) => label.get(o) ?? 0));
  if (outputLabels.size > 1) throw mixed(ensemble);
  return { decoupled: next > 0, decoupledSteps };
}
