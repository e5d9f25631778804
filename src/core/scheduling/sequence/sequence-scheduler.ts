/**
 * Triton's sequence batcher (`sequence_batching`) for stateful models. Every request carries a correlation
 * id; a sequence's first request (START) binds the sequence to one slot of one instance until its END
 * request, an idle timeout or a cancellation releases the slot. Sequences that find no free slot wait in a
 * backlog, in arrival order, and take the next slot that frees. The batcher adds the control tensors
 * (START / END / READY / CORRID) and the implicit state inputs to each request it hands to the instance,
 * and keeps the state outputs the model returns for the sequence's next request.
 *
 * Strategies:
 * - direct (default): a batch for an instance takes at most one request per slot, the slot index being the
 *   row; slots between 0 and the highest waiting slot that have nothing waiting get a padding row with
 *   READY = false (zeros elsewhere), so a model that keeps per-row state sees every sequence in its row.
 * - oldest: each instance batches dynamically over the next request of its candidate sequences (at most
 *   one request of a sequence in flight), oldest first, up to max_batch_size; no padding.
 *
 * Iterative sequences (`iterative_sequence: true`, Triton's IterativeSequencer): a request without a
 * correlation id gets one of its own and the START flag, so each request is a sequence. A backend may hand
 * such a request back instead of ending it (BackendRequest.reschedule, Triton's
 * TRITONSERVER_REQUEST_RELEASE_RESCHEDULE): it is queued again in its sequence, flags cleared (neither
 * START nor END), same inputs and response stream, and runs in a later batch on the same slot. When an
 * execution ends the request, its sequence ends too and the slot is released. A request carrying END
 * cannot be handed back (Triton offers no reschedule for it either).
 *
 * The "what runs now" rules live in policy.ts; this class owns the queues, the slots and the timers.
 */
import type { InstanceHandle } from '../../../backend-api/backend.js';
import { cancelled, invalidArg, unavailable, type NereidError } from '../../../common/errors.js';
import type { Logger } from '../../../common/logger.js';
import type { Tensor } from '../../../common/tensor.js';
import type { FrozenModelConfig } from '../../../model-config/model-config.js';
import { SEQUENCE_IDLE_DEFAULT_MICROSECONDS } from '../../../model-config/normalize.js';
import { SEQUENCE_END, SEQUENCE_START, type OutputPlan } from '../../inference.js';
import type { InstancePool } from '../instance-pool.js';
import type { Job, Scheduler } from '../scheduler.js';
import { compileControls, controlTensors, NOT_READY, type ControlSpec } from './controls.js';
import { decideDirect, decideOldest, type Decision, type DirectPolicy, type OldestPolicy } from './policy.js';
import { DiscardingSender, StateKeepingSender } from './senders.js';
import { FreeSlots, type SlotRef } from './slots.js';
import {
  compileStates,
  initialStates,
  zeroData,
  type InitialStateReader,
  type SequenceStates,
  type StateSpec,
} from './state.js';
import { setPreciseTimer } from '../precise-timer.js';
import { NEVER_ABORTED } from '../../../common/never-aborted.js';

/** How often an idle sequence still waiting in the backlog is looked at again (Triton: 50 ms). */
const BACKLOG_IDLE_RECHECK_US = 50_000;

const usOf = (hrtimeNs: bigint): number => Number(hrtimeNs / 1000n);

/** Where the batcher gets time and timers; tests pass one they move by hand. */
export interface SequenceClock {
  /** Nanoseconds on the clock of Job.acceptedAt (process.hrtime.bigint()). */
  now(): bigint;
  /** Calls back once after `delayNs`; returns a function that cancels it. */
  setTimer(callback: () => void, delayNs: bigint): () => void;
}

export const REAL_CLOCK: SequenceClock = {
  now: () => process.hrtime.bigint(),
  // The oldest strategy's max_queue_delay is a batching delay like the dynamic batcher's: the same
  // precise timer (about 0.1 ms late, never early), rather than setTimeout's whole milliseconds.
  setTimer: setPreciseTimer,
};

