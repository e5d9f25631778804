/**
 * One ensemble request in flight. Event-driven like Triton's ensemble scheduler: a step is sent to its
 * member model as soon as every tensor it reads exists, so independent branches run at the same time, and
 * each member's own scheduler (batching, queues, instances) applies. Steps look their member up per
 * request, so a reloaded member serves the next step at once.
 *
 * Decoupled members: each response of a decoupled step starts a new lineage (key `<parent>/<index>`) and
 * triggers its downstream steps on its own; tensors only meet within one lineage (the load-time check
 * guarantees a step never needs two). The ensemble answers once per lineage that completes its requested
 * outputs; the final flag comes when no step is left in flight.
 *
 * A step failure fails the request at once with the step named, and cancels the steps still running (they
 * share one AbortSignal, which the client's cancellation also aborts). The run reports to the ensemble
 * version when nothing of it is left in flight, so unloading waits for stragglers too.
 */
import { NereidError, cancelled, internal, invalidArg } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { classify } from '../classification.js';
import type { PreparedRequest } from '../inference.js';
import type { ResponseSink } from '../response-stream.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { RequestRecord } from '../stats/request-record.js';
import { traceRequestEnd, traceResponse } from '../trace/report.js';
import type { InferenceTrace } from '../trace/types.js';
import type { InferInput, InferenceResponse, OutputTensor } from '../types.js';
import type { StepLimiter } from './limiter.js';
import { describeStep, type EnsemblePlan, type PlannedStep, type RequestPlan } from './plan.js';
import type { VersionLookup } from '../model/servable.js';
import { shapeForConsumer } from './shapes.js';
import { NEVER_ABORTED } from '../../common/never-aborted.js';

/** What every run of one ensemble version shares. */
export interface EnsembleContext {
  readonly config: FrozenModelConfig;
  readonly version: string;
  readonly plan: EnsemblePlan;
  /** The ensemble answers 0..n times (some step was decoupled at load time). */
  readonly decoupled: boolean;
  /** Per step: its member was decoupled at load time. */
  readonly decoupledSteps: readonly boolean[];
  readonly members: VersionLookup;
  readonly labels: ReadonlyMap<string, readonly string[]>;
  /** Per step: the max_inflight_requests limiter, if one is configured. */
  readonly limiters: readonly (StepLimiter | undefined)[];
  readonly stats: ModelStats;
}

interface Value {
  /** null: the producer did not send this output (a decoupled model's partial response). */
  readonly tensor: Tensor | null;
  /** Batch size of the request that wrote it; 0 when that model does not batch. */
  readonly batchSize: number;
  /** Reads still to come; the value is dropped at 0. */
  remaining: number;
}

const ROOT = '';
/** What a limiter wait listens to when the run has no signal of its own. */

export class EnsembleRun {
  /** Tensor values by `tensor` (the root lineage) or `tensor\0lineage`. */
  private readonly values = new Map<string, Value>();
  /** Steps started in the root lineage (by index); other lineages use `launched`. */
  private readonly launchedRoot: Uint8Array;
  private launched: Set<string> | undefined;
  /**
   * Cancels the steps still running when the request fails. Only made when steps can overlap: in a plain
   * chain at most one step runs, and it carries the client's own signal (an AbortController per request
   * is a measurable part of an ensemble's overhead).
   */
  private readonly controller: AbortController | undefined;
  private readonly stepSignal: AbortSignal | undefined;
  private readonly batching: boolean;
  private inflight = 0;
  private finished = false;
  private settled = false;
  private sentAny = false;
  private finalSent = false;
  /** A non-decoupled ensemble's one response, sent when the run ends. */
  private pending: InferenceResponse | undefined;
  /** Time steps spent from dispatch to final response, summed (the ensemble's compute_infer). */
  private stepNs = 0;

  constructor(
    private readonly ctx: EnsembleContext,
    private readonly rp: RequestPlan,
    private readonly request: PreparedRequest,
    private readonly signal: AbortSignal | undefined,
    private readonly stream: ResponseSink<InferenceResponse>,
    private readonly record: RequestRecord,
    private readonly onSettled: () => void,
  ) {
    this.batching = ctx.config.max_batch_size > 0;
    this.launchedRoot = new Uint8Array(ctx.plan.steps.length);
    if (rp.concurrent) {
      this.controller = new AbortController();
      this.stepSignal = this.controller.signal;
    } else {
      this.stepSignal = signal;
    }
  }

