/**
 * Triton's dynamic batcher (`dynamic_batching`): owns the priority queue and one timer; what goes into
 * the next batch is batch-policy.ts's decision, made whenever an instance can take a batch. The timer
 * wakes the batcher when the queue delay of a waiting batch runs out and when a queued request's timeout
 * expires, so timeouts are enforced even while no batch forms (Triton checks them only when it forms
 * one). A request cancelled while queued leaves at once. With `preserve_ordering`, responses go out in
 * the order requests left the queue. With max_batch_size 0 every request runs alone, but priorities and
 * queue policies still apply (as in Triton). With the `dynamic_batching_early_dispatch` parameter (a Nereid
 * extension) a waiting batch goes before its delay is out once no client seen lately is left to join it.
 *
 * Pipelined instances (InstanceHandle.pipelineDepth): when every instance is busy the pool may offer a
 * slot behind a running batch. The batcher takes it only for a batch that is complete — it reached the
 * largest preferred size, or the next queued request cannot join it — and otherwise keeps gathering until
 * an instance is idle, as without pipelining. Sending whatever is queued into the slot at once would make
 * the batches smaller (a request arriving while one batch runs would go alone behind it), and the model's
 * cost per request is lowest in large batches; a complete batch loses nothing by going early and saves
 * the round trip between the instance finishing and its next batch arriving.
 */
