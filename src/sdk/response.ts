/**
 * InferenceResponse: what a model returns for a request (outputs, or an error, plus response
 * parameters), and what a BLS call or the in-process API hands back (then also naming the model, the
 * request id and whether it was the last response).
 */
import { NereidError, invalidArg, type ErrorCode } from '../common/errors.js';
import type { Parameters, ParameterValue } from '../common/parameters.js';
import type { Tensor } from './tensor.js';

// Shared with the server and the client: common/parameters.ts.
export type { Parameters, ParameterValue };

export interface InferenceResponseInit {
  readonly outputs?: readonly Tensor[];
  /** The request failed: a NereidError keeps its code; anything else is INTERNAL. */
  readonly error?: NereidError | Error | string;
  readonly parameters?: Readonly<Parameters>;
  readonly modelName?: string;
  readonly modelVersion?: string;
  readonly id?: string;
  /** The last response of its request (results of BLS calls and the in-process API). */
  readonly final?: boolean;
}

/** Any thrown value or error text as a NereidError (INTERNAL unless it already has a code). */
export function toNereidError(err: unknown, code: ErrorCode = 'INTERNAL'): NereidError {
  if (err instanceof NereidError) return err;
  if (typeof err === 'object' && err !== null) {
    const e = err as { code?: unknown; message?: unknown; name?: unknown };
    // A NereidError from another copy of the class (another realm) keeps its code.
    if (e.name === 'NereidError' && typeof e.code === 'string' && typeof e.message === 'string') {
      return new NereidError(e.code as ErrorCode, e.message);
    }
  }
  return NereidError.from(typeof err === 'string' ? new Error(err) : err, code);
}

export class InferenceResponse {
  readonly outputs: readonly Tensor[];
  readonly error: NereidError | undefined;
  readonly parameters: Readonly<Parameters>;
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly final: boolean;

  constructor(init: InferenceResponseInit = {}) {
    this.outputs = [...(init.outputs ?? [])];
    this.error = init.error === undefined ? undefined : toNereidError(init.error);
    this.parameters = { ...(init.parameters ?? {}) };
    this.modelName = init.modelName ?? '';
    this.modelVersion = init.modelVersion ?? '';
    this.id = init.id ?? '';
    this.final = init.final ?? true;
  }

  /** The output of that name, or undefined when the response has none. */
  output(name: string): Tensor | undefined {
    return this.outputs.find((t) => t.name === name);
  }

  /**
   * The output of that name; throws INVALID_ARG naming the outputs there are when it is missing. For code
   * that knows the model's outputs: `r.requireOutput('OUTPUT0').int32()` type-checks under `strict`, where
   * `r.output('OUTPUT0')` may be undefined.
   */
  requireOutput(name: string): Tensor {
    const t = this.output(name);
    if (t !== undefined) return t;
    const names = this.outputs.map((o) => `'${o.name}'`).join(', ') || 'none';
    const model = this.modelName ? ` of model '${this.modelName}'` : '';
    throw invalidArg(`the response${model} has no output '${name}' (outputs: ${names})`);
  }

  hasError(): boolean {
    return this.error !== undefined;
  }
}

/** pb_utils.get_output_tensor_by_name. */
export function getOutputTensorByName(response: InferenceResponse, name: string): Tensor | undefined {
  return response.output(name);
}
