/**
 * Deep-freezing of a finished config: once validated, a config is shared by the scheduler, backends and
 * the config API, so nobody may change it behind the others' backs (writes throw in strict mode).
 */
import type { FrozenModelConfig, ModelConfig } from './model-config.js';

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  for (const child of Object.values(value)) deepFreeze(child);
  Object.freeze(value);
}

/** Returns a deep-frozen copy; the argument itself stays mutable and unshared. */
export function freezeModelConfig(cfg: ModelConfig | FrozenModelConfig): FrozenModelConfig {
  const copy: unknown = structuredClone(cfg);
  deepFreeze(copy);
  return copy as FrozenModelConfig;
}
