/**
 * The ensemble planner: turns `ensemble_scheduling.step[]` into a data-flow graph over ensemble tensors —
 * which step writes each tensor, which steps read it, the levels in which steps can run (a step of level n
 * needs only tensors written at levels < n), and which steps a request needs for the outputs it asks for.
 * Pure. Config validation (model-config/validate-ensemble.ts) has already run with Triton's messages; the
 * planner re-checks what the runner relies on (every read tensor has a writer, no cycle) so that it never
 * runs a graph that cannot finish, and says which step is at fault.
 */
import { invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';

/** One `input_map` / `output_map` entry: the member model's tensor and the ensemble tensor it maps to. */
export interface StepBinding {
  readonly member: string;
  readonly tensor: string;
}

export interface PlannedStep {
  readonly index: number;
  readonly modelName: string;
  /** -1 = the member's default version at request time. */
  readonly modelVersion: number;
  /** Member input ← ensemble tensor, in config order. */
  readonly inputs: readonly StepBinding[];
  /** Member output → ensemble tensor, in config order. */
  readonly outputs: readonly StepBinding[];
  /** 0 = reads only ensemble inputs; otherwise 1 + the highest level among the steps it reads from. */
  readonly level: number;
}

export interface EnsemblePlan {
  readonly name: string;
  readonly steps: readonly PlannedStep[];
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  /** Ensemble tensor → the step that writes it (ensemble inputs have none). */
  readonly producer: ReadonlyMap<string, number>;
  /** Ensemble tensor → the steps that read it, ascending. */
  readonly consumers: ReadonlyMap<string, readonly number[]>;
  /** Step indices by level: steps within one level are independent of each other. */
  readonly levels: readonly (readonly number[])[];
}

/** How errors and logs name a step: steps have no names, and one model may serve several steps. */
export function describeStep(step: Pick<PlannedStep, 'index' | 'modelName'>): string {
  return `step ${step.index} (model '${step.modelName}')`;
}

function bindings(map: Readonly<Record<string, string>>): StepBinding[] {
  return Object.entries(map).map(([member, tensor]) => ({ member, tensor }));
}

/** A cycle among `stuck` steps (each reads a tensor another stuck step writes), as a chain of indices. */
function findStepCycle(
  stuck: ReadonlySet<number>,
  readsFrom: (step: number) => readonly number[],
): number[] | undefined {
  const state = new Map<number, 'active' | 'done'>();
  const chain: number[] = [];
  const walk = (s: number): number[] | undefined => {
    state.set(s, 'active');
    chain.push(s);
    for (const p of readsFrom(s)) {
      if (!stuck.has(p)) continue;
      if (state.get(p) === 'active') return [...chain.slice(chain.indexOf(p)), p];
      if (state.get(p) === undefined) {
        const found = walk(p);
        if (found) return found;
      }
    }
    chain.pop();
    state.set(s, 'done');
    return undefined;
  };
  for (const s of [...stuck].sort((a, b) => a - b)) {
    if (state.get(s) !== undefined) continue;
    const found = walk(s);
    if (found) return found;
  }
  return undefined;
}

type DraftStep = Omit<PlannedStep, 'level'>;

/** Ensemble tensor → its one writer, and → its readers; every read tensor an input or written. */
function tensorFlow(
  name: string,
  draft: readonly DraftStep[],
  inputSet: ReadonlySet<string>,
): { producer: Map<string, number>; consumers: Map<string, number[]> } {
  const producer = new Map<string, number>();
  const consumers = new Map<string, number[]>();
  for (const step of draft) {
    for (const b of step.outputs) {
      if (inputSet.has(b.tensor)) {
        throw invalidArg(
          `in ensemble '${name}', ensemble input '${b.tensor}' is also written by ${describeStep(step)}`,
        );
      }
      if (producer.has(b.tensor)) {
        throw invalidArg(
          `ensemble tensor '${b.tensor}' can appear in an output map only once for ensemble '${name}' step ${step.index}`,
        );
      }
      producer.set(b.tensor, step.index);
    }
  }
  for (const step of draft) {
    for (const b of step.inputs) {
      if (!inputSet.has(b.tensor) && !producer.has(b.tensor)) {
        throw invalidArg(
          `in ensemble '${name}', ${describeStep(step)} reads ensemble tensor '${b.tensor}', which is neither an ensemble input nor written by any step`,
        );
      }
      const list = consumers.get(b.tensor) ?? [];
      if (!list.includes(step.index)) list.push(step.index);
      consumers.set(b.tensor, list);
    }
  }
  return { producer, consumers };
}

/** Every ensemble input is read by some step, every ensemble output written (or passed through). */
function checkEnds(
  name: string,
  inputs: readonly string[],
  outputs: readonly string[],
  producer: ReadonlyMap<string, number>,
  consumers: ReadonlyMap<string, readonly number[]>,
): void {
  const inputSet = new Set(inputs);
  for (const i of inputs) {
    // (sic) Triton's message has the stray quote after the ensemble name.
    if (!consumers.has(i)) throw invalidArg(`ensemble input '${i}' for ensemble ${name}' is not used`);
  }
  for (const o of outputs) {
    if (!producer.has(o) && !inputSet.has(o)) {
      throw invalidArg(`output '${o}' for ensemble '${name}' is not written`);
    }
  }
}

/**
 * Each step's level (Kahn's algorithm over steps): 0 when it reads only ensemble inputs, else one more
 * than the highest step it reads from. What never becomes ready sits on or behind a cycle: an error
 * naming the cycle's steps in the direction data moves.
 */
function stepLevels(
  name: string,
  draft: readonly DraftStep[],
  producer: ReadonlyMap<string, number>,
): number[] {
  const readsFrom = (s: number): number[] => {
    const out: number[] = [];
    for (const b of draft[s].inputs) {
      const p = producer.get(b.tensor);
      if (p !== undefined && !out.includes(p)) out.push(p);
    }
    return out;
  };
  const level = new Array<number>(draft.length).fill(-1);
  let remaining = draft.length;
  let progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (const step of draft) {
      if (level[step.index] >= 0) continue;
      const deps = readsFrom(step.index);
      if (deps.some((d) => level[d] < 0)) continue;
      level[step.index] = deps.length === 0 ? 0 : 1 + Math.max(...deps.map((d) => level[d]));
      remaining--;
      progress = true;
    }
  }
  if (remaining > 0) {
    const stuck = new Set(draft.filter((s) => level[s.index] < 0).map((s) => s.index));
    const cycle = findStepCycle(stuck, readsFrom) ?? [...stuck];
    // readsFrom walks against the data flow; print the chain in the direction data moves.
    const text = cycle
      .reverse()
      .map((s) => describeStep(draft[s]))
      .join(' -> ');
    throw invalidArg(`in ensemble '${name}', steps form a cycle: ${text}`);
  }
  return level;
}