/** One sequence bound to a slot. */
interface Run {
  readonly key: string;
  readonly correlationId: bigint | string;
  /** The state inputs for its next request; set on its first dispatched request. */
  states: SequenceStates | undefined;
}

interface Slot {
  readonly ref: SlotRef;
  readonly lane: Lane;
  readonly queue: Job[];
  run: Run | undefined;
  /** The bound sequence takes no more requests (END queued, idle, cancelled): release once drained. */
  ended: boolean;
  /** Oldest strategy, and direct for iterative sequences: a request of this slot is executing. */
  inFlight: boolean;
  /** Iterative sequences: the request that ran in the current batch was handed back to the queue. */
  handedBack: boolean;
  /** Oldest strategy: when the slot's head became a candidate for a batch. */
  waitingSinceUs: number;
}

/** The requests of one sequence that is waiting for a slot. */
interface Backlog {
  readonly key: string;
  readonly correlationId: bigint | string;
  readonly jobs: Job[];
  ended: boolean;
  /** Earliest request timeout among its requests (Infinity = none). */
  expiresAtUs: number;
}

/** One instance and its slots. */
interface Lane {
  readonly index: number;
  readonly instance: InstanceHandle;
  readonly slots: Slot[];
  busy: boolean;
  cancelTimer: (() => void) | undefined;
  /** Oldest strategy: slots whose head waits for a batch, in the order they began waiting. */
  readonly candidates: Set<Slot>;
}

export interface SequenceSchedulerOptions {
  readonly config: FrozenModelConfig;
  readonly pool: InstancePool;
  readonly log: Logger;
  /** Reads initial_state data files; without it a config that names one fails to load. */
  readonly readInitialState?: InitialStateReader;
  readonly clock?: SequenceClock;
}

export function correlationKey(id: bigint | string): string {
  return typeof id === 'string' ? `s:${id}` : `u:${id.toString(10)}`;
}

export class SequenceBatchScheduler implements Scheduler {
  private readonly config: FrozenModelConfig;
  private readonly pool: InstancePool;
  private readonly log: Logger;
  private readonly clock: SequenceClock;
  private readonly strategy: 'direct' | 'oldest';
  private readonly iterative: boolean;
  /** The next correlation id given to an iterative-sequence request that came without one. */
  private nextSequenceId = 1n;
  private readonly direct: DirectPolicy;
  private readonly oldest: OldestPolicy;
  private readonly idleUs: number;
  private readonly controls: ControlSpec;
  private readonly states: readonly StateSpec[];
  private readonly stateOutputs: readonly OutputPlan[];
  private readonly raggedInputs: ReadonlySet<string>;
  private readonly lanes: Lane[];
  private readonly free: FreeSlots;

  /** Sequences bound to a slot that still take requests. */
  private readonly sequences = new Map<string, Slot>();
  /** Sequences waiting for a slot, oldest first, and those of them that still take requests. */
  private readonly backlogs: Backlog[] = [];
  private readonly backlogByKey = new Map<string, Backlog>();
  /** When each open sequence last received a request (µs). */
  private readonly lastSeen = new Map<string, number>();
  /** Where each queued job waits, and its abort listener. */
  private readonly homes = new Map<Job, Slot | Backlog>();
  private readonly abortListeners = new Map<Job, () => void>();
  private queuedJobs = 0;

  private cancelReaper: (() => void) | undefined;
  private reaperDueUs = Infinity;
  private closing = false;
  private drained: (() => void) | undefined;

