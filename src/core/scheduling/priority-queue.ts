/**
 * The dynamic batcher's queue: one FIFO per priority level (1 = highest; a single level 0 when the model
 * has no priority levels), each under its ModelQueuePolicy. Follows Triton's PriorityQueue
 * (core/src/scheduler_utils.cc):
 *
 * - a request's priority of 0, or above `priority_levels`, means `default_priority_level`;
 * - a full level (`max_queue_size`, counting delayed requests) refuses at once: UNAVAILABLE
 *   "Exceeds maximum queue size";
 * - a request's queue timeout is the level's `default_timeout_microseconds`, or its own `timeout` when
 *   `allow_timeout_override` is set and that is shorter (0 = none);
 * - when it expires, REJECT takes it out of the queue (the batcher answers UNAVAILABLE "Request timeout
 *   expired") and DELAY moves it behind the requests of its level that have not timed out.
 *
 * Pure: time is an argument, so expiry is tested without sleeping; the batcher owns the timer.
 */
import { unavailable } from '../../common/errors.js';
import { DEFAULT_QUEUE_POLICY } from '../../model-config/index.js';
import type {
  DeepReadonly,
  ModelDynamicBatching,
  ModelQueuePolicy,
} from '../../model-config/model-config.js';

export interface QueueEntry<T> {
  readonly value: T;
  readonly level: number;
  /** Absolute deadline (ns, same clock as `now`); 0n = no timeout. Cleared once delayed. */
  deadline: bigint;
  delayed: boolean;
}

interface Level<T> {
  readonly level: number;
  readonly policy: Readonly<ModelQueuePolicy>;
  readonly waiting: QueueEntry<T>[];
  readonly delayed: QueueEntry<T>[];
}

export interface PriorityQueueConfig {
  /** 0 = a single queue. */
  readonly priorityLevels: number;
  readonly defaultPriorityLevel: number;
  readonly defaultPolicy: Readonly<ModelQueuePolicy>;
  /** level → policy */
  readonly policies: ReadonlyMap<number, Readonly<ModelQueuePolicy>>;
}

export function priorityQueueConfig(db: DeepReadonly<ModelDynamicBatching>): PriorityQueueConfig {
  const policies = new Map<number, Readonly<ModelQueuePolicy>>();
  for (const [key, policy] of Object.entries(db.priority_queue_policy)) policies.set(Number(key), policy);
  return {
    priorityLevels: db.priority_levels,
    defaultPriorityLevel: db.default_priority_level,
    defaultPolicy: db.default_queue_policy ?? DEFAULT_QUEUE_POLICY,
    policies,
  };
}

export class PriorityQueue<T> {
  /** Levels in priority order (ascending number); created on first use. */
  private readonly levels: Level<T>[] = [];
  private count = 0;
  /** Entries that carry a deadline: while 0, nextDeadline() needs no scan. */
  private timed = 0;

  constructor(private readonly config: PriorityQueueConfig) {}

  get size(): number {
    return this.count;
  }

  /** The level a request with this `priority` parameter waits at. */
  levelOf(priority: number): number {
    const { priorityLevels, defaultPriorityLevel } = this.config;
    if (priorityLevels === 0) return 0;
    if (priority === 0 || priority > priorityLevels) return defaultPriorityLevel;
    return priority;
  }

