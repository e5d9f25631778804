/**
 * Picks a model version's scheduler from its config: Triton's default scheduler, the dynamic batcher
 * (`dynamic_batching`), or the sequence batcher (`sequence_batching`). Ensembles have their own
 * scheduler in core/ensemble. Each scheduler kind adds its case here and nowhere else.
 */
import type { Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { DefaultScheduler } from './default-scheduler.js';
import { DynamicBatcher } from './dynamic-batcher.js';
import type { InstancePool } from './instance-pool.js';
import type { Scheduler } from './scheduler.js';
import { SequenceBatchScheduler } from './sequence/sequence-scheduler.js';

export interface SchedulerContext {
  readonly config: FrozenModelConfig;
  readonly pool: InstancePool;
  readonly log: Logger;
}

export function createScheduler(ctx: SchedulerContext): Scheduler {
  // With max_batch_size 0 the dynamic batcher still applies priorities and queue policies (as Triton).
  if (ctx.config.dynamic_batching) return new DynamicBatcher(ctx);
  if (ctx.config.sequence_batching) return new SequenceBatchScheduler(ctx);
  return new DefaultScheduler(ctx.pool);
}