  constructor(options: SequenceSchedulerOptions) {
    const config = options.config;
    this.config = config;
    this.pool = options.pool;
    this.log = options.log;
    this.clock = options.clock ?? REAL_CLOCK;
    const sb = config.sequence_batching!;
    const maxBatchSize = Math.max(1, config.max_batch_size);
    this.strategy = sb.oldest ? 'oldest' : 'direct';
    this.iterative = sb.iterative_sequence === true;
    this.direct = {
      maxBatchSize,
      maxQueueDelayUs: sb.direct?.max_queue_delay_microseconds ?? 0,
      minimumSlotUtilization: sb.direct?.minimum_slot_utilization ?? 0,
    };
    this.oldest = {
      maxBatchSize,
      preferredBatchSizes: sb.oldest?.preferred_batch_size ?? [],
      maxQueueDelayUs: sb.oldest?.max_queue_delay_microseconds ?? 0,
    };
    this.idleUs = sb.max_sequence_idle_microseconds || SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    this.controls = compileControls(config);
    this.states = compileStates(config, options.readInitialState);
    this.stateOutputs = this.states.map((s) => ({ name: s.outputName, classification: 0 }));
    this.raggedInputs = new Set(config.input.filter((i) => i.allow_ragged_batch).map((i) => i.name));

    const candidates = sb.oldest?.max_candidate_sequences ?? 0;
    const slotsPerInstance = this.strategy === 'oldest' && candidates > 0 ? candidates : maxBatchSize;
    this.lanes = this.pool.instances.map((instance, index) => {
      const lane: Lane = {
        index,
        instance,
        slots: [],
        busy: false,
        cancelTimer: undefined,
        candidates: new Set(),
      };
      for (let slot = 0; slot < slotsPerInstance; slot++) {
        lane.slots.push({
          ref: { instance: index, slot },
          lane,
          queue: [],
          run: undefined,
          ended: false,
          inFlight: false,
          handedBack: false,
          waitingSinceUs: 0,
        });
      }
      return lane;
    });
    this.free = new FreeSlots(this.lanes.length, slotsPerInstance);
    // A rate limiter may grant an instance later; try again then.
    this.pool.onAvailable(() => {
      for (const lane of this.lanes) this.pump(lane);
    });
  }

  get queued(): number {
    return this.queuedJobs;
  }

  enqueue(job: Job): void {
    if (this.closing) throw unavailable('model is unloading');
    const id = job.request.correlationId;
    if (this.iterative && (id === 0n || id === '')) {
      // Triton's IterativeSequencer: the request becomes a sequence of its own. The key keeps these ids
      // apart from the ones clients choose.
      const own = this.nextSequenceId++;
      this.accept(
        { ...job, request: { ...job.request, correlationId: own, flags: SEQUENCE_START } },
        `n:${own.toString(10)}`,
      );
      return;
    }
    this.accept(job, correlationKey(id));
  }

