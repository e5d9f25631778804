/**
 * The ensemble dependency graph: an ensemble depends on the models its `ensemble_scheduling.step[]`
 * name. The manager uses it to load members before an ensemble, to refuse cycles, and to find the
 * models an unload affects. Pure functions over a "members of" lookup.
 */
import type { DeepReadonly, ModelConfig } from '../../model-config/model-config.js';

export interface MemberRef {
  readonly name: string;
  /** -1 = whichever version is the default. */
  readonly version: number;
}

export function membersOf(config: DeepReadonly<ModelConfig> | undefined): MemberRef[] {
  const steps = config?.ensemble_scheduling?.step ?? [];
  return steps.map((s) => ({ name: s.model_name, version: s.model_version ?? -1 }));
}

export function memberNames(config: DeepReadonly<ModelConfig> | undefined): string[] {
  return [...new Set(membersOf(config).map((m) => m.name))];
}

/**
 * A dependency cycle through `start`, as the chain `[start, …, start]`, or undefined. Only cycles that
 * return to `start` count: a cycle further down is reported when its own models are checked.
 */
export function findCycle(start: string, members: (name: string) => readonly string[]): string[] | undefined {
  const visited = new Set<string>();
  const walk = (node: string, chain: string[]): string[] | undefined => {
    for (const m of members(node)) {
      if (m === start) return [...chain, m];
      if (visited.has(m)) continue;
      visited.add(m);
      const found = walk(m, [...chain, m]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(start, [start]);
}

/** Every model reachable from `roots` through `next` (roots included). */
export function closure(roots: Iterable<string>, next: (name: string) => Iterable<string>): Set<string> {
  const out = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const n = stack.pop() as string;
    if (out.has(n)) continue;
    out.add(n);
    for (const m of next(n)) if (!out.has(m)) stack.push(m);
  }
  return out;
}
