/**
 * The core side of a backend's ResponseSender for one request: keeps only the requested outputs, checks
 * each against its config (output-contract.ts), turns
 * backend shapes back into the config's dims (output reshape), applies classification, notes how the
 * request ended (and why) in its statistics record, and pushes the result into the request's response
 * stream.
 */
import type { FailOptions, ResponseSender, SendOptions } from '../../backend-api/backend.js';
import { internal, type NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { classify } from '../classification.js';
import type { PreparedRequest } from '../inference.js';
import type { ResponseSink } from '../response-stream.js';
import type { FailureReason, ModelStats, ResponseOutcome } from '../stats/model-stats.js';
import type { RequestRecord } from '../stats/request-record.js';
import { traceRequestEnd, traceResponse } from '../trace/report.js';
import type { InferenceResponse } from '../types.js';
import type { OutputContract } from './output-contract.js';

export interface OutputContext {
  readonly config: FrozenModelConfig;
  readonly version: string;
  readonly labels: ReadonlyMap<string, readonly string[]>;
  readonly stats: ModelStats;
  /** Checks each delivered output against itself and the config (output-contract.ts); absent: none. */
  readonly contract?: OutputContract;
}

const reshapesByConfig = new WeakMap<FrozenModelConfig, ReadonlyMap<string, readonly number[]>>();

/**
 * The outputs whose config has a reshape and fixed dims, with those dims (a response shows the config's
 * dims rather than the backend's shape); worked out once per frozen config.
 */
function outputReshapes(config: FrozenModelConfig): ReadonlyMap<string, readonly number[]> {
  let map = reshapesByConfig.get(config);
  if (map === undefined) {
    const m = new Map<string, readonly number[]>();
    for (const o of config.output) {
      // The first output of a name wins, as config.output.find did.
      if (o.reshape && !m.has(o.name) && !o.dims.includes(-1)) m.set(o.name, o.dims);
    }
    map = m;
    reshapesByConfig.set(config, map);
  }
  return map;
}

/**
 * The last tensor of that name (a backend that sends a name twice: its last one counts). A model has few
 * outputs, so a scan costs less than building a map per response.
 */
function lastNamed(tensors: readonly Tensor[], name: string): Tensor | undefined {
  for (let i = tensors.length - 1; i >= 0; i--) if (tensors[i].name === name) return tensors[i];
  return undefined;
}

export class JobSender implements ResponseSender {
  private sentAny = false;
  /** Responses sent so far (the response_stats index of the next one). */
  private responseIndex = 0;
  /** When the model began computing the next response (decoupled response statistics). */
  private responseStart = 0n;

  constructor(
    private readonly ctx: OutputContext,
    private readonly request: PreparedRequest,
    private readonly stream: ResponseSink<InferenceResponse>,
    readonly record: RequestRecord,
    private readonly decoupled: boolean,
  ) {}

  /** An instance took the request now. */
  dispatched(at: bigint): void {
    this.record.computeStart = at;
    this.responseStart = at;
  }

  get done(): boolean {
    return this.stream.done;
  }

  whenWritable(): Promise<void> {
    return this.stream.writable?.() ?? Promise.resolve();
  }

  get full(): boolean {
    return this.stream.full ?? false;
  }

  get requestId(): string {
    return this.request.id;
  }

  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.stream.done) return;
    if (!this.decoupled && (!options.final || this.sentAny)) {
      this.end(internal('a non-decoupled model must send exactly one, final response'), 'BACKEND');
      return;
    }
    const outputStart = process.hrtime.bigint();
    let response: InferenceResponse;
    try {
      response = {
        modelName: this.ctx.config.name,
        modelVersion: this.ctx.version,
        id: this.request.id,
        outputs: this.selectOutputs(outputs),
        parameters: options.parameters ?? {},
        final: options.final,
      };
    } catch (err) {
      const error = err instanceof Error && 'code' in err ? (err as NereidError) : internal(String(err));
      this.end(error, 'OTHER', outputStart);
      return;
    }
    const firstResponse = !this.sentAny;
    this.sentAny = true;
    this.stream.push(response, options.final);
    const end = process.hrtime.bigint();
    if (this.record.trace) traceResponse(this.record.trace, response.outputs);
    this.record.outputNs += Number(end - outputStart);
    if (firstResponse) this.ctx.stats.recordFirstResponse(this.record, end);
    if (this.decoupled) this.responseDone(outputs.length > 0 ? 'success' : 'empty', outputStart, end);
    if (options.final) this.record.succeed(end);
  }

  /**
   * Ends the request with an error. A backend's failure counts as BACKEND; before any instance took the
   * request (a scheduler refusing or timing it out) as REJECTED; a cancellation as CANCELED. A backend may
   * say the error is its model's answer (`countAs: 'success'`), which the statistics count as a success.
   */
  fail(error: NereidError, options?: FailOptions): void {
    const answered = options?.countAs === 'success' && this.record.dispatched;
    this.end(error, this.record.dispatched ? 'BACKEND' : 'REJECTED', 0n, answered);
  }

  private end(error: NereidError, reason: FailureReason, outputStart = 0n, answered = false): void {
    if (this.stream.done) return;
    this.stream.fail(error);
    const at = process.hrtime.bigint();
    const cancelled = error.code === 'CANCELLED';
    if (answered) this.record.succeed(at);
    else this.record.failed(at, cancelled ? 'CANCELED' : reason);
    if (!this.sentAny) this.ctx.stats.recordFirstResponse(this.record, at);
    if (this.decoupled && this.record.dispatched)
      this.responseDone(cancelled ? 'cancel' : 'fail', outputStart, at);
    const trace = this.record.trace;
    // After dispatch the instance pool records the request with its execution; before it nobody else will.
    if (!this.record.dispatched) {
      this.ctx.stats.recordEarlyFailure(this.record);
      if (trace) traceRequestEnd(trace, at);
    }
  }

  private responseDone(outcome: ResponseOutcome, outputStart: bigint, end: bigint): void {
    this.ctx.stats.recordResponse(this.responseIndex++, outcome, this.responseStart, outputStart, end);
    this.responseStart = end;
  }

  private selectOutputs(produced: readonly Tensor[]): Tensor[] {
    const config = this.ctx.config;
    const batching = config.max_batch_size > 0;
    const reshapes = outputReshapes(config);
    const result: Tensor[] = [];
    for (const plan of this.request.outputs) {
      // A model may leave out an output (Python and JavaScript models choose what they return): like
      // Triton, the response carries the outputs the model produced.
      let t = lastNamed(produced, plan.name);
      if (!t) continue;
      const mistake = this.ctx.contract?.check(t);
      if (mistake) throw mistake;
      const dims = reshapes.get(plan.name);
      if (dims) t = { ...t, shape: batching ? [t.shape[0] ?? 1, ...dims] : [...dims] };
      if (plan.classification > 0) {
        t = classify(t, plan.classification, batching, this.ctx.labels.get(plan.name));
      }
      result.push(t);
    }
    return result;
  }
}