  /** Queues a job of the sequence `key` (a new request, or one handed back by its backend). */
  private accept(job: Job, key: string): void {
    const model = this.config.name;
    const r = job.request;
    const id = r.correlationId;
    if (id === 0n || id === '') {
      job.sender.fail(
        invalidArg(
          `inference request to model '${model}' must specify a non-zero or non-empty correlation ID`,
        ),
      );
      return;
    }
    if (r.batchSize > 1) {
      job.sender.fail(
        invalidArg(
          `inference request to model '${model}' must specify batch-size 1 due to requirements of sequence batcher`,
        ),
      );
      return;
    }
    const idText = typeof id === 'string' ? id : id.toString(10);
    const start = (r.flags & SEQUENCE_START) !== 0;
    const end = (r.flags & SEQUENCE_END) !== 0;
    const slot = this.sequences.get(key);
    const backlog = this.backlogByKey.get(key);
    if (!start && !slot && !backlog) {
      job.sender.fail(
        invalidArg(
          `inference request for sequence ${idText} to model '${model}' must specify the START flag on the first request of the sequence`,
        ),
      );
      return;
    }
    if (job.signal.aborted) {
      job.sender.fail(cancelled('request cancelled'));
      return;
    }
    if (start && (slot || backlog)) {
      this.log.warn(
        `sequence ${idText} for model '${model}' has a conflict. The previous sequence did not end before this sequence start. Previous sequence will be terminated early.`,
      );
    }

    const now = this.nowUs();
    this.queuedJobs++;
    this.watchAbort(job);
    if (end) {
      this.lastSeen.delete(key);
    } else {
      this.lastSeen.set(key, now);
      this.armReaper(now + this.idleUs);
    }

    if (slot) {
      if (end) {
        this.sequences.delete(key);
        slot.ended = true;
      }
      this.addToSlot(slot, job);
      this.pump(slot.lane);
      return;
    }

    const expiresAtUs = r.timeoutUs > 0 ? now + r.timeoutUs : Infinity;
    if (backlog) {
      backlog.jobs.push(job);
      this.homes.set(job, backlog);
      backlog.expiresAtUs = Math.min(backlog.expiresAtUs, expiresAtUs);
      this.armReaper(backlog.expiresAtUs);
      if (end) {
        this.backlogByKey.delete(key);
        backlog.ended = true;
      }
      return;
    }

    const ref = this.free.acquire();
    if (ref) {
      const target = this.lanes[ref.instance].slots[ref.slot];
      target.run = { key, correlationId: id, states: undefined };
      target.ended = end;
      if (!end) this.sequences.set(key, target);
      this.log.verbose(
        `sequence ${idText} of model '${model}' bound to instance ${target.lane.instance.name}, slot ${ref.slot}`,
      );
      this.addToSlot(target, job);
      this.pump(target.lane);
      return;
    }

    const waiting: Backlog = { key, correlationId: id, jobs: [job], ended: end, expiresAtUs };
    this.backlogs.push(waiting);
    if (!end) this.backlogByKey.set(key, waiting);
    this.homes.set(job, waiting);
    this.armReaper(expiresAtUs);
    this.log.verbose(`sequence ${idText} of model '${model}' waits in the backlog (every slot is in use)`);
  }

  drain(): Promise<void> {
    this.closing = true;
    return new Promise((resolve) => {
      this.drained = resolve;
      this.checkDrained();
    });
  }

  // ---- queues ------------------------------------------------------------------------------------------

  private addToSlot(slot: Slot, job: Job): void {
    slot.queue.push(job);
    this.homes.set(job, slot);
    this.refreshCandidate(slot);
  }

  /** Oldest strategy: a slot is a candidate while it has a waiting request and none in flight. */
  private refreshCandidate(slot: Slot): void {
    if (this.strategy !== 'oldest') return;
    const candidates = slot.lane.candidates;
    if (slot.queue.length > 0 && !slot.inFlight) {
      if (!candidates.has(slot)) {
        slot.waitingSinceUs = this.nowUs();
        candidates.add(slot);
      }
    } else {
      candidates.delete(slot);
    }
  }

  private watchAbort(job: Job): void {
    if (job.signal === NEVER_ABORTED) return;
    const listener = (): void => this.onAbort(job);
    job.signal.addEventListener('abort', listener, { once: true });
    this.abortListeners.set(job, listener);
  }

  /** The job leaves the queues (dispatched, failed or cancelled). */
  private forget(job: Job): void {
    this.homes.delete(job);
    const listener = this.abortListeners.get(job);
    if (listener) {
      job.signal.removeEventListener('abort', listener);
      this.abortListeners.delete(job);
    }
    this.queuedJobs--;
  }

  /** A queued request was cancelled: as in Triton, its whole sequence ends with it. */
  private onAbort(job: Job): void {
    const home = this.homes.get(job);
    if (!home) return;
    const error = cancelled('request cancelled');
    if ('lane' in home) {
      const slot = home;
      for (const j of slot.queue.splice(0)) {
        this.forget(j);
        j.sender.fail(error);
      }
      const run = slot.run;
      if (run) {
        if (this.sequences.get(run.key) === slot) this.sequences.delete(run.key);
        this.lastSeen.delete(run.key);
      }
      slot.ended = true;
      this.refreshCandidate(slot);
      this.maybeRelease(slot);
    } else {
      this.dropBacklog(home, error);
    }
    this.checkDrained();
  }