import { cancelled, invalidArg, unavailable, type NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { batchKeyFunction, type BatchKeyFn } from './batch-key.js';
import {
  decideBatch,
  makeBatchPolicyConfig,
  type BatchCandidate,
  type BatchPolicyConfig,
} from './batch-policy.js';
import { InFlightPeak } from './in-flight-peak.js';
import type { InstancePool } from './instance-pool.js';
import { setPreciseTimer } from './precise-timer.js';
import { PriorityQueue, priorityQueueConfig, type QueueEntry } from './priority-queue.js';
import { ResponseOrder } from './response-order.js';
import type { Job, Scheduler } from './scheduler.js';

/** Time, timers and the end of the event loop's turn, replaceable in tests. */
export interface BatcherClock {
  now(): bigint;
  setTimer(callback: () => void, delayNs: bigint): () => void;
  /**
   * Runs `callback` once the I/O the event loop is handling now has been handled: every request whose
   * bytes this turn read has been parsed and queued by then.
   */
  endOfTurn(callback: () => void): void;
}

export const REAL_CLOCK: BatcherClock = {
  now: () => process.hrtime.bigint(),
  // Not setTimeout: counting whole milliseconds on the loop's clock, it ended a 2 ms queue delay up to
  // 0.95 ms early or 0.4 ms late (p99). A precise timer fires about 0.1 ms after the delay, never before.
  setTimer: setPreciseTimer,
  // The check phase follows the poll phase of the same loop iteration: every socket (and worker message,
  // and finished execution) that poll returned has had its callback and its microtasks by then.
  endOfTurn: (callback) => {
    setImmediate(callback);
  },
};

interface Queued extends BatchCandidate {
  readonly job: Job;
  readonly onAbort: () => void;
  entry?: QueueEntry<Queued>;
}

export interface DynamicBatcherOptions {
  readonly config: FrozenModelConfig;
  readonly pool: InstancePool;
  readonly log: Logger;
  readonly clock?: BatcherClock;
}

const TIMEOUT_EXPIRED = (): NereidError => unavailable('Request timeout expired');

/** The model config parameter that turns on early dispatch (a Nereid extension; off as in Triton). */
export const EARLY_DISPATCH_PARAMETER = 'dynamic_batching_early_dispatch';

function earlyDispatchOf(config: FrozenModelConfig): boolean {
  const value = config.parameters?.[EARLY_DISPATCH_PARAMETER]?.string_value;
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw invalidArg(
    `model '${config.name}': parameter '${EARLY_DISPATCH_PARAMETER}' must be "true" or "false", got '${value}'`,
  );
}

export class DynamicBatcher implements Scheduler {
  private readonly queue: PriorityQueue<Queued>;
  private readonly policy: BatchPolicyConfig;
  /** The largest preferred batch size (max_batch_size when none is given): a batch this big is complete. */
  private readonly largestPreferred: number;
  private readonly keyOf: BatchKeyFn;
  private readonly order: ResponseOrder | undefined;
  private readonly pool: InstancePool;
  private readonly clock: BatcherClock;
  /** The batches now executing (early dispatch counts their unanswered requests). */
  private readonly runningBatches = new Set<readonly Job[]>();
  /** Set with early dispatch: how many requests the model has had in flight lately. */
  private readonly peak: InFlightPeak | undefined;
  private closing = false;
  private drained: (() => void) | undefined;
  private timer: { at: bigint; cancel: () => void } | undefined;
  private pumping = false;
  private pumpAgain = false;
  /** A pump is due at the end of this turn (formBatchesSoon). */
  private pumpDue = false;
  /**
   * The latest time a timer was set for, once it fired: Node's timers run on a millisecond loop clock
   * that may lag process.hrtime, and a batch whose delay has run out must not wait another tick for it.
   */
  private reached = 0n;

  constructor(options: DynamicBatcherOptions) {
    const { config, pool } = options;
    const db = config.dynamic_batching!;
    this.pool = pool;
    this.clock = options.clock ?? REAL_CLOCK;
    this.queue = new PriorityQueue(priorityQueueConfig(db));
    this.policy = makeBatchPolicyConfig(
      config.max_batch_size,
      db.preferred_batch_size,
      db.max_queue_delay_microseconds,
    );
    this.largestPreferred = Math.max(...this.policy.preferredBatchSizes);
    this.keyOf = batchKeyFunction(config);
    this.order = db.preserve_ordering ? new ResponseOrder() : undefined;
    this.peak = earlyDispatchOf(config) ? new InFlightPeak() : undefined;
    pool.onAvailable(this.formBatchesSoon);
  }

  get queued(): number {
    return this.queue.size;
  }

  enqueue(job: Job): void {
    if (this.closing) throw unavailable('model is unloading');
    if (job.signal.aborted) {
      job.sender.fail(cancelled('request cancelled'));
      return;
    }
    const now = this.clock.now();
    const item: Queued = {
      job,
      batchSize: Math.max(1, job.request.batchSize),
      key: this.keyOf(job.request),
      enqueuedAt: now,
      onAbort: () => {
        if (item.entry && this.queue.remove(item.entry)) {
          job.sender.fail(cancelled('request cancelled'));
          this.afterRemoval();
        }
      },
    };
    try {
      item.entry = this.queue.push(item, job.request.priority, job.request.timeoutUs, now);
    } catch (err) {
      job.sender.fail(err as NereidError);
      return;
    }
    job.signal.addEventListener('abort', item.onAbort, { once: true });
    this.peak?.observe(this.inFlight(), now);
    this.formBatchesSoon();
  }

  /**
   * A request arrived or an instance can take a batch: form batches at the end of this event-loop turn,
   * not now. The requests of one burst reach the server together but are parsed one callback after
   * another on this thread; forming the batch inside the first one's callback would send it alone to a
   * free instance while the others wait, already read, for the next batch. Triton's batcher thread is
   * woken by the first request and forms its batch from everything queued by then (its frontends parse
   * on other threads meanwhile); the end of the turn is this thread's "by then". Nothing waits longer
   * than the turn, so max_queue_delay_microseconds 0 still means no delay.
   */
  private readonly formBatchesSoon = (): void => {
    if (this.pumpDue) return;
    this.pumpDue = true;
    this.clock.endOfTurn(() => {
      this.pumpDue = false;
      this.pump();
    });
  };

  /** Forms and dispatches batches while instances can take them, then sets the timer. */
  private readonly pump = (): void => {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    let waitUntil: bigint | undefined;
    try {
      const clock = this.clock.now();
      const now = clock > this.reached ? clock : this.reached;
      for (const item of this.queue.expire(now)) this.finish(item, TIMEOUT_EXPIRED());
      while (this.queue.size > 0) {
        const instance = this.pool.take();
        if (!instance) break;
        let decision = decideBatch(this.candidates(), this.policy, now);
        if (decision.kind === 'wait' && this.noneCanJoin(now)) {
          // Every client seen lately is already waiting: send what there is, as if the delay were over.
          decision = decideBatch(this.candidates(), this.policy, decision.until);
        }
        if (decision.kind !== 'send') {
          this.pool.putBack(instance);
          if (decision.kind === 'wait') waitUntil = decision.until;
          break;
        }
        if (this.pool.ahead(instance) > 0 && !this.complete(decision.count, decision.size)) {
          // A pipelined slot, and the batch could still grow: wait for an instance to finish.
          this.pool.putBack(instance);
          break;
        }
        const jobs = this.queue.shift(decision.count).map((e) => {
          e.value.job.signal.removeEventListener('abort', e.value.onAbort);
          return e.value.job;
        });
        this.runningBatches.add(jobs);
        void this.pool.run(instance, jobs, this.order).then(() => {
          this.runningBatches.delete(jobs);
          this.onDone();
        });
      }
      if (this.queue.size === 0) this.pool.idle();
    } finally {
      this.pumping = false;
    }
    this.arm(waitUntil);
    if (this.pumpAgain) {
      this.pumpAgain = false;
      this.pump();
    }
  };

  /** A batch of `count` queued requests and `size` that cannot grow: worth a pipelined slot. */
  private complete(count: number, size: number): boolean {
    return size >= this.largestPreferred || count < this.queue.size;
  }

  /**
   * Early dispatch: no request can join the waiting batch soon, because as many requests as the model
   * has had in flight lately are all queued or executing (their clients wait for answers).
   */
  private noneCanJoin(now: bigint): boolean {
    return this.peak !== undefined && this.inFlight() >= this.peak.peak(now);
  }

  /** Queued requests plus executing ones not answered yet. */
  private inFlight(): number {
    let n = this.queue.size;
    for (const batch of this.runningBatches) for (const job of batch) if (!job.sender.done) n++;
    return n;
  }

  private *candidates(): Generator<Queued> {
    for (const e of this.queue.entries()) yield e.value;
  }

  /** One timer for the earliest of: the waiting batch's delay, the next queue timeout. */
  private arm(waitUntil: bigint | undefined): void {
    const deadline = this.queue.nextDeadline();
    let at = waitUntil;
    // A deadline is passed once now > deadline, so wake just after it.
    if (deadline !== undefined && (at === undefined || deadline + 1000n < at)) at = deadline + 1000n;
    if (this.timer && this.timer.at === at) return;
    this.timer?.cancel();
    this.timer = undefined;
    if (at === undefined) return;
    const target = at;
    const delay = target - this.clock.now();
    const cancel = this.clock.setTimer(
      () => {
        this.timer = undefined;
        if (target > this.reached) this.reached = target;
        this.pump();
      },
      delay > 0n ? delay : 0n,
    );
    this.timer = { at: target, cancel };
  }

  private finish(item: Queued, error: NereidError): void {
    item.job.signal.removeEventListener('abort', item.onAbort);
    item.job.sender.fail(error);
  }

  private afterRemoval(): void {
    if (this.queue.size === 0) this.pool.idle();
    this.checkDrained();
    // The removed request may have been the one a waiting batch was timed by.
    this.formBatchesSoon();
  }

  private readonly onDone = (): void => {
    this.checkDrained();
    this.formBatchesSoon();
  };

  drain(): Promise<void> {
    this.closing = true;
    return new Promise((resolve) => {
      this.drained = resolve;
      this.checkDrained();
    });
  }

  private checkDrained(): void {
    if (this.drained && this.queue.size === 0 && this.runningBatches.size === 0) {
      this.timer?.cancel();
      this.timer = undefined;
      const d = this.drained;
      this.drained = undefined;
      d();
    }
  }
}
