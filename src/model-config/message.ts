/**
 * The bridge between schema-shaped parse results (ProtoMessage) and the typed ModelConfig: both readers
 * (text and JSON) produce a ProtoMessage that already has proto3 defaults, and this is the one place that
 * declares it a ModelConfig.
 */
import type { ModelConfig } from './model-config.js';
import type { ProtoMessage } from './values.js';

/**
 * `version_policy` is a sub-message, so an absent one would stay undefined, but ModelConfig types it as
 * always present; an absent policy therefore reads as `{}` (no choice set), which normalize() turns into
 * Triton's default `latest { num_versions: 1 }`.
 */
export function finishModelConfig(msg: ProtoMessage): ModelConfig {
  msg.version_policy ??= {};
  return msg as unknown as ModelConfig;
}