  private dropBacklog(backlog: Backlog, error: NereidError): void {
    const i = this.backlogs.indexOf(backlog);
    if (i >= 0) this.backlogs.splice(i, 1);
    if (this.backlogByKey.get(backlog.key) === backlog) {
      this.backlogByKey.delete(backlog.key);
      this.lastSeen.delete(backlog.key);
    }
    for (const j of backlog.jobs.splice(0)) {
      this.forget(j);
      j.sender.fail(error);
    }
  }

  private maybeRelease(slot: Slot): void {
    if (slot.run && slot.ended && slot.queue.length === 0 && !slot.inFlight) this.releaseSlot(slot);
  }

  /** The slot's sequence is over: the oldest backlogged sequence takes it, or it becomes free. */
  private releaseSlot(slot: Slot): void {
    slot.run = undefined;
    slot.ended = false;
    const next = this.backlogs.shift();
    if (!next) {
      this.free.release(slot.ref);
      return;
    }
    slot.run = { key: next.key, correlationId: next.correlationId, states: undefined };
    slot.ended = next.ended;
    if (!next.ended) {
      this.backlogByKey.delete(next.key);
      this.sequences.set(next.key, slot);
    }
    for (const j of next.jobs) {
      slot.queue.push(j);
      this.homes.set(j, slot);
    }
    this.refreshCandidate(slot);
    this.log.verbose(
      `backlogged sequence ${next.key.slice(2)} of model '${this.config.name}' takes instance ${slot.lane.instance.name}, slot ${slot.ref.slot}`,
    );
    this.pump(slot.lane);
  }

  // ---- batches -----------------------------------------------------------------------------------------

  private pump(lane: Lane): void {
    if (lane.busy) return;
    lane.cancelTimer?.();
    lane.cancelTimer = undefined;
    const now = this.nowUs();
    let decision: Decision;
    let order: Slot[];
    if (this.strategy === 'direct') {
      decision = decideDirect(
        lane.slots.map((s) => (s.queue.length > 0 ? usOf(s.queue[0].acceptedAt) : undefined)),
        this.direct,
        now,
      );
      order = lane.slots;
    } else {
      order = [...lane.candidates];
      decision = decideOldest(
        order.map((s) => s.waitingSinceUs),
        this.oldest,
        now,
      );
    }
    if (decision.kind === 'idle') {
      if (this.queuedJobs === 0) this.pool.idle();
      return;
    }
    if (decision.kind === 'wait') {
      lane.cancelTimer = this.clock.setTimer(
        () => {
          lane.cancelTimer = undefined;
          this.pump(lane);
        },
        BigInt(Math.ceil(Math.max(0, decision.untilUs - now))) * 1000n,
      );
      return;
    }
    const instance = this.pool.take(lane.instance);
    if (!instance) return; // the rate limiter holds it; onAvailable brings us back
    lane.busy = true;
    const { jobs, slots } =
      this.strategy === 'direct'
        ? this.directBatch(order, decision.count)
        : this.oldestBatch(order, decision.count);
    for (const slot of slots) this.maybeRelease(slot);
    void this.pool.run(instance, jobs).then(() => this.onBatchDone(lane, slots));
  }

