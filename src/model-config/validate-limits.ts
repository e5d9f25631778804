/**
 * Limits on what a config may make the server allocate, checked at load after Triton's own checks (Triton
 * has none of these; its C++ allocations fail the same configs later, or not at all on a big machine). A
 * config is untrusted input: a count in it must never be able to exhaust the heap, or keep a model loading
 * for hours. Each limit is far above any real model's needs (docs/security.md, "Every limit and its
 * default"); a config over one is refused with INVALID_ARG naming the field, the value and the limit.
 */
import { invalidArg } from '../common/errors.js';
import type { FrozenModelConfig } from './model-config.js';

/** Sequence-batcher slots of one model version, over all its instances (each slot is allocated at load). */
export const MAX_SEQUENCE_SLOTS = 65_536;
/** Entries of one `preferred_batch_size` list. */
export const MAX_PREFERRED_BATCH_SIZES = 1024;
/** Warmup executions of one instance: the sum over samples of `count` (at least 1) × `batch_size`. */
export const MAX_WARMUP_REQUESTS = 10_000;
/** Bytes of one warmup input tensor (generated zeros or random data, or a data file). */
export const MAX_WARMUP_INPUT_BYTES = 256 * 1024 * 1024;

export function checkConfigLimits(cfg: FrozenModelConfig): void {
  const sb = cfg.sequence_batching;
  if (sb) {
    const instances = cfg.instance_group.reduce((n, g) => n + Math.max(1, g.count), 0);
    const candidates = sb.oldest?.max_candidate_sequences ?? 0;
    const perInstance = sb.oldest && candidates > 0 ? candidates : Math.max(1, cfg.max_batch_size);
    const field = sb.oldest && candidates > 0 ? 'oldest.max_candidate_sequences' : 'max_batch_size';
    if (perInstance * Math.max(1, instances) > MAX_SEQUENCE_SLOTS) {
      throw invalidArg(
        `sequence batching for ${cfg.name} needs ${perInstance} slots per instance (${field}) × ${instances} ` +
          `instance(s), more than the limit of ${MAX_SEQUENCE_SLOTS} sequence slots per model`,
      );
    }
  }
  const lists: [string, readonly number[] | undefined][] = [
    ['dynamic_batching.preferred_batch_size', cfg.dynamic_batching?.preferred_batch_size],
    ['sequence_batching.oldest.preferred_batch_size', sb?.oldest?.preferred_batch_size],
  ];
  for (const [field, list] of lists) {
    if (list && list.length > MAX_PREFERRED_BATCH_SIZES) {
      throw invalidArg(
        `${field} of ${cfg.name} has ${list.length} entries, more than the limit of ${MAX_PREFERRED_BATCH_SIZES}`,
      );
    }
  }
  let warmups = 0;
  for (const w of cfg.model_warmup) {
    warmups += Math.max(1, w.count) * Math.max(0, w.batch_size);
    if (warmups > MAX_WARMUP_REQUESTS) {
      throw invalidArg(
        `model_warmup of ${cfg.name} asks for more than ${MAX_WARMUP_REQUESTS} warmup requests per instance ` +
          `(count × batch_size summed over samples; sample '${w.name}': count ${w.count}, batch_size ${w.batch_size})`,
      );
    }
  }
}
