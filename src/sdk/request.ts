/**
 * InferenceRequest: a request a model receives in execute() — inputs, requested outputs, id,
 * correlation id, flags, parameters, a cancellation signal and its response sender — and also the
 * object a model builds to call another model (BLS): `await new InferenceRequest({...}).exec()`, or
 * `.stream()` for a decoupled target. The same class, as in Triton's pb_utils.
 */
import { NereidError, invalidArg, unavailable } from '../common/errors.js';
import { InferenceResponse, type InferenceResponseInit, type Parameters } from './response.js';
import { currentRuntime, type BlsCall } from './runtime.js';
import type { Tensor } from './tensor.js';
import { NEVER_ABORTED } from '../common/never-aborted.js';

/** Request flags (TRITONSERVER_REQUEST_FLAG_*). */
export const REQUEST_FLAG_SEQUENCE_START = 1;
export const REQUEST_FLAG_SEQUENCE_END = 2;
/** The response flag that ends a request's stream (TRITONSERVER_RESPONSE_COMPLETE_FINAL). */
export const RESPONSE_COMPLETE_FINAL = 1;

/**
 * Sends a request's responses (decoupled models: any number, from anywhere, even after execute()
 * returned; default-mode models: exactly one). The last send carries RESPONSE_COMPLETE_FINAL (or
 * `{ final: true }`); `send(undefined, RESPONSE_COMPLETE_FINAL)` ends the stream with no more outputs.
 * A response with an error ends the request. Output buffers are moved to the server on send: build new
 * arrays for each response (or clone()).
 */
export interface ResponseSender {
  send(
    response?: InferenceResponse | InferenceResponseInit | null,
    flags?: number | { final: boolean },
  ): void;
  /** The client went away or cancelled; the model should stop and send its final flag. */
  isCancelled(): boolean;
  /** The stream has ended (final sent, failed or cancelled). */
  readonly done: boolean;
  /**
   * Resolves when the client has room for another response: a decoupled model awaits it before each
   * send, so a client that reads slowly slows the model down instead of the server buffering what it
   * sends (`--max-undelivered-responses`). Resolves at once while there is room, and when the request is
   * cancelled or the stream ends (check isCancelled() / done afterwards). The generator form of execute()
   * waits on it by itself.
   */
  whenWritable(): Promise<void>;
}

export interface InferenceRequestInit {
  /** The model to call (BLS). For received requests, the model that received it. */
  readonly modelName?: string;
  /** '' or omitted = the version policy's default. */
  readonly modelVersion?: string | number;
  readonly requestId?: string;
  readonly inputs?: readonly Tensor[];
  /** Omitted or empty = every output of the model. */
  readonly requestedOutputNames?: readonly string[];
  /** Sequence correlation id; 0 or '' = none. */
  readonly correlationId?: bigint | number | string;
  /** REQUEST_FLAG_SEQUENCE_START | REQUEST_FLAG_SEQUENCE_END. */
  readonly flags?: number;
  /** Custom request parameters (string, number, boolean, bigint values). */
  readonly parameters?: Readonly<Parameters>;
  /** Queue timeout of a BLS request, in microseconds (Triton's `timeout`); 0 = none. */
  readonly timeoutMicroseconds?: number;
}

/** Set by the runtime on the requests it hands to execute(). */
export interface ReceivedRequestParts {
  readonly sender: ResponseSender;
  readonly signal: AbortSignal;
  readonly batchSize: number;
}

function bigintParameter(v: bigint | number | string): ParameterValueOrNone {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number') return v === 0 ? undefined : v;
  return v === 0n ? undefined : v;
}
type ParameterValueOrNone = string | number | bigint | undefined;

export class InferenceRequest {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly inputs: readonly Tensor[];
  readonly requestedOutputNames: readonly string[];
  readonly correlationId: bigint | number | string;
  readonly flags: number;
  readonly parameters: Readonly<Parameters>;
  readonly timeoutMicroseconds: number;
  /** Size of the leading batch dimension (1 for models without one). */
  readonly batchSize: number;
  /** Aborted when the client goes away or cancels. */
  readonly signal: AbortSignal;
  readonly #sender: ResponseSender | undefined;
  #byName: Map<string, Tensor> | undefined;

