/**
 * The scheduler interface and the job it moves. A scheduler owns a model version's queue and decides which
 * accepted jobs run together on which free instance; the instance pool runs them. Issue-4 schedulers
 * (dynamic batcher, sequence batcher) implement the same interface.
 */
import type { ResponseSender } from '../../backend-api/backend.js';
import type { PreparedRequest } from '../inference.js';

export interface Job {
  readonly request: PreparedRequest;
  readonly sender: ResponseSender;
  readonly signal: AbortSignal;
  /** process.hrtime.bigint() when accepted. */
  readonly acceptedAt: bigint;
  /**
   * Present when the scheduler can run this job again (a request of an iterative sequence): the instance
   * pool calls it after an execution in which the backend handed the request back
   * (BackendRequest.reschedule) instead of ending it.
   */
  readonly reschedule?: () => void;
}

export interface Scheduler {
  enqueue(job: Job): void;
  /** Number of jobs accepted but not yet handed to an instance. */
  readonly queued: number;
  /** Resolves when every accepted job has finished; new jobs are refused from now on. */
  drain(): Promise<void>;
}