  /** Slots 0..width-1, one request each; a slot with nothing that fits the batch gets a padding row. */
  private directBatch(slots: readonly Slot[], width: number): { jobs: Job[]; slots: Slot[] } {
    const model = slots.slice(0, width).find((s) => s.queue.length > 0)!.queue[0];
    const jobs: (Job | undefined)[] = [];
    const used: Slot[] = [];
    let template: Job | undefined;
    for (let i = 0; i < width; i++) {
      const slot = slots[i];
      const head = slot.queue[0] as Job | undefined;
      if (head === undefined || !this.batchable(head, model)) {
        jobs.push(undefined);
        continue;
      }
      slot.queue.shift();
      this.forget(head);
      // An iterative sequence keeps its slot while its request runs: it may come back.
      if (this.iterative) slot.inFlight = true;
      const prepared = this.prepare(head, slot);
      template ??= prepared;
      jobs.push(prepared);
      used.push(slot);
    }
    // Rows past the last request would be padding only.
    while (jobs[jobs.length - 1] === undefined) jobs.pop();
    const filled = jobs.map((j) => j ?? this.padding(template!));
    return { jobs: filled, slots: used };
  }

  /** The first `count` candidates whose inputs can be joined with the first one's. */
  private oldestBatch(candidates: readonly Slot[], count: number): { jobs: Job[]; slots: Slot[] } {
    const model = candidates[0].queue[0];
    const jobs: Job[] = [];
    const used: Slot[] = [];
    for (const slot of candidates) {
      if (used.length === count) break;
      const head = slot.queue[0];
      if (!this.batchable(head, model)) continue;
      slot.queue.shift();
      this.forget(head);
      slot.inFlight = true;
      slot.lane.candidates.delete(slot);
      jobs.push(this.prepare(head, slot));
      used.push(slot);
    }
    return { jobs, slots: used };
  }

  private onBatchDone(lane: Lane, slots: readonly Slot[]): void {
    lane.busy = false;
    for (const slot of slots) {
      if (this.iterative) this.afterIteration(slot);
      if (!slot.inFlight) continue;
      slot.inFlight = false;
      this.maybeRelease(slot);
      this.refreshCandidate(slot);
    }
    this.pump(lane);
    this.checkDrained();
  }

  /**
   * Iterative sequences: a request that was not handed back has ended, and with it its sequence (Triton
   * releases the sequence when the request is released without RESCHEDULE).
   */
  private afterIteration(slot: Slot): void {
    if (slot.handedBack) {
      slot.handedBack = false;
      return;
    }
    const run = slot.run;
    if (!run) return;
    if (this.sequences.get(run.key) === slot) this.sequences.delete(run.key);
    this.lastSeen.delete(run.key);
    slot.ended = true;
  }

  /**
   * The backend handed the request back: queue it again in its sequence as Triton does (flags cleared).
   * If the sequence is gone meanwhile (idle timeout, cancellation), the request fails as a request
   * without START would.
   */
  private handBack(job: Job, slot: Slot, key: string): void {
    // Unlike a new request this one is already accepted, so a model being unloaded still finishes it.
    this.accept({ ...job, request: { ...job.request, flags: 0 } }, key);
    slot.handedBack = !job.sender.done;
  }

  /** Inputs the model cannot join across rows (not ragged) must have equal shapes. */
  private batchable(job: Job, model: Job): boolean {
    if (job === model || this.config.max_batch_size === 0) return true;
    const a = job.request.inputs;
    const b = model.request.inputs;
    if (a.size !== b.size) return false;
    for (const [name, t] of a) {
      const u = b.get(name);
      if (!u) return false;
      if (this.raggedInputs.has(name)) continue;
      if (t.shape.length !== u.shape.length || t.shape.some((d, i) => d !== u.shape[i])) return false;
    }
    return true;
  }

