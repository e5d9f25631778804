/**
 * Per model-version statistics, the one source behind the statistics extension (HTTP and gRPC) and the
 * Prometheus metrics. Durations are kept in nanoseconds as Triton reports them, and the counting rules
 * follow Triton's InferenceStatsAggregator: a request counts once in success or fail; queue and compute
 * phases are counted for successful requests only; inference_count is batch-expanded and counts successes;
 * an execution (and last_inference) counts when the backend says its model ran, or else when at least one
 * of its requests succeeded or was still being answered when execute() returned (recordExecution).
 */
import type { PhaseTimings } from '../../backend-api/backend.js';
import type { InferResponseStatistics } from '../../common/statistics.js';
import type { InferBatchStatistics, ModelStatistics, StatisticDuration } from '../types.js';
import { FAILURE_REASONS, RequestRecord, type FailureReason } from './request-record.js';

// The failure reasons live with the request record (which carries one); re-exported for the counters' users.
export { FAILURE_REASONS, RequestRecord, type FailureReason };

// One entry of `response_stats`: common/statistics.ts (the client reads the same record).
export type { InferResponseStatistics };

export type ResponseOutcome = 'success' | 'fail' | 'empty' | 'cancel';

/** What the instance pool knows about an execution beyond its requests' records. */
export interface ExecutionFacts {
  /** The backend's word on whether the model ran the batch (ExecuteResult.executed); absent: it did not say. */
  readonly executed?: boolean;
  /** A request of the batch is still being answered by the backend (a decoupled stream). */
  readonly streaming?: boolean;
}

/** The latencies of one successful request, in nanoseconds (what latency summaries observe). */
export interface SuccessSample {
  readonly requestNs: number;
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

/** Receives per-request observations as they happen (the metrics registry, for summaries/histograms). */
export interface StatsSink {
  success(sample: SuccessSample): void;
  firstResponse(ns: number): void;
  /** A request answered from the response cache: its queue time and the lookup's time, in ns. */
  cacheHit?(queueNs: number, hitNs: number): void;
  /** A request the cache missed, answered by the model: its lookup plus insert time, in ns. */
  cacheMiss?(ns: number): void;
}

/** Cumulative counters of one version, the part the Prometheus metrics expose. */
export interface StatsCounters {
  success: number;
  failure: Record<FailureReason, number>;
  inferenceCount: number;
  executionCount: number;
  requestNs: number;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  cacheHitCount: number;
  cacheHitNs: number;
  cacheMissCount: number;
  cacheMissNs: number;
}

export function emptyCounters(): StatsCounters {
  return {
    success: 0,
    failure: { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 },
    inferenceCount: 0,
    executionCount: 0,
    requestNs: 0,
    queueNs: 0,
    computeInputNs: 0,
    computeInferNs: 0,
    computeOutputNs: 0,
    cacheHitCount: 0,
    cacheHitNs: 0,
    cacheMissCount: 0,
    cacheMissNs: 0,
  };
}

/** Adds `b` into `a`. */
export function addCounters(a: StatsCounters, b: StatsCounters): void {
  a.success += b.success;
  for (const r of FAILURE_REASONS) a.failure[r] += b.failure[r];
  a.inferenceCount += b.inferenceCount;
  a.executionCount += b.executionCount;
  a.requestNs += b.requestNs;
  a.queueNs += b.queueNs;
  a.computeInputNs += b.computeInputNs;
  a.computeInferNs += b.computeInferNs;
  a.computeOutputNs += b.computeOutputNs;
  a.cacheHitCount += b.cacheHitCount;
  a.cacheHitNs += b.cacheHitNs;
  a.cacheMissCount += b.cacheMissCount;
  a.cacheMissNs += b.cacheMissNs;
}

const zero = (): StatisticDuration => ({ count: 0, ns: 0 });
const copy = (d: StatisticDuration): StatisticDuration => ({ count: d.count, ns: d.ns });
const ns = (from: bigint, to: bigint): number => (to > from ? Number(to - from) : 0);

function add(d: StatisticDuration, count: number, duration: number): void {
  d.count += count;
  d.ns += duration;
}

interface Triple {
  input: number;
  infer: number;
  output: number;
}

/**
 * A request's compute phases, kept inside its own compute span (dispatch to end). An execution's phases
 * can outlast one of its requests: the first request of a batch ends when its response goes out, before
 * the others' outputs are handled, and an execute() may settle after its responses were sent. Triton
 * takes a request's end after its whole execution, so its phases always fit in the request's time; here
 * what lies past the request's end is cut, from the last phase back (output, then infer, then input), so
 * queue + compute_input + compute_infer + compute_output never exceed the request's success time.
 */
function withinSpan(t: Triple, span: number): Triple {
  let excess = t.input + t.infer + t.output - span;
  if (excess <= 0) return t;
  const output = Math.max(0, t.output - excess);
  excess -= t.output - output;
  const infer = Math.max(0, t.infer - excess);
  excess -= t.infer - infer;
  return { input: Math.max(0, t.input - excess), infer, output };
}

export class ModelStats {
  lastInference = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success = zero();
  readonly fail = zero();
  readonly queue = zero();
  readonly computeInput = zero();
  readonly computeInfer = zero();
  readonly computeOutput = zero();
  readonly cacheHit = zero();
  readonly cacheMiss = zero();
  readonly failures: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  private readonly batches = new Map<number, InferBatchStatistics>();
  private readonly responses = new Map<number, InferResponseStatistics>();
  /** Set by the metrics registry while this version is attached to it. */
  sink: StatsSink | undefined;
  /** Requests accepted but not yet handed to an instance; the owner wires it to its scheduler. */
  pendingSource: () => number = () => 0;