  constructor(init: InferenceRequestInit = {}, received?: ReceivedRequestParts) {
    this.modelName = init.modelName ?? '';
    this.modelVersion =
      init.modelVersion === undefined || init.modelVersion === -1 ? '' : String(init.modelVersion);
    this.id = init.requestId ?? '';
    this.inputs = Object.freeze([...(init.inputs ?? [])]);
    this.requestedOutputNames = Object.freeze([...(init.requestedOutputNames ?? [])]);
    this.correlationId = init.correlationId ?? 0;
    this.flags = init.flags ?? 0;
    this.parameters = Object.freeze({ ...(init.parameters ?? {}) });
    this.timeoutMicroseconds = init.timeoutMicroseconds ?? 0;
    this.batchSize = received?.batchSize ?? 1;
    this.signal = received?.signal ?? NEVER_ABORTED;
    this.#sender = received?.sender;
  }

  /** The input of that name, or undefined when the request has none (an optional input not sent). */
  input(name: string): Tensor | undefined {
    this.#byName ??= new Map(this.inputs.map((t) => [t.name, t]));
    return this.#byName.get(name);
  }

  /**
   * The input of that name; throws INVALID_ARG naming the inputs there are when it is missing (the client
   * gets that error). Spares a model the `!` or the check that `input()` needs under `strict`.
   */
  requireInput(name: string): Tensor {
    const t = this.input(name);
    if (t !== undefined) return t;
    const names = this.inputs.map((i) => `'${i.name}'`).join(', ') || 'none';
    const model = this.modelName ? ` for model '${this.modelName}'` : '';
    throw invalidArg(`the request${model} has no input '${name}' (inputs: ${names})`);
  }

  isCancelled(): boolean {
    return this.signal.aborted;
  }

  /** The sender of this request's responses (only for requests the model received). */
  getResponseSender(): ResponseSender {
    if (!this.#sender) {
      throw invalidArg('only a request that a model received in execute() has a response sender');
    }
    return this.#sender;
  }

  /**
   * BLS: runs this request on the server and resolves with its one response (for a decoupled target,
   * the first response; use stream()). Rejects with the target's error. Only inside a model.
   */
  async exec(options: { signal?: AbortSignal } = {}): Promise<InferenceResponse> {
    let first: InferenceResponse | undefined;
    for await (const r of this.stream(options)) {
      first ??= r;
      if (r.final) break;
    }
    if (!first) throw new NereidError('INTERNAL', `model '${this.modelName}' sent no response`);
    return first;
  }

  /** BLS to any model, decoupled ones included: every response, the last with `final` set. */
  async *stream(options: { signal?: AbortSignal } = {}): AsyncGenerator<InferenceResponse> {
    const rt = currentRuntime();
    if (!rt) throw unavailable('BLS calls are only available inside a model run by the javascript backend');
    if (this.modelName === '') throw invalidArg('a BLS request needs a modelName');
    const parameters: Parameters = { ...this.parameters };
    const corr = bigintParameter(this.correlationId);
    if (corr !== undefined) parameters.sequence_id = corr;
    if ((this.flags & REQUEST_FLAG_SEQUENCE_START) !== 0) parameters.sequence_start = true;
    if ((this.flags & REQUEST_FLAG_SEQUENCE_END) !== 0) parameters.sequence_end = true;
    if (this.timeoutMicroseconds > 0) parameters.timeout = this.timeoutMicroseconds;
    const call: BlsCall = {
      modelName: this.modelName,
      modelVersion: this.modelVersion,
      id: this.id,
      inputs: this.inputs,
      requestedOutputNames: this.requestedOutputNames,
      parameters,
    };
    for await (const r of rt.infer(call, options.signal)) {
      yield new InferenceResponse(r);
    }
  }
}

/** pb_utils.get_input_tensor_by_name. */
export function getInputTensorByName(request: InferenceRequest, name: string): Tensor | undefined {
  return request.input(name);
}