  private levelFor(level: number): Level<T> {
    let lo = 0;
    let hi = this.levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.levels[mid].level < level) lo = mid + 1;
      else hi = mid;
    }
    const found = this.levels[lo];
    if (found?.level === level) return found;
    const created: Level<T> = {
      level,
      policy: (level !== 0 && this.config.policies.get(level)) || this.config.defaultPolicy,
      waiting: [],
      delayed: [],
    };
    this.levels.splice(lo, 0, created);
    return created;
  }

  /**
   * Queues `value` at the level of `priority`; `timeoutUs` is the request's own `timeout` parameter.
   * Throws UNAVAILABLE when that level is full.
   */
  push(value: T, priority: number, timeoutUs: number, now: bigint): QueueEntry<T> {
    const level = this.levelFor(this.levelOf(priority));
    const policy = level.policy;
    if (policy.max_queue_size !== 0 && level.waiting.length + level.delayed.length >= policy.max_queue_size) {
      throw unavailable('Exceeds maximum queue size');
    }
    let timeout = policy.default_timeout_microseconds;
    if (policy.allow_timeout_override && timeoutUs !== 0 && timeoutUs < timeout) timeout = timeoutUs;
    const entry: QueueEntry<T> = {
      value,
      level: level.level,
      deadline: timeout !== 0 ? now + BigInt(timeout) * 1000n : 0n,
      delayed: false,
    };
    level.waiting.push(entry);
    this.count++;
    if (entry.deadline !== 0n) this.timed++;
    return entry;
  }

  /** Takes a queued entry out (a cancelled request); false when it is no longer queued. */
  remove(entry: QueueEntry<T>): boolean {
    const level = this.levels.find((l) => l.level === entry.level);
    if (!level) return false;
    const list = entry.delayed ? level.delayed : level.waiting;
    const i = list.indexOf(entry);
    if (i < 0) return false;
    list.splice(i, 1);
    this.taken(entry);
    this.dropEmptyLevels();
    return true;
  }

  private taken(entry: QueueEntry<T>): void {
    this.count--;
    if (entry.deadline !== 0n) this.timed--;
  }

  /**
   * Applies the timeout actions at `now`: DELAY entries move behind their level's waiting ones, REJECT
   * entries leave the queue and are returned (in queue order) for the caller to answer.
   */
  expire(now: bigint): T[] {
    const rejected: T[] = [];
    if (this.timed === 0) return rejected;
    for (const level of this.levels) {
      const keep: QueueEntry<T>[] = [];
      let changed = false;
      for (const e of level.waiting) {
        if (e.deadline === 0n || now <= e.deadline) {
          keep.push(e);
          continue;
        }
        changed = true;
        this.timed--;
        e.deadline = 0n;
        if (level.policy.timeout_action === 'DELAY') {
          e.delayed = true;
          level.delayed.push(e);
        } else {
          this.count--;
          rejected.push(e.value);
        }
      }
      if (changed) level.waiting.splice(0, level.waiting.length, ...keep);
    }
    if (rejected.length > 0) this.dropEmptyLevels();
    return rejected;
  }

  /** The earliest deadline of a queued entry, if any. */
  nextDeadline(): bigint | undefined {
    if (this.timed === 0) return undefined;
    let next: bigint | undefined;
    for (const level of this.levels) {
      for (const e of level.waiting) {
        if (e.deadline !== 0n && (next === undefined || e.deadline < next)) next = e.deadline;
      }
    }
    return next;
  }

  /** Entries in the order batches take them: by level, then waiting before delayed, each FIFO. */
  *entries(): Generator<QueueEntry<T>> {
    for (const level of this.levels) {
      yield* level.waiting;
      yield* level.delayed;
    }
  }

  /** Removes and returns the first `n` entries in entries() order. */
  shift(n: number): QueueEntry<T>[] {
    const out: QueueEntry<T>[] = [];
    for (const level of this.levels) {
      for (const list of [level.waiting, level.delayed]) {
        const k = Math.min(n - out.length, list.length);
        if (k > 0) out.push(...list.splice(0, k));
        if (out.length === n) break;
      }
      if (out.length === n) break;
    }
    for (const e of out) this.taken(e);
    this.dropEmptyLevels();
    return out;
  }

  /** Empties the queue, returning everything that was in it (in order). */
  clear(): T[] {
    const all = [...this.entries()].map((e) => e.value);
    this.levels.length = 0;
    this.count = 0;
    this.timed = 0;
    return all;
  }

  private dropEmptyLevels(): void {
    // Levels come and go with their requests, as in Triton, so a model with many levels stays cheap.
    for (let i = this.levels.length - 1; i >= 0; i--) {
      const l = this.levels[i];
      if (l.waiting.length === 0 && l.delayed.length === 0) this.levels.splice(i, 1);
    }
  }
}
