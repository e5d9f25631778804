/**
 * The dynamic batcher's decision, as a pure function of (queue snapshot, config, now): which queued
 * requests form the next batch, or how long to wait for more. Follows Triton's GetDynamicBatch
 * (core/src/dynamic_batch_scheduler.cc) for a batcher that forms a batch only once an instance is free:
 *
 * - requests join in queue order; the sum of their batch sizes never exceeds max_batch_size (a single
 *   request larger than every preferred size still runs alone);
 * - a request whose batch key differs from the first one's (non-ragged input shapes, shape-tensor
 *   contents, the set of inputs of a model with optional inputs) ends the batch;
 * - the largest preferred size that the queue can form now is sent at once, unless the oldest request
 *   has already waited max_queue_delay, in which case everything that fits goes;
 * - otherwise, with no delay configured (0), whatever fits is sent now; with a delay, the batcher waits
 *   until the oldest request of the candidate batch has waited that long, then sends what there is.
 *
 * The batcher calls this only when an instance can take a batch, so "now" always means "now, on a free
 * instance". Timeouts and cancellations are the queue's business and never reach this function.
 */

export interface BatchCandidate {
  /** The request's batch size (at least 1; requests of models without a batch dimension count 1). */
  readonly batchSize: number;
  /** Requests batch together only when their keys are equal (see batch-key.ts). */
  readonly key: string;
  /** When the batcher queued it (process.hrtime.bigint()). */
  readonly enqueuedAt: bigint;
}

export interface BatchPolicyConfig {
  /** max(1, max_batch_size): models without a batch dimension run one request at a time. */
  readonly maxBatchSize: number;
  /** preferred_batch_size, each in [1, maxBatchSize]; never empty (see makeBatchPolicyConfig). */
  readonly preferredBatchSizes: ReadonlySet<number>;
  /** max_queue_delay_microseconds in nanoseconds; 0n = never wait. */
  readonly maxQueueDelayNs: bigint;
}

export type BatchDecision =
  /** Take the first `count` requests of the snapshot (count ≥ 1) as one batch of `size`. */
  | { readonly kind: 'send'; readonly count: number; readonly size: number }
  /** Nothing to send before `until` unless more requests arrive. */
  | { readonly kind: 'wait'; readonly until: bigint }
  /** The queue is empty. */
  | { readonly kind: 'idle' };

export function makeBatchPolicyConfig(
  maxBatchSize: number,
  preferred: readonly number[],
  maxQueueDelayUs: number,
): BatchPolicyConfig {
  const max = Math.max(1, maxBatchSize);
  const sizes = preferred.filter((p) => p > 0 && p <= max);
  // Triton's normalisation makes max_batch_size the preferred size when none is given.
  return {
    maxBatchSize: max,
    preferredBatchSizes: new Set(sizes.length > 0 ? sizes : [max]),
    maxQueueDelayNs: BigInt(Math.max(0, Math.trunc(maxQueueDelayUs))) * 1000n,
  };
}

/** Decides the next batch from the requests in queue order (only as many are read as can matter). */
export function decideBatch(
  queue: Iterable<BatchCandidate>,
  config: BatchPolicyConfig,
  now: bigint,
): BatchDecision {
  const { maxBatchSize, preferredBatchSizes, maxQueueDelayNs } = config;
  let maxPreferred = 0;
  for (const p of preferredBatchSizes) maxPreferred = Math.max(maxPreferred, p);

  let count = 0;
  let size = 0;
  let key = '';
  let oldest = 0n;
  // The best batch seen so far that does not need the delay to pass: a preferred size, or what was
  // pending when one more request would have gone past every preferred size.
  let bestCount = 0;
  let bestSize = 0;
  let sendNow = false;
  for (const item of queue) {
    const b = Math.max(1, item.batchSize);
    if (count === 0) {
      key = item.key;
    } else {
      if (size + b > maxPreferred && bestCount === 0) {
        bestCount = count;
        bestSize = size;
      }
      if (size + b > maxBatchSize || item.key !== key) {
        sendNow = true;
        break;
      }
    }
    size += b;
    count++;
    if (oldest === 0n || item.enqueuedAt < oldest) oldest = item.enqueuedAt;
    if (preferredBatchSizes.has(size)) {
      bestCount = count;
      bestSize = size;
    }
  }
  if (count === 0) return { kind: 'idle' };

  const delayExceeded = maxQueueDelayNs !== 0n && now - oldest >= maxQueueDelayNs;
  if (bestCount !== 0 && !delayExceeded) return { kind: 'send', count: bestCount, size: bestSize };
  if (sendNow || size >= maxPreferred || maxQueueDelayNs === 0n || delayExceeded) {
    return { kind: 'send', count, size };
  }
  return { kind: 'wait', until: oldest + maxQueueDelayNs };
}