  private readonly onAbort = (): void => {
    this.fail(cancelled(`in ensemble '${this.ctx.config.name}', request cancelled`));
  };

  start(): void {
    if (this.signal?.aborted) {
      this.onAbort();
      return;
    }
    // With a signal of its own the run forwards the client's cancellation; otherwise steps carry it.
    if (this.controller) this.signal?.addEventListener('abort', this.onAbort, { once: true });
    const batch = this.batching ? this.request.batchSize : 0;
    for (const name of this.ctx.plan.inputs) {
      this.store(name, ROOT, this.request.inputs.get(name) ?? null, batch);
    }
    this.advance(this.ctx.plan.inputs, ROOT);
    this.afterEvent();
  }

  // ------------------------------------------------------------------ tensors

  private store(tensor: string, key: string, value: Tensor | null, batchSize: number): void {
    const readers = this.rp.readers.get(tensor) ?? 0;
    if (readers === 0) return;
    this.values.set(key === ROOT ? tensor : `${tensor}\0${key}`, {
      tensor: value,
      batchSize,
      remaining: readers,
    });
  }

  private has(tensor: string, key: string): boolean {
    return this.values.has(key === ROOT ? tensor : `${tensor}\0${key}`);
  }

  /** One read of a tensor's value; the last read frees it. */
  private take(tensor: string, key: string): Value | undefined {
    const k = key === ROOT ? tensor : `${tensor}\0${key}`;
    const v = this.values.get(k);
    if (v && --v.remaining <= 0) this.values.delete(k);
    return v;
  }

  /** New values of `tensors` exist in lineage `key`: start what became ready, answer if complete. */
  private advance(tensors: readonly string[], key: string): void {
    let output = false;
    for (const t of tensors) {
      const consumers = this.rp.consumers.get(t);
      if (consumers) {
        for (const s of consumers) {
          this.tryLaunch(s, key);
          if (this.finished) return;
        }
      }
      if (this.rp.requested.has(t)) output = true;
    }
    if (output) this.tryRespond(key);
  }

  // ------------------------------------------------------------------ steps

  private tryLaunch(s: number, key: string): void {
    const id = key === ROOT ? '' : `${s}@${key}`;
    if (key === ROOT ? this.launchedRoot[s] === 1 : this.launched?.has(id) === true) return;
    const step = this.ctx.plan.steps[s];
    for (const b of step.inputs) {
      if (!this.has(b.tensor, key)) return;
    }
    if (key === ROOT) this.launchedRoot[s] = 1;
    else (this.launched ??= new Set()).add(id);
    // One read per distinct tensor: two member inputs may map the same ensemble tensor.
    const bindings = step.inputs;
    const inputs = new Array<Value>(bindings.length);
    for (let i = 0; i < bindings.length; i++) {
      let j = 0;
      while (j < i && bindings[j].tensor !== bindings[i].tensor) j++;
      inputs[i] = j < i ? inputs[j] : (this.take(bindings[i].tensor, key) as Value);
    }
    this.inflight++;
    const limiter = this.ctx.limiters[s];
    if (limiter === undefined || limiter.tryAcquire()) {
      this.dispatch(step, key, inputs, limiter);
      return;
    }
    limiter.acquire(this.stepSignal ?? NEVER_ABORTED).then(
      () => {
        if (!this.finished) {
          this.dispatch(step, key, inputs, limiter);
          return;
        }
        limiter.release();
        this.inflight--;
        this.afterEvent();
      },
      (err: unknown) => {
        this.stepFailed(step, err);
        this.inflight--;
        this.afterEvent();
      },
    );
  }

