/**
 * Which version folders a model loads under its `version_policy` (model_config.proto ModelVersionPolicy):
 * `latest { num_versions }` (the default, with 1), `all {}`, or `specific { versions }`. Pure.
 */
import type { DeepReadonly, ModelVersionPolicy } from '../../model-config/model-config.js';

export interface VersionSelection {
  /** Versions to load, ascending. */
  readonly load: readonly number[];
  /** Versions a `specific` policy names that have no folder, ascending. */
  readonly missing: readonly number[];
}

export function selectVersions(
  policy: DeepReadonly<ModelVersionPolicy> | undefined,
  available: readonly number[],
): VersionSelection {
  const present = [...new Set(available)].sort((a, b) => a - b);
  if (policy?.specific) {
    const wanted = [...new Set(policy.specific.versions)].sort((a, b) => a - b);
    const have = new Set(present);
    return {
      load: wanted.filter((v) => have.has(v)),
      missing: wanted.filter((v) => !have.has(v)),
    };
  }
  if (policy?.all) return { load: present, missing: [] };
  // latest (explicit or by default): the highest num_versions folders. Triton treats a count below 1 as
  // "nothing", which then fails the load for having no version.
  const n = policy?.latest ? policy.latest.num_versions : 1;
  return { load: n > 0 ? present.slice(Math.max(0, present.length - n)) : [], missing: [] };
}