export function planEnsemble(config: FrozenModelConfig): EnsemblePlan {
  const name = config.name;
  const configured = config.ensemble_scheduling?.step ?? [];
  if (configured.length === 0) throw invalidArg(`must specify 'step' for ensemble '${name}'`);
  const inputs = config.input.map((i) => i.name);
  const outputs = config.output.map((o) => o.name);

  const draft: DraftStep[] = configured.map((s, index) => ({
    index,
    modelName: s.model_name,
    modelVersion: s.model_version,
    inputs: bindings(s.input_map),
    outputs: bindings(s.output_map),
  }));
  const { producer, consumers } = tensorFlow(name, draft, new Set(inputs));
  checkEnds(name, inputs, outputs, producer, consumers);
  const level = stepLevels(name, draft, producer);

  const steps: PlannedStep[] = draft.map((s) => Object.freeze({ ...s, level: level[s.index] }));
  const levels: number[][] = [];
  for (const s of steps) (levels[s.level] ??= []).push(s.index);
  return {
    name,
    steps,
    inputs,
    outputs,
    producer,
    consumers,
    levels,
  };
}

/**
 * The steps a request needs for `requested` outputs: their writers and, transitively, the writers of what
 * those read (Triton prunes the others too). Ascending.
 */
export function stepsFor(plan: EnsemblePlan, requested: Iterable<string>): number[] {
  const needed = new Set<number>();
  const stack = [...requested];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const t = stack.pop() as string;
    if (seen.has(t)) continue;
    seen.add(t);
    const p = plan.producer.get(t);
    if (p === undefined || needed.has(p)) continue;
    needed.add(p);
    for (const b of plan.steps[p].inputs) stack.push(b.tensor);
  }
  return [...needed].sort((a, b) => a - b);
}

/** What one request needs of the plan, given the outputs it asks for (cached per output set). */
export interface RequestPlan {
  readonly requested: ReadonlySet<string>;
  /** The steps that run, ascending. */
  readonly steps: readonly number[];
  /** Ensemble tensor → the steps that run and read it. */
  readonly consumers: ReadonlyMap<string, readonly number[]>;
  /** Ensemble tensor → how many times it is read: its consumers, plus one if it is a requested output. */
  readonly readers: ReadonlyMap<string, number>;
  /** Per step: the outputs somebody reads (empty for steps that do not run). */
  readonly stepOutputs: readonly (readonly StepBinding[])[];
  /**
   * Two steps can be in flight at once: some level holds two running steps, or a running step is
   * decoupled (its downstream steps run while it still streams). Otherwise the steps form a chain.
   */
  readonly concurrent: boolean;
}

/** `decoupledSteps[i]`: step i streams (its member is decoupled). */
export function requestPlan(
  plan: EnsemblePlan,
  requested: readonly string[],
  decoupledSteps: readonly boolean[] = [],
): RequestPlan {
  const steps = stepsFor(plan, requested);
  const needed = new Set(steps);
  const wanted = new Set(requested);
  const consumers = new Map<string, readonly number[]>();
  for (const [tensor, list] of plan.consumers) {
    const running = list.filter((s) => needed.has(s));
    if (running.length > 0) consumers.set(tensor, running);
  }
  const readers = new Map<string, number>();
  for (const tensor of new Set([...consumers.keys(), ...wanted])) {
    readers.set(tensor, (consumers.get(tensor)?.length ?? 0) + (wanted.has(tensor) ? 1 : 0));
  }
  const stepOutputs = plan.steps.map((s) =>
    needed.has(s.index) ? s.outputs.filter((b) => (readers.get(b.tensor) ?? 0) > 0) : [],
  );
  const perLevel = new Map<number, number>();
  let concurrent = false;
  for (const s of steps) {
    const n = (perLevel.get(plan.steps[s].level) ?? 0) + 1;
    perLevel.set(plan.steps[s].level, n);
    if (n > 1 || decoupledSteps[s] === true) concurrent = true;
  }
  return { requested: wanted, steps, consumers, readers, stepOutputs, concurrent };
}