  private dispatch(
    step: PlannedStep,
    key: string,
    inputs: readonly Value[],
    limiter: StepLimiter | undefined,
  ): void {
    const started = process.hrtime.bigint();
    let responses: AsyncIterable<InferenceResponse>;
    let decoupled: boolean;
    let batchSize = 0;
    let childTrace: InferenceTrace | undefined;
    try {
      const member = this.ctx.members.getVersion(
        step.modelName,
        step.modelVersion < 0 ? undefined : String(step.modelVersion),
      );
      const cfg = member.config;
      decoupled = cfg.model_transaction_policy?.decoupled === true;
      if (decoupled !== this.ctx.decoupledSteps[step.index]) {
        throw internal(
          `model '${step.modelName}' was ${decoupled ? 'not ' : ''}decoupled when ensemble '${this.ctx.config.name}' loaded; load the ensemble again`,
        );
      }
      const memberBatching = cfg.max_batch_size > 0;
      const wire: InferInput[] = [];
      for (let i = 0; i < step.inputs.length; i++) {
        const b = step.inputs[i];
        const v = inputs[i];
        if (v.tensor === null) continue; // an optional input nobody provided
        const dims = cfg.input.find((i) => i.name === b.member)?.dims;
        wire.push({
          name: b.member,
          datatype: v.tensor.datatype,
          shape: dims ? shapeForConsumer(dims, memberBatching, v.batchSize, v.tensor.shape) : v.tensor.shape,
          data: v.tensor.data,
        });
      }
      if (memberBatching) batchSize = wire[0]?.shape[0] ?? 0;
      responses = member.infer({
        modelName: step.modelName,
        modelVersion: String(member.version),
        id: this.request.id,
        inputs: wire,
        outputs: this.rp.stepOutputs[step.index].map((b) => ({ name: b.member })),
        parameters: this.request.parameters,
        signal: this.stepSignal,
        trace: (childTrace = this.record.trace?.spawn()),
      });
    } catch (err) {
      childTrace?.release(); // refused before it started: nobody else will
      this.stepFailed(step, err);
      this.endStep(limiter, started);
      this.afterEvent();
      return;
    }
    void this.collect(step, key, responses, decoupled, batchSize, limiter, started);
  }

  private async collect(
    step: PlannedStep,
    key: string,
    responses: AsyncIterable<InferenceResponse>,
    decoupled: boolean,
    batchSize: number,
    limiter: StepLimiter | undefined,
    started: bigint,
  ): Promise<void> {
    let index = 0;
    let ended = false;
    try {
      for await (const r of responses) {
        if (this.finished) break;
        if (r.final) {
          // Counted out before its outputs move on, so an answer they complete can carry the final flag.
          ended = true;
          this.endStep(limiter, started);
        }
        this.onStepResponse(step, key, r, index++, decoupled, batchSize);
        this.afterEvent();
        if (ended) break;
      }
      if (!this.finished && !decoupled && index === 0) {
        this.stepFailed(step, internal(`model '${step.modelName}' ended the request without a response`));
      }
    } catch (err) {
      this.stepFailed(step, err);
    } finally {
      if (!ended) {
        this.endStep(limiter, started);
        this.afterEvent();
      }
    }
  }

  private onStepResponse(
    step: PlannedStep,
    key: string,
    r: InferenceResponse,
    index: number,
    decoupled: boolean,
    batchSize: number,
  ): void {
    if (decoupled && r.final && r.outputs.length === 0) return; // a flag-only final response
    const lineage = decoupled ? `${key}/${index}` : key;
    const bindings = this.rp.stepOutputs[step.index];
    const written = new Array<string>(bindings.length);
    for (let i = 0; i < bindings.length; i++) {
      const b = bindings[i];
      let t: Tensor | null = null;
      for (const o of r.outputs) {
        if (o.name === b.member) {
          t = o;
          break;
        }
      }
      this.store(b.tensor, lineage, t, batchSize);
      written[i] = b.tensor;
    }
    this.advance(written, lineage);
  }

  private endStep(limiter: StepLimiter | undefined, started: bigint): void {
    this.inflight--;
    limiter?.release();
    this.stepNs += Number(process.hrtime.bigint() - started);
  }

  private stepFailed(step: PlannedStep, err: unknown): void {
    const e = NereidError.from(err);
    this.fail(
      new NereidError(e.code, `in ensemble '${this.ctx.config.name}', ${describeStep(step)}: ${e.message}`, {
        cause: e,
      }),
    );
  }