  constructor(
    readonly modelName: string,
    readonly version: string,
  ) {}

  get pending(): number {
    return this.pendingSource();
  }

  /**
   * The timeline of a request accepted now; `requestStart` is when the core first saw it; `queuedSince`
   * when it began waiting (an on-demand load: the cold start counts as queue time), default now.
   */
  startRequest(requestStart: bigint, batchSize: number, queuedSince?: bigint): RequestRecord {
    return new RequestRecord(requestStart, queuedSince ?? process.hrtime.bigint(), batchSize);
  }

  /** The first response (or error) of a request went out: time to first response. */
  recordFirstResponse(rec: RequestRecord, at: bigint): void {
    this.sink?.firstResponse(ns(rec.requestStart, at));
  }

  /**
   * A request answered from the response cache (Triton's UpdateSuccessCacheHit): a success with its
   * request and queue time (accepted to lookup start), and a cache hit with the lookup's time. It counts
   * no inference, no execution and no compute phase, and leaves last_inference alone.
   */
  recordCacheHit(rec: RequestRecord, lookupStart: bigint, lookupEnd: bigint, end: bigint): void {
    const queueNs = ns(rec.queueStart, lookupStart);
    const hitNs = ns(lookupStart, lookupEnd);
    add(this.success, 1, ns(rec.requestStart, end));
    add(this.queue, 1, queueNs);
    add(this.cacheHit, 1, hitNs);
    this.sink?.cacheHit?.(queueNs, hitNs);
  }

  /**
   * A request the cache missed and the model answered (Triton's UpdateSuccessCacheMiss): the lookup and
   * the insert of its answer count as a cache miss, and are added to the request's duration (the insert
   * happens after the request's own timeline was recorded).
   */
  recordCacheMiss(missNs: number): void {
    add(this.cacheMiss, 1, missNs);
    this.success.ns += missNs;
    this.sink?.cacheMiss?.(missNs);
  }

  /** A request that ended before any instance took it (cancelled in the queue, refused by the scheduler). */
  recordEarlyFailure(rec: RequestRecord): void {
    this.addFailure(rec);
  }

