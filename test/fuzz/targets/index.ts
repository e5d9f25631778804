/**
 * Every fuzz target, in the order runs go through them, and how a total case budget is shared among them
 * (by weight: the decoders that see the most hostile traffic get the most cases).
 */
import type { FuzzTarget } from '../harness.js';
import { CORE_TARGETS } from './core.js';
import { GRPC_TARGETS } from './grpc.js';
import { HTTP_TARGETS } from './http.js';
import { MODEL_CONFIG_TARGETS } from './model-config.js';
import { RESPONSE_TARGETS } from './responses.js';
import { SHM_TARGETS } from './shm.js';

export const ALL_TARGETS: readonly FuzzTarget<unknown>[] = [
  ...MODEL_CONFIG_TARGETS,
  ...HTTP_TARGETS,
  ...GRPC_TARGETS,
  ...SHM_TARGETS,
  ...CORE_TARGETS,
  ...RESPONSE_TARGETS,
];

/** Cases per target for a run of `total` cases over `targets` (each gets at least `minimum`). */
export function shareCases(
  total: number,
  targets: readonly FuzzTarget<unknown>[],
  minimum = 20,
): Map<string, number> {
  const weights = targets.reduce((n, t) => n + t.weight, 0);
  // Rounded up, so a run does at least `total` cases.
  return new Map(targets.map((t) => [t.name, Math.max(minimum, Math.ceil((total * t.weight) / weights))]));
}

export { stopLiveServer } from './core.js';