  // ------------------------------------------------------------------ answers and the end

  private tryRespond(key: string): void {
    if (this.finished) return;
    const outputs = this.request.outputs;
    for (const o of outputs) {
      if (!this.has(o.name, key)) return;
    }
    const tensors: OutputTensor[] = [];
    try {
      for (const o of outputs) {
        const v = this.take(o.name, key) as Value;
        if (v.tensor === null) continue; // Triton leaves an output nobody wrote out of the response
        const cfg = this.ctx.config.output.find((x) => x.name === o.name);
        const dims = cfg?.reshape?.shape ?? cfg?.dims;
        let t: Tensor = {
          name: o.name,
          datatype: v.tensor.datatype,
          shape: dims ? shapeForConsumer(dims, this.batching, v.batchSize, v.tensor.shape) : v.tensor.shape,
          data: v.tensor.data,
        };
        if (o.classification > 0) {
          t = classify(t, o.classification, this.batching, this.ctx.labels.get(o.name));
        }
        tensors.push(t);
      }
    } catch (err) {
      this.fail(NereidError.from(err));
      return;
    }
    const response: InferenceResponse = {
      modelName: this.ctx.config.name,
      modelVersion: this.ctx.version,
      id: this.request.id,
      outputs: tensors,
      parameters: {},
      final: false,
    };
    if (!this.ctx.decoupled) {
      if (this.pending !== undefined) {
        this.fail(internal(`in ensemble '${this.ctx.config.name}', more than one response for one request`));
        return;
      }
      this.pending = response;
      return;
    }
    this.send(response, this.inflight === 0);
  }

  private send(response: InferenceResponse, final: boolean): void {
    this.stream.push(final ? { ...response, final } : response, final);
    if (this.record.trace) traceResponse(this.record.trace, response.outputs);
    if (final) this.finalSent = true;
    if (!this.sentAny) {
      this.sentAny = true;
      this.ctx.stats.recordFirstResponse(this.record, process.hrtime.bigint());
    }
  }

  /** After each event: with nothing left in flight, the request is complete. */
  private afterEvent(): void {
    if (this.inflight !== 0) return;
    if (!this.finished) this.finish();
    this.settle();
  }

  private finish(): void {
    if (this.ctx.decoupled) {
      if (!this.finalSent) {
        this.send(
          {
            modelName: this.ctx.config.name,
            modelVersion: this.ctx.version,
            id: this.request.id,
            outputs: [],
            parameters: {},
            final: true,
          },
          true,
        );
      }
    } else if (this.pending !== undefined) {
      this.send(this.pending, true);
    } else {
      this.fail(
        invalidArg(
          `in ensemble '${this.ctx.config.name}', unexpected deadlock, at least one output is not set while no more ensemble steps can be made`,
        ),
      );
      return;
    }
    this.finished = true;
    const end = process.hrtime.bigint();
    // The ensemble has no instances: its compute time is what its steps took (Triton sums them too).
    this.record.reportTiming({ computeInputNs: 0, computeInferNs: this.stepNs, computeOutputNs: 0 });
    this.record.succeed(end);
    this.ctx.stats.recordExecution([this.record], this.record.computeStart, end);
  }

  private fail(error: NereidError): void {
    if (this.finished) return;
    this.finished = true;
    this.controller?.abort();
    this.stream.fail(error);
    const at = process.hrtime.bigint();
    this.record.failed(at, error.code === 'CANCELLED' ? 'CANCELED' : 'OTHER');
    if (!this.sentAny) this.ctx.stats.recordFirstResponse(this.record, at);
    this.ctx.stats.recordExecution([this.record], this.record.computeStart, at);
    this.settle();
  }

  private settle(): void {
    if (this.settled || !this.finished || this.inflight !== 0) return;
    this.settled = true;
    if (this.record.trace) traceRequestEnd(this.record.trace, process.hrtime.bigint());
    if (this.controller) this.signal?.removeEventListener('abort', this.onAbort);
    this.onSettled();
  }
}
