/**
 * Runs batches of jobs on a model version's instances: hands out free instances, executes, records
 * timings, and fails whatever a backend left unanswered. One execute() per instance at a time.
 */
import type { BackendRequest, InstanceHandle } from '../../backend-api/backend.js';
import { NereidError, internal } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { JobSender } from '../model/job-sender.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { RequestRecord } from '../stats/request-record.js';
import type { Job } from './scheduler.js';

export class InstancePool {
  private readonly free: InstanceHandle[];

  constructor(
    readonly instances: readonly InstanceHandle[],
    private readonly stats: ModelStats,
    private readonly log: Logger,
  ) {
    this.free = [...instances];
  }

  get freeCount(): number {
    return this.free.length;
  }

  /** Takes a free instance, or undefined when all are busy. */
  take(): InstanceHandle | undefined {
    return this.free.shift();
  }

  /**
   * Executes `jobs` as one batch on `instance` (taken with take()). Resolves (never rejects) after every
   * job's response stream has ended and the instance is free again.
   */
  run(instance: InstanceHandle, jobs: readonly Job[]): Promise<void> {
    const start = process.hrtime.bigint();
    const records: RequestRecord[] = [];
    const requests: BackendRequest[] = jobs.map((job) => {
      let record: RequestRecord | undefined;
      // A request that already ended (counted when it did) is not counted again with this execution.
      if (job.sender instanceof JobSender && !job.sender.done) {
        job.sender.dispatched(start);
        record = job.sender.record;
        records.push(record);
      }
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
        sender: job.sender,
        reportTiming: record?.reportTiming,
      };
    });
    const finish = (error?: unknown): void => {
      const end = process.hrtime.bigint();
      for (const job of jobs) {
        if (job.sender.done) continue;
        if (error !== undefined) {
          job.sender.fail(NereidError.from(error));
        } else {
          job.sender.fail(internal(`backend returned without a response for request '${job.request.id}'`));
        }
      }
      // Every request has ended now, so the whole execution can be counted at once.
      this.stats.recordExecution(records, start, end);
      this.free.push(instance);
    };
    let pending: Promise<void>;
    try {
      pending = instance.execute(requests);
    } catch (err) {
      finish(err);
      return Promise.resolve();
    }
    return pending.then(
      () => finish(),
      (err: unknown) => {
        if (!(err instanceof NereidError)) this.log.error(`instance ${instance.name} failed: ${String(err)}`);
        finish(err);
      },
    );
  }

  /** Closes every instance (call after the scheduler drained). */
  async close(): Promise<void> {
    await Promise.allSettled(this.instances.map((i) => i.close()));
  }
}
