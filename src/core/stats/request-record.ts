/**
 * The timeline of one request as the statistics need it: when the core saw it, when it was queued, when
 * an instance took it, how it ended and why. The response sender fills it in; the instance pool hands the
 * records of a finished execution to ModelStats, which turns them into counters.
 */
import type { PhaseTimings } from '../../backend-api/backend.js';
import type { InferenceTrace } from '../trace/types.js';
import type { RequestTimings } from '../types.js';

/** The `reason` label of nv_inference_request_failure. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';
export const FAILURE_REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

export type RequestOutcome = 'pending' | 'success' | 'failure';

function validTiming(t: PhaseTimings): boolean {
  const ok = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  return ok(t.computeInputNs) && ok(t.computeInferNs) && ok(t.computeOutputNs);
}

export class RequestRecord {
  /** process.hrtime.bigint() when an instance took the request; 0n while queued. */
  computeStart = 0n;
  /** When the request ended (final response or error). */
  end = 0n;
  outcome: RequestOutcome = 'pending';
  reason: FailureReason = 'OTHER';
  /** Time the core spent turning the backend's outputs into responses (part of compute_output). */
  outputNs = 0;
  /** Phase timings the backend reported, if any. */
  timing: PhaseTimings | undefined;
  private onEnd: (() => void) | undefined;
  /** The request's trace, when it is traced (stats/record-trace.ts reads this record). */
  trace: InferenceTrace | undefined;
  /** Filled in when the request ends (the access log's queue and compute time). */
  timings: RequestTimings | undefined;

  constructor(
    /** When the core first saw the request (before validation). */
    readonly requestStart: bigint,
    /** When the request was accepted into the scheduler's queue. */
    readonly queueStart: bigint,
    /** Batch-expanded size (1 for models without a batch dimension). */
    readonly batchSize: number,
  ) {}

  get dispatched(): boolean {
    return this.computeStart !== 0n;
  }

  get ended(): boolean {
    return this.outcome !== 'pending';
  }

  /** Handed to backends as BackendRequest.reportTiming; ignores malformed reports. */
  readonly reportTiming = (timings: PhaseTimings): void => {
    if (!validTiming(timings)) return;
    this.timing = {
      computeInputNs: timings.computeInputNs,
      computeInferNs: timings.computeInferNs,
      computeOutputNs: timings.computeOutputNs,
    };
  };

  /**
   * Calls `listener` once the request has ended (at once if it has): requests that outlive their
   * execution (decoupled streams) are counted then.
   */
  whenEnded(listener: () => void): void {
    if (this.ended) {
      listener();
      return;
    }
    const previous = this.onEnd;
    this.onEnd = previous
      ? (): void => {
          previous();
          listener();
        }
      : listener;
  }

  succeed(at: bigint): void {
    this.close('success', at);
  }

  failed(at: bigint, reason: FailureReason): void {
    if (this.ended) return;
    this.reason = reason;
    this.close('failure', at);
  }

  private close(outcome: RequestOutcome, at: bigint): void {
    if (this.ended) return;
    this.outcome = outcome;
    this.end = at;
    if (this.timings) {
      const started = this.computeStart !== 0n;
      this.timings.queueNs = Number((started ? this.computeStart : at) - this.queueStart);
      this.timings.computeNs = started ? Number(at - this.computeStart) : 0;
    }
    const listener = this.onEnd;
    this.onEnd = undefined;
    listener?.();
  }
}