  /**
   * One execution on an instance finished: execute() settled. Records each request that has ended by its
   * outcome; a request still open (a decoupled stream, or an answer held for preserve_ordering) is recorded
   * when it ends, with this execution's timings. The execution itself (execution_count, batch_stats,
   * last_inference) counts when `facts.executed` says so, or, when the backend did not say, once any of
   * its requests succeeded or while the backend is still answering one (a decoupled stream).
   */
  recordExecution(
    records: readonly RequestRecord[],
    start: bigint,
    end: bigint,
    facts: ExecutionFacts = {},
  ): void {
    let coreOutputNs = 0;
    let reported: PhaseTimings | undefined;
    let batchSize = 0;
    for (const r of records) {
      coreOutputNs += r.outputNs;
      reported ??= r.timing;
      batchSize += r.batchSize;
    }
    // Without reported timings, the execute() wall time minus the core's output handling is compute_infer;
    // for one request, only up to its end (execute() may settle after the response went out).
    const untimed = (until: bigint): Triple => ({
      input: 0,
      infer: Math.max(0, ns(start, until < end ? until : end) - coreOutputNs),
      output: coreOutputNs,
    });
    const triple = (t: PhaseTimings | undefined): Triple =>
      t
        ? { input: t.computeInputNs, infer: t.computeInferNs, output: t.computeOutputNs + coreOutputNs }
        : untimed(end);
    const batch = triple(reported);
    let counted = false;
    const countExecution = (): void => {
      counted = true;
      this.executionCount++;
      this.lastInference = Math.max(this.lastInference, Date.now());
      let b = this.batches.get(batchSize);
      if (!b) {
        b = { batch_size: batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
        this.batches.set(batchSize, b);
      }
      add(b.compute_input, 1, batch.input);
      add(b.compute_infer, 1, batch.infer);
      add(b.compute_output, 1, batch.output);
    };
    const recordRequest = (r: RequestRecord): boolean => {
      if (r.outcome !== 'success') {
        this.addFailure(r);
        return false;
      }
      const timing = r.timing ?? reported;
      this.addSuccess(r, timing ? triple(timing) : untimed(r.end));
      return true;
    };
    let succeeded = false;
    const open: RequestRecord[] = [];
    for (const r of records) {
      if (r.ended) succeeded = recordRequest(r) || succeeded;
      else open.push(r);
    }
    const executed = facts.executed;
    if (executed === true || (executed === undefined && (succeeded || facts.streaming === true))) {
      countExecution();
    }
    for (const r of open) {
      r.whenEnded(() => {
        if (recordRequest(r) && !counted && executed === undefined) countExecution();
      });
    }
  }

  /**
   * One response of a decoupled model: `start` is when the model began computing it (the execution start or
   * the previous response's end), `outputStart` when the core began handling its outputs (0n: never).
   */
  recordResponse(
    index: number,
    outcome: ResponseOutcome,
    start: bigint,
    outputStart: bigint,
    end: bigint,
  ): void {
    let s = this.responses.get(index);
    if (!s) {
      s = {
        compute_infer: zero(),
        compute_output: zero(),
        success: zero(),
        fail: zero(),
        empty_response: zero(),
        cancel: zero(),
      };
      this.responses.set(index, s);
    }
    const total = ns(start, end);
    switch (outcome) {
      case 'success':
      case 'fail':
        if (outputStart > 0n) {
          add(s.compute_infer, 1, ns(start, outputStart));
          add(s.compute_output, 1, ns(outputStart, end));
        } else {
          add(s.compute_infer, 1, total);
        }
        add(outcome === 'success' ? s.success : s.fail, 1, total);
        break;
      case 'empty':
        add(s.compute_infer, 1, total);
        add(s.empty_response, 1, total);
        break;
      case 'cancel':
        add(s.cancel, 1, total);
        break;
    }
  }

  private addSuccess(r: RequestRecord, execution: Triple): void {
    const requestNs = ns(r.requestStart, r.end);
    const queueNs = ns(r.queueStart, r.computeStart);
    const t = withinSpan(execution, ns(r.computeStart, r.end));
    this.inferenceCount += Math.max(1, r.batchSize);
    add(this.success, 1, requestNs);
    add(this.queue, 1, queueNs);
    add(this.computeInput, 1, t.input);
    add(this.computeInfer, 1, t.infer);
    add(this.computeOutput, 1, t.output);
    this.sink?.success({
      requestNs,
      queueNs,
      computeInputNs: t.input,
      computeInferNs: t.infer,
      computeOutputNs: t.output,
    });
  }

  private addFailure(r: RequestRecord): void {
    add(this.fail, 1, ns(r.requestStart, r.end));
    this.failures[r.reason]++;
  }

  /** The counters the metrics expose (a copy). */
  counters(): StatsCounters {
    return {
      success: this.success.count,
      failure: { ...this.failures },
      inferenceCount: this.inferenceCount,
      executionCount: this.executionCount,
      requestNs: this.success.ns,
      queueNs: this.queue.ns,
      computeInputNs: this.computeInput.ns,
      computeInferNs: this.computeInfer.ns,
      computeOutputNs: this.computeOutput.ns,
      cacheHitCount: this.cacheHit.count,
      cacheHitNs: this.cacheHit.ns,
      cacheMissCount: this.cacheMiss.count,
      cacheMissNs: this.cacheMiss.ns,
    };
  }

  /** Triton's ModelStatistics object (the statistics extension's JSON; gRPC uses the same fields). */
  snapshot(): ModelStatistics {
    const responseStats: Record<string, InferResponseStatistics> = {};
    for (const i of [...this.responses.keys()].sort((a, b) => a - b)) {
      const s = this.responses.get(i)!;
      responseStats[String(i)] = {
        compute_infer: copy(s.compute_infer),
        compute_output: copy(s.compute_output),
        success: copy(s.success),
        fail: copy(s.fail),
        empty_response: copy(s.empty_response),
        cancel: copy(s.cancel),
      };
    }
    return {
      name: this.modelName,
      version: this.version,
      last_inference: this.lastInference,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: copy(this.success),
        fail: copy(this.fail),
        queue: copy(this.queue),
        compute_input: copy(this.computeInput),
        compute_infer: copy(this.computeInfer),
        compute_output: copy(this.computeOutput),
        cache_hit: copy(this.cacheHit),
        cache_miss: copy(this.cacheMiss),
      },
      batch_stats: [...this.batches.values()]
        .sort((a, b) => a.batch_size - b.batch_size)
        .map((b) => ({
          batch_size: b.batch_size,
          compute_input: copy(b.compute_input),
          compute_infer: copy(b.compute_infer),
          compute_output: copy(b.compute_output),
        })),
      memory_usage: [],
      response_stats: responseStats,
    };
  }
}