  /** The request as the backend sees it: the client's inputs plus controls and state inputs. */
  private prepare(job: Job, slot: Slot): Job {
    const run = slot.run!;
    const r = job.request;
    const start = (r.flags & SEQUENCE_START) !== 0;
    const end = (r.flags & SEQUENCE_END) !== 0;
    const reschedule = this.iterative && !end ? (): void => this.handBack(job, slot, run.key) : undefined;
    const inputs = new Map<string, Tensor>(r.inputs);
    for (const t of controlTensors(this.controls, {
      start,
      end,
      ready: true,
      correlationId: r.correlationId,
    })) {
      inputs.set(t.name, t);
    }
    if (this.states.length === 0) return { ...job, request: { ...r, inputs }, reschedule };
    // A START (also one that restarts a sequence still open) begins from the initial state.
    if (start || !run.states) run.states = initialStates(this.states);
    for (const [name, t] of run.states) inputs.set(name, t);
    const asked = new Set(r.outputs.map((o) => o.name));
    const outputs = [...r.outputs, ...this.stateOutputs.filter((o) => !asked.has(o.name))];
    return {
      ...job,
      request: { ...r, inputs, outputs },
      sender: new StateKeepingSender(job.sender, this.states, run.states),
      reschedule,
    };
  }

  /** A not-ready row shaped like `template`: zeros, READY/START/END false, CORRID 0. */
  private padding(template: Job): Job {
    const inputs = new Map<string, Tensor>();
    for (const [name, t] of template.request.inputs) {
      inputs.set(name, { name, datatype: t.datatype, shape: t.shape, data: zeroData(t.datatype, t.shape) });
    }
    for (const t of controlTensors(this.controls, NOT_READY)) inputs.set(t.name, t);
    return {
      request: { ...template.request, id: '', inputs, correlationId: 0n, flags: 0, parameters: {} },
      sender: new DiscardingSender(),
      signal: NEVER_ABORTED,
      acceptedAt: template.acceptedAt,
    };
  }

  // ---- idle sequences and backlog timeouts -------------------------------------------------------------

  private armReaper(dueUs: number): void {
    if (!Number.isFinite(dueUs) || (this.cancelReaper && this.reaperDueUs <= dueUs)) return;
    this.cancelReaper?.();
    this.reaperDueUs = dueUs;
    this.cancelReaper = this.clock.setTimer(
      this.reap,
      BigInt(Math.ceil(Math.max(0, dueUs - this.nowUs()))) * 1000n,
    );
  }

  private nowUs(): number {
    return usOf(this.clock.now());
  }

  private readonly reap = (): void => {
    this.cancelReaper = undefined;
    this.reaperDueUs = Infinity;
    const now = this.nowUs();
    let next = Infinity;
    for (const [key, seen] of this.lastSeen) {
      const due = seen + this.idleUs;
      if (due > now) {
        next = Math.min(next, due);
        continue;
      }
      const slot = this.sequences.get(key);
      if (slot) {
        // Requests already queued still run; the slot is released after them.
        this.log.verbose(`sequence ${key.slice(2)} of model '${this.config.name}' idle: releasing its slot`);
        this.sequences.delete(key);
        this.lastSeen.delete(key);
        slot.ended = true;
        this.maybeRelease(slot);
      } else if (this.backlogByKey.has(key)) {
        // Still waiting for a slot: look again soon, and end it once it has one (as Triton does).
        next = Math.min(next, now + BACKLOG_IDLE_RECHECK_US);
      } else {
        this.lastSeen.delete(key);
      }
    }
    for (const backlog of [...this.backlogs]) {
      if (backlog.expiresAtUs <= now) {
        this.dropBacklog(backlog, unavailable('timeout of the corresponding sequence has been expired'));
      } else {
        next = Math.min(next, backlog.expiresAtUs);
      }
    }
    this.armReaper(next);
    this.checkDrained();
  };

  private checkDrained(): void {
    if (!this.drained || this.queuedJobs > 0 || this.lanes.some((l) => l.busy)) return;
    // Sequences still open lose nothing they could use: the model is going away.
    this.cancelReaper?.();
    this.cancelReaper = undefined;
    for (const lane of this.lanes) lane.cancelTimer?.();
    const done = this.drained;
    this.drained = undefined;
    done();
  }
}
