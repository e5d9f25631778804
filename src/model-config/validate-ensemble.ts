/**
 * The checks Triton runs on an ensemble's own config (ValidateEnsembleSchedulingConfig): no instance
 * groups, optimization or warmup; every step names a model and maps inputs and outputs; each ensemble
 * tensor is written once; data flows from the ensemble inputs to every output; no tensor dangles.
 * Cross-model checks (do the step models exist, do shapes agree) belong to the core at load time.
 */
import type { FrozenModelConfig } from './model-config.js';

interface TensorNode {
  readonly name: string;
  isOutput: boolean;
  ready: boolean;
  readonly prev: TensorNode[];
  readonly next: TensorNode[];
}

function node(graph: Map<string, TensorNode>, name: string, isOutput: boolean): TensorNode {
  let n = graph.get(name);
  if (n === undefined) {
    n = { name, isOutput, ready: false, prev: [], next: [] };
    graph.set(name, n);
  }
  return n;
}

/** Triton's BuildEnsembleGraph: tensors as nodes, each step linking its inputs to its outputs. */
function buildGraph(cfg: FrozenModelConfig, graph: Map<string, TensorNode>): string | undefined {
  const steps = cfg.ensemble_scheduling?.step ?? [];
  for (const [i, step] of steps.entries()) {
    const where = `in step ${i} of ensemble '${cfg.name}'`;
    if (!step.model_name) return `must specify 'model_name' ${where}`;
    if (Object.keys(step.input_map).length === 0) return `must specify 'input_map' ${where}`;
    if (Object.keys(step.output_map).length === 0) return `must specify 'output_map' ${where}`;
    const outputs: TensorNode[] = [];
    for (const tensor of Object.values(step.output_map)) {
      const existing = graph.get(tensor);
      if (existing?.isOutput === true) {
        return `ensemble tensor '${tensor}' can appear in an output map only once for ensemble '${cfg.name}' step ${i}`;
      }
      if (existing) existing.isOutput = true;
      outputs.push(existing ?? node(graph, tensor, true));
    }
    for (const tensor of Object.values(step.input_map)) {
      const input = node(graph, tensor, false);
      for (const out of outputs) {
        out.prev.push(input);
        input.next.push(out);
      }
    }
  }
  return undefined;
}

/** Follows not-ready predecessors back to the first tensor nothing feeds, for the error message. */
function disconnectedSource(output: TensorNode): TensorNode {
  let last = output;
  let prev: TensorNode[] | undefined = output.prev;
  const seen = new Set<string>();
  while (prev !== undefined && prev.length > 0) {
    const candidates: TensorNode[] = prev;
    prev = undefined;
    for (const n of candidates) {
      if (!n.ready && !seen.has(n.name)) {
        seen.add(n.name);
        last = n;
        prev = n.prev;
        break;
      }
    }
  }
  return last;
}

export function ensembleProblem(cfg: FrozenModelConfig): string | undefined {
  const name = cfg.name;
  if (cfg.platform !== 'ensemble') {
    return `ensemble scheduling cannot be set for model '${name}' whose platform is not ensemble`;
  }
  if (cfg.instance_group.length !== 0) return `instance group should not be specified for ensemble '${name}'`;
  if (cfg.optimization !== undefined) return `optimization should not be specified for ensemble '${name}'`;
  if (cfg.model_warmup.length !== 0) return `model_warmup can not be specified for ensemble '${name}'`;
  if ((cfg.ensemble_scheduling?.step.length ?? 0) === 0) return `must specify 'step' for ensemble '${name}'`;

  const graph = new Map<string, TensorNode>();
  const buildError = buildGraph(cfg, graph);
  if (buildError !== undefined) return buildError;

  const queue: TensorNode[] = [];
  for (const input of cfg.input) {
    const n = graph.get(input.name);
    // (sic) Triton's message has the stray quote after the ensemble name.
    if (n === undefined) return `ensemble input '${input.name}' for ensemble ${name}' is not used`;
    n.ready = true;
    queue.push(n);
  }
  for (let i = 0; i < queue.length; i++) {
    for (const next of queue[i].next) {
      if (next.ready) continue;
      next.ready = next.prev.every((p) => p.ready);
      if (next.ready) queue.push(next);
    }
  }

  const outputs = new Set<string>();
  for (const output of cfg.output) {
    const n = graph.get(output.name);
    if (n === undefined) return `ensemble output '${output.name}' for ensemble ${name}' is not used`;
    if (!n.ready) {
      const source = disconnectedSource(n);
      const detail =
        source.name !== n.name
          ? `: at least one of its depending tensors, '${source.name}', is not connected`
          : '';
      return `output '${output.name}' for ensemble '${name}' is not written${detail}`;
    }
    outputs.add(output.name);
  }
  for (const n of graph.values()) {
    if (outputs.has(n.name)) continue;
    if (!n.ready || n.next.length === 0) return `ensemble tensor '${n.name}' is unused in ensemble '${name}'`;
  }
  return undefined;
}
