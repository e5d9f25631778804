/**
 * When a sequence batch runs, as pure functions of (what is waiting, config, now), so the batcher only owns
 * queues and timers and the rules are tested with tables. Times are microseconds on one monotonic clock.
 *
 * Direct strategy (Triton's DirectSequenceBatch): a batch covers slots 0..highest waiting slot of one
 * instance, one request per slot. It runs at once unless both `max_queue_delay_microseconds` and
 * `minimum_slot_utilization` are set; then it waits until enough slots are waiting or the oldest head has
 * waited the delay.
 *
 * Oldest strategy (Triton's OldestSequenceBatch, a dynamic batcher over the next request of each
 * candidate sequence): a full batch runs at once, so does the largest preferred size that can be filled;
 * otherwise it waits up to `max_queue_delay_microseconds` for the oldest waiting request and then runs
 * what there is.
 */

export type Decision =
  | { readonly kind: 'idle' }
  | { readonly kind: 'run'; readonly count: number }
  | { readonly kind: 'wait'; readonly untilUs: number };

const IDLE: Decision = { kind: 'idle' };

export interface DirectPolicy {
  /** Slots per instance (max(1, max_batch_size)). */
  readonly maxBatchSize: number;
  readonly maxQueueDelayUs: number;
  readonly minimumSlotUtilization: number;
}

/**
 * `heads[s]` is when the request at the head of slot s started waiting, or undefined for an empty slot.
 * A run's `count` is the batch width: slots 0..count-1, empty ones padded with not-ready rows.
 */
export function decideDirect(
  heads: readonly (number | undefined)[],
  policy: DirectPolicy,
  nowUs: number,
): Decision {
  let highest = -1;
  let ready = 0;
  let oldest = Infinity;
  heads.forEach((since, slot) => {
    if (since === undefined) return;
    highest = slot;
    ready++;
    oldest = Math.min(oldest, since);
  });
  if (highest < 0) return IDLE;
  const run: Decision = { kind: 'run', count: highest + 1 };
  if (policy.maxQueueDelayUs === 0 || policy.minimumSlotUtilization === 0) return run;
  if (nowUs - oldest >= policy.maxQueueDelayUs) return run;
  if (ready / policy.maxBatchSize >= policy.minimumSlotUtilization) return run;
  return { kind: 'wait', untilUs: oldest + policy.maxQueueDelayUs };
}

export interface OldestPolicy {
  readonly maxBatchSize: number;
  readonly preferredBatchSizes: readonly number[];
  readonly maxQueueDelayUs: number;
}

/**
 * `waiting` holds, oldest first, when each candidate sequence's next request started waiting. A run's
 * `count` is how many of them (from the front) form the batch.
 */
export function decideOldest(waiting: readonly number[], policy: OldestPolicy, nowUs: number): Decision {
  const n = waiting.length;
  if (n === 0) return IDLE;
  const cap = Math.max(1, policy.maxBatchSize);
  if (n >= cap) return { kind: 'run', count: cap };
  let preferred = 0;
  for (const p of policy.preferredBatchSizes) if (p <= n && p > preferred) preferred = p;
  if (preferred > 0) return { kind: 'run', count: preferred };
  if (policy.maxQueueDelayUs === 0) return { kind: 'run', count: n };
  let oldest = Infinity;
  for (const since of waiting) oldest = Math.min(oldest, since);
  if (nowUs - oldest >= policy.maxQueueDelayUs) return { kind: 'run', count: n };
  return { kind: 'wait', untilUs: oldest + policy.maxQueueDelayUs };
}
