/**
 * Per model-version statistics, the one source behind the statistics extension (HTTP and gRPC) and the
 * Prometheus metrics. Durations are kept in nanoseconds as Triton reports them.
 */
import type { InferBatchStatistics, ModelStatistics, StatisticDuration } from '../types.js';

const zero = (): StatisticDuration => ({ count: 0, ns: 0 });

export interface ExecutionTiming {
  batchSize: number;
  /** Number of requests in the execution. */
  requests: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
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
  private readonly batches = new Map<number, InferBatchStatistics>();
  /** Requests accepted but not yet executing. */
  pending = 0;

  constructor(
    readonly modelName: string,
    readonly version: string,
  ) {}

  recordQueue(ns: number): void {
    this.queue.count++;
    this.queue.ns += ns;
  }

  recordExecution(t: ExecutionTiming): void {
    this.executionCount++;
    this.inferenceCount += t.batchSize;
    this.lastInference = Date.now();
    add(this.computeInput, t.requests, t.computeInputNs);
    add(this.computeInfer, t.requests, t.computeInferNs);
    add(this.computeOutput, t.requests, t.computeOutputNs);
    let b = this.batches.get(t.batchSize);
    if (!b) {
      b = { batch_size: t.batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(t.batchSize, b);
    }
    add(b.compute_input, 1, t.computeInputNs);
    add(b.compute_infer, 1, t.computeInferNs);
    add(b.compute_output, 1, t.computeOutputNs);
  }

  recordSuccess(totalNs: number): void {
    add(this.success, 1, totalNs);
  }

  recordFailure(totalNs: number): void {
    add(this.fail, 1, totalNs);
  }

  snapshot(): ModelStatistics {
    const copy = (d: StatisticDuration): StatisticDuration => ({ count: d.count, ns: d.ns });
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
      response_stats: {},
    };
  }
}

function add(d: StatisticDuration, count: number, ns: number): void {
  d.count += count;
  d.ns += ns;
}
