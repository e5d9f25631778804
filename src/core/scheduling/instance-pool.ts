/**
 * Runs batches of jobs on a model version's instances: hands out free instances (through the server's
 * rate limiter when it is on), executes, records timings, and fails whatever a backend left unanswered.
 *
 * One execute() per instance at a time, unless the instance declares InstanceHandle.pipelineDepth: then
 * take() hands it up to that many executions at once (the backend runs them in order), so the next batch
 * is already with the backend when the previous one returns and no round trip through the scheduler sits
 * between them. take() prefers an idle instance, then the instance with the fewest executions; take(which)
 * (the sequence batcher's lanes) and every take() under the rate limiter hand out idle instances only: a
 * rate-limited execution holds its resources while it runs, and one waiting behind another would hold them
 * without running.
 *
 * An instance is free again when its execute() settles. A decoupled model's request may outlive that (its
 * backend answers it later, from other threads, as in Triton): the pool keeps such open requests, counts
 * each when it ends, lets unload wait for them (whenStreamsEnded) and fails any left when it closes.
 *
 * Schedulers call take() when they have work, give an instance they did not use back with putBack(), and
 * call idle() when their queue is empty; onAvailable() tells them when take() may succeed again (an
 * instance finished, or the rate limiter granted one).
 */
import type {
  BackendRequest,
  ExecuteResult,
  InstanceHandle,
  ResponseSender,
} from '../../backend-api/backend.js';
import { NereidError, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { JobSender } from './job-sender.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { RequestRecord } from '../stats/request-record.js';
import { traceCompute } from '../stats/record-trace.js';
import { traceRequestEnd } from '../trace/report.js';
import type { ModelRateLimit, RateLimitTicket } from './rate-limiter.js';
import type { ResponseOrder } from './response-order.js';
import type { Job } from './scheduler.js';

/**
 * The request's own JobSender behind a job's sender. A scheduler may put a forwarding sender in front of
 * it (the sequence batcher keeps state outputs that way) and expose the one it forwards to as `inner`.
 */
function jobSenderOf(sender: ResponseSender): JobSender | undefined {
  if (sender instanceof JobSender) return sender;
  const inner: unknown = 'inner' in sender ? sender.inner : undefined;
  return inner instanceof JobSender ? inner : undefined;
}

export interface InstancePoolOptions {
  /** The model is decoupled: its requests may stay open after execute() settled. */
  readonly decoupled?: boolean;
}

export class InstancePool {
  private readonly free: InstanceHandle[];
  /** Requests that outlived their execution (decoupled streams, answers held for ordering). */
  private readonly open = new Set<JobSender>();
  private streamsEnded: (() => void) | undefined;
  private readonly decoupled: boolean;
  /** Instances the rate limiter let run that no batch took yet. */
  private readonly granted: InstanceHandle[] = [];
  /** The instance waiting for the rate limiter (one at a time per model keeps claims honest). */
  private staged: InstanceHandle | undefined;
  private readonly tickets = new Map<InstanceHandle, RateLimitTicket>();
  private listener: (() => void) | undefined;
  /** Executions inside execute() now, per instance. */
  private readonly busy = new Map<InstanceHandle, number>();
  /**
   * Executions handed out per instance that is not idle: taken (run() not called yet) or running. An
   * instance is in `free` (or staged/granted) exactly when it has none.
   */
  private readonly load = new Map<InstanceHandle, number>();
  /** How many executions each instance may hold (InstanceHandle.pipelineDepth; 1 under the rate limiter). */
  private readonly depth = new Map<InstanceHandle, number>();
  /** The largest depth: 1 means no instance pipelines (the common case skips the search). */
  private readonly maxDepth: number;
  /** Set by abort(): every job handed to run() from now on fails with it at once. */
  private aborted: NereidError | undefined;

  constructor(
    readonly instances: readonly InstanceHandle[],
    private readonly stats: ModelStats,
    private readonly log: Logger,
    private readonly rateLimit?: ModelRateLimit,
    options: InstancePoolOptions = {},
  ) {
    this.decoupled = options.decoupled === true;
    this.free = [...instances];
    if (rateLimit) instances.forEach((inst, i) => this.tickets.set(inst, rateLimit.tickets[i]));
    let maxDepth = 1;
    for (const inst of instances) {
      const declared = Math.floor(inst.pipelineDepth ?? 1);
      const d = rateLimit || !(declared > 1) ? 1 : declared;
      this.depth.set(inst, d);
      maxDepth = Math.max(maxDepth, d);
    }
    this.maxDepth = maxDepth;
  }

  /** Idle instances (no execution handed out) that take() may give without waiting. */
  get freeCount(): number {
    return this.free.length + this.granted.length;
  }

  /**
   * Executions `instance` (just handed out by take()) holds besides the one it was taken for: 0 for an idle
   * instance, more for a pipelined slot (its batch would wait behind those).
   */
  ahead(instance: InstanceHandle): number {
    return Math.max(0, (this.load.get(instance) ?? 1) - 1);
  }

  /** Registers the scheduler's wake-up call. */
  onAvailable(listener: () => void): void {
    this.listener = listener;
  }

  /**
   * Takes an instance that may execute now, or undefined (all busy, or waiting for the rate limiter): an
   * idle one, else a pipelined slot on the busy instance holding the fewest executions (ahead() > 0; a
   * scheduler that would rather wait for an idle instance puts it back). With `which`, only that instance
   * will do, and only idle (the sequence batcher binds sequences to instances).
   */
  take(which?: InstanceHandle): InstanceHandle | undefined {
    if (which === undefined && !this.rateLimit && this.granted.length === 0) {
      const idle = this.free.shift();
      if (idle !== undefined) return this.claim(idle);
      return this.maxDepth > 1 ? this.pipelineSlot() : undefined;
    }
    return this.claimOf(this.takeIdle(which));
  }

  private claimOf(instance: InstanceHandle | undefined): InstanceHandle | undefined {
    return instance === undefined ? undefined : this.claim(instance);
  }

  private claim(instance: InstanceHandle): InstanceHandle {
    this.load.set(instance, (this.load.get(instance) ?? 0) + 1);
    return instance;
  }

  /**
   * Every instance is busy: the one with the fewest executions below its depth, or undefined. Only called
   * without a rate limiter, so a busy instance is one with load > 0.
   */
  private pipelineSlot(): InstanceHandle | undefined {
    let best: InstanceHandle | undefined;
    let bestLoad = Infinity;
    for (const inst of this.instances) {
      const load = this.load.get(inst) ?? 0;
      if (load > 0 && load < this.depth.get(inst)! && load < bestLoad) {
        best = inst;
        bestLoad = load;
      }
    }
    return best === undefined ? undefined : this.claim(best);
  }

  /** An idle instance (`which`, or the first), through the rate limiter when there is one. */
  private takeIdle(which: InstanceHandle | undefined): InstanceHandle | undefined {
    const g = which === undefined ? 0 : this.granted.indexOf(which);
    if (g >= 0 && g < this.granted.length) return this.granted.splice(g, 1)[0];
    const f = which === undefined ? 0 : this.free.indexOf(which);
    if (f < 0 || f >= this.free.length) return undefined;
    if (!this.rateLimit) return this.free.splice(f, 1)[0];
    if (this.staged !== undefined) return undefined;
    const instance = this.free.splice(f, 1)[0];
    const ticket = this.tickets.get(instance)!;
    this.staged = instance;
    let synchronous = true;
    ticket.request(() => {
      this.staged = undefined;
      this.granted.push(instance);
      // A grant that comes later (another model released resources) wakes the scheduler.
      if (!synchronous) queueMicrotask(() => this.listener?.());
    });
    synchronous = false;
    const i = this.granted.indexOf(instance);
    return i < 0 ? undefined : this.granted.splice(i, 1)[0];
  }

  /** Returns an instance from take() that got no batch. */
  putBack(instance: InstanceHandle): void {
    if (this.release(instance) > 0) return; // a pipelined slot: the instance is still busy
    this.tickets.get(instance)?.release(false);
    this.free.unshift(instance);
  }

  /** One execution handed out on `instance` is over (or was never used); what it still holds. */
  private release(instance: InstanceHandle): number {
    const left = (this.load.get(instance) ?? 1) - 1;
    if (left > 0) this.load.set(instance, left);
    else this.load.delete(instance);
    return left;
  }

  /** The scheduler has nothing to run: stop waiting for the rate limiter and hand back its grants. */
  idle(): void {
    if (!this.rateLimit) return;
    if (this.staged !== undefined) {
      this.tickets.get(this.staged)!.cancel();
      this.free.unshift(this.staged);
      this.staged = undefined;
    }
    for (const instance of this.granted.splice(0)) this.putBack(instance);
  }

  /**
   * Executes `jobs` as one batch on `instance` (taken with take()). With `order` (preserve_ordering) the
   * responses go out through it. Resolves (never rejects) when execute() has settled and the instance is
   * free again. By then every request has ended, except a decoupled model's open streams and answers held
   * for ordering (each is counted when it ends; whenStreamsEnded() waits for them) and a job the backend
   * handed back (BackendRequest.reschedule, only offered for jobs that carry Job.reschedule): that one is
   * given to its scheduler again, and counted in the statistics of the execution that ends it.
   */
  run(instance: InstanceHandle, jobs: readonly Job[], order?: ResponseOrder): Promise<void> {
    if (this.aborted) return this.refuse(instance, jobs);
    const start = process.hrtime.bigint();
    const recordOf: (RequestRecord | undefined)[] = [];
    const senders: ResponseSender[] = [];
    /** Requests the backend handed back for a later execution (iterative sequences). */
    const handedBack: boolean[] = jobs.map(() => false);
    const requests: BackendRequest[] = jobs.map((job, i) => {
      let record: RequestRecord | undefined;
      // A request that already ended (counted when it did) is not counted again with this execution.
      const tracked = jobSenderOf(job.sender);
      if (tracked && !tracked.done) {
        tracked.dispatched(start);
        record = tracked.record;
      }
      recordOf.push(record);
      const sender = order ? order.enter(job.sender) : job.sender;
      senders.push(sender);
      const r = job.request;
      return {
        id: r.id,
        inputs: r.inputs,
        requestedOutputs: new Set(r.outputs.map((o) => o.name)),
        parameters: r.parameters,
        correlationId: r.correlationId,
        flags: r.flags,
        batchSize: r.batchSize,
        signal: job.signal,
        sender,
        reportTiming: record?.reportTiming,
        // Every member written out: one object shape (core/call.ts, performance rules).
        trace: record?.trace,
        reschedule: job.reschedule
          ? (): void => {
              handedBack[i] = true;
            }
          : undefined,
      };
    });
    const finish = (error: unknown, result: ExecuteResult | void): void => {
      const end = process.hrtime.bigint();
      const records: RequestRecord[] = [];
      let streaming = false;
      jobs.forEach((job, i) => {
        const sender = senders[i];
        const record = recordOf[i];
        if (!sender.done) {
          if (error === undefined && handedBack[i]) {
            // Queued again (Triton's TRITONSERVER_REQUEST_RELEASE_RESCHEDULE); the scheduler may refuse it
            // at once (its sequence is gone), and then it ended here after all.
            job.reschedule!();
            if (!sender.done) return;
          } else if (error !== undefined) {
            sender.fail(NereidError.from(error));
          } else if (this.decoupled) {
            // The backend answers it later (Triton's decoupled backends return while threads send on).
            streaming ||= record !== undefined;
          } else {
            sender.fail(internal(`backend returned without a response for request '${job.request.id}'`));
          }
        }
        if (!record) return;
        records.push(record);
        if (record.trace) traceExecution(record, start, end);
        const tracked = jobSenderOf(job.sender);
        if (tracked && !tracked.done) this.keepOpen(tracked);
      });
      const running = (this.busy.get(instance) ?? 1) - 1;
      if (running > 0) this.busy.set(instance, running);
      else this.busy.delete(instance);
      if (this.release(instance) === 0) {
        this.tickets.get(instance)?.release(true);
        this.free.push(instance);
      }
      // An execute() that resolved with nothing said nothing about whether its model ran.
      const executed = (result as ExecuteResult | undefined)?.executed;
      this.stats.recordExecution(records, start, end, { executed, streaming });
      this.listener?.();
    };
    let pending: Promise<ExecuteResult | void>;
    this.busy.set(instance, (this.busy.get(instance) ?? 0) + 1);
    try {
      pending = instance.execute(requests);
    } catch (err) {
      finish(err, undefined);
      return Promise.resolve();
    }
    return pending.then(
      (result) => finish(undefined, result),
      (err: unknown) => {
        if (!(err instanceof NereidError)) this.log.error(`instance ${instance.name} failed: ${String(err)}`);
        finish(err, undefined);
      },
    );
  }

  /** After abort(): a batch fails at once and its instance is free again, so the queue empties quickly. */
  private refuse(instance: InstanceHandle, jobs: readonly Job[]): Promise<void> {
    const error = this.aborted as NereidError;
    for (const job of jobs) if (!job.sender.done) job.sender.fail(error);
    if (this.release(instance) === 0) {
      this.tickets.get(instance)?.release(false);
      this.free.push(instance);
    }
    queueMicrotask(() => this.listener?.());
    return Promise.resolve();
  }

  /**
   * Gives up on the model's work (an unload that waited too long): jobs still queued fail with `error` as
   * the scheduler hands them over, running executions are aborted (InstanceHandle.abort; an instance
   * without it is left to finish) and requests that outlived their execution fail.
   */
  abort(error: NereidError): void {
    this.aborted = error;
    for (const instance of this.busy.keys()) {
      try {
        instance.abort?.(error);
      } catch (err) {
        this.log.error(`aborting instance ${instance.name} failed: ${NereidError.from(err).message}`);
      }
    }
    for (const sender of [...this.open]) if (!sender.done) sender.fail(error);
  }

  /** Requests still open after their execution settled (decoupled streams, answers held for ordering). */
  get openCount(): number {
    return this.open.size;
  }

  private keepOpen(sender: JobSender): void {
    this.open.add(sender);
    sender.record.whenEnded(() => {
      this.open.delete(sender);
      if (this.open.size === 0) this.streamsEnded?.();
    });
  }

  /** Resolves once every request that outlived its execution has ended (unload waits for it). */
  whenStreamsEnded(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.streamsEnded;
      this.streamsEnded = (): void => {
        this.streamsEnded = undefined;
        previous?.();
        resolve();
      };
    });
  }

  /**
   * Closes every instance (call after the scheduler drained and, normally, after whenStreamsEnded()) and
   * leaves the rate limiter. A request still open then (its backend lost track of it) fails: nothing is
   * left to answer it.
   */
  async close(): Promise<void> {
    this.idle();
    this.rateLimit?.unregister();
    await Promise.allSettled(this.instances.map((i) => i.close()));
    const model = `'${this.stats.modelName}' version ${this.stats.version}`;
    for (const sender of [...this.open]) {
      sender.fail(unavailable(`model ${model} was unloaded before request '${sender.requestId}' ended`));
    }
  }
}

/** A traced request's compute timestamps, and its end once it has ended (a stream may go on). */
function traceExecution(record: RequestRecord, start: bigint, end: bigint): void {
  const trace = record.trace!;
  traceCompute(trace, record, start, end);
  if (record.ended) {
    traceRequestEnd(trace, process.hrtime.bigint());
    return;
  }
  record.whenEnded(() => {
    const now = process.hrtime.bigint();
    traceRequestEnd(trace, now > end ? now : end);
  });
}
