/**
 * The core side of a backend's ResponseSender for one request: keeps only the requested outputs, turns
 * backend shapes back into the config's dims (output reshape), applies classification, counts
 * success/failure, and pushes the result into the request's response stream.
 */
import type { ResponseSender, SendOptions } from '../../backend-api/backend.js';
import { internal, type NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { classify } from '../classification.js';
import type { PreparedRequest } from '../inference.js';
import type { ResponseStream } from '../response-stream.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { InferenceResponse } from '../types.js';

export interface OutputContext {
  readonly config: FrozenModelConfig;
  readonly version: string;
  readonly labels: ReadonlyMap<string, readonly string[]>;
  readonly stats: ModelStats;
}

export class JobSender implements ResponseSender {
  private sentAny = false;

  constructor(
    private readonly ctx: OutputContext,
    private readonly request: PreparedRequest,
    private readonly stream: ResponseStream<InferenceResponse>,
    private readonly acceptedAt: bigint,
    private readonly decoupled: boolean,
  ) {}

  get done(): boolean {
    return this.stream.done;
  }

  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.stream.done) return;
    if (!this.decoupled && (!options.final || this.sentAny)) {
      this.fail(internal('a non-decoupled model must send exactly one, final response'));
      return;
    }
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
      this.fail(err instanceof Error && 'code' in err ? (err as NereidError) : internal(String(err)));
      return;
    }
    this.sentAny = true;
    if (options.final) this.ctx.stats.recordSuccess(this.elapsed());
    this.stream.push(response, options.final);
  }

  fail(error: NereidError): void {
    if (this.stream.done) return;
    this.ctx.stats.recordFailure(this.elapsed());
    this.stream.fail(error);
  }

  private elapsed(): number {
    return Number(process.hrtime.bigint() - this.acceptedAt);
  }

  private selectOutputs(produced: readonly Tensor[]): Tensor[] {
    const byName = new Map(produced.map((t) => [t.name, t]));
    const config = this.ctx.config;
    const batching = config.max_batch_size > 0;
    const result: Tensor[] = [];
    for (const plan of this.request.outputs) {
      let t = byName.get(plan.name);
      if (!t) {
        // Decoupled models may send partial responses; a default-mode model must produce every output.
        if (this.decoupled) continue;
        throw internal(`output '${plan.name}' was not produced by model '${config.name}'`);
      }
      const cfg = config.output.find((o) => o.name === plan.name);
      if (cfg?.reshape) {
        const dims = cfg.dims;
        if (!dims.includes(-1)) {
          t = { ...t, shape: batching ? [t.shape[0] ?? 1, ...dims] : [...dims] };
        }
      }
      if (plan.classification > 0) {
        t = classify(t, plan.classification, batching, this.ctx.labels.get(plan.name));
      }
      result.push(t);
    }
    return result;
  }
}
