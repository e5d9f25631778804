/**
 * One inference call, the way every frontend runs one — HTTP /infer and /generate, gRPC ModelInfer and
 * ModelStreamInfer, the OpenAI routes and the embedding API — in three steps:
 *
 *   1. resolveCall(api, model, version): the model's handle for this call (model-handle.ts), resolved once,
 *      after its on-demand load when there is one (the wait is the request's queue time). The caller
 *      releases the handle in a `finally` once the call is over.
 *   2. refuseDecoupled(handle, wording): a call that answers once refuses a decoupled model, in its
 *      protocol's own words, as soon as the handle is known (before the request is read or traced).
 *   3. runCall / streamCall(handle, request, call): the request the frontend decoded, with the call's
 *      context (its cancel signal, trace, timings and forwarded headers), run on the handle: a unary call's
 *      one response, or every response as it comes.
 *
 * The facts a frontend needs on the way (ready, decoupled, the version resolved, metadata) are the
 * handle's, settled when it was resolved; nothing here asks the repository again.
 *
 * Performance rules of the request path, which every step above keeps (this is every request's path; each
 * rule was measured with bench/http-frontend-cpu.ts, see bench/README.md):
 *   - One object shape for every request: callRequest() builds the core's InferenceRequest as one object
 *     literal with every member written out (absent ones undefined). Spreads of optional members, or
 *     members added in place later, give V8 a different shape per mix of members: the core's property reads
 *     go megamorphic and each spread takes V8's object-clone slow path (it cost more than a whole gRPC
 *     decode). A frontend's decoded request is likewise one literal of its own (DecodedRequest).
 *   - No extra microtask turn: nothing on the way is an `async` function or an `await` that the request does
 *     not need. resolveCall() answers synchronously unless the model is loading; runCall() and streamCall()
 *     return the handle's own promise and stream; a frontend awaits only what really waits (its body, the
 *     response) and skips awaits it can tell are not needed (an uncompressed body, a decode done inline).
 *   - Iterate a response stream by hand (next() in a loop) where for-await's protocol (a return() on exit, a
 *     promise per step) would cost more than the request's own bookkeeping (model-handle.ts infer()).
 */
import type { ResolvedModel } from './model-handle.js';
import type { InferenceServerApi } from './server-api.js';
import type { RequestTrace } from './trace/types.js';
import type { InferenceRequest, InferenceResponse, Parameters, RequestTimings } from './types.js';

/** The request a frontend decoded from its wire: the model, the tensors and parameters, nothing of the call. */
export type DecodedRequest = Pick<
  InferenceRequest,
  'modelName' | 'modelVersion' | 'id' | 'inputs' | 'outputs' | 'parameters'
>;

/** What the call adds to the request it carries. Every member is given (undefined when it has none). */
export interface CallContext {
  /** Aborted when the client goes away or cancels the call. */
  readonly signal: AbortSignal | undefined;
  /** The frontend's trace of the exchange, when it was sampled (the core gets its `inference` part). */
  readonly trace: RequestTrace | undefined;
  /** Filled in by the core when the request ends (the access log is on). */
  readonly timings: RequestTimings | undefined;
  /** Headers or metadata forwarded as request parameters (forwardedParameters). */
  readonly forwarded: Readonly<Record<string, string>> | undefined;
}

/**
 * The model's handle for one call: now, or once its on-demand load is done (the promise rejects with why it
 * cannot be). Throws (or rejects with) NOT_FOUND / UNAVAILABLE as an inference request would.
 */
export function resolveCall(
  api: InferenceServerApi,
  model: string,
  version: string | undefined,
): ResolvedModel | Promise<ResolvedModel> {
  const wait = api.whenServable?.(model, version);
  if (wait === undefined) return api.resolveModel(model, version);
  return wait.then((since) => api.resolveModel(model, version, since));
}

export { refuseDecoupled } from './model-handle.js';

/**
 * Request parameters with forwarded headers added (--http/grpc-header-forward-pattern): a header wins over
 * a body parameter of its name. A new object only when something is forwarded.
 */
export function forwardedParameters(
  parameters: Readonly<Parameters> | undefined,
  forwarded: Readonly<Record<string, string>> | undefined,
): Readonly<Parameters> | undefined {
  return forwarded === undefined ? parameters : { ...parameters, ...forwarded };
}

/** The core's request for one call: `request` with the call's context, one literal (see above). */
export function callRequest(request: DecodedRequest, call: CallContext): InferenceRequest {
  return {
    modelName: request.modelName,
    modelVersion: request.modelVersion,
    id: request.id,
    inputs: request.inputs,
    outputs: request.outputs,
    parameters: forwardedParameters(request.parameters, call.forwarded),
    signal: call.signal,
    trace: call.trace?.inference,
    parentTrace: undefined,
    callerModel: undefined,
    timings: call.timings,
  };
}

/** Runs a unary call: its one (final) response. A decoupled model is refused by the handle (UNSUPPORTED). */
export function runCall(
  handle: ResolvedModel,
  request: DecodedRequest,
  call: CallContext,
): Promise<InferenceResponse> {
  return handle.infer(callRequest(request, call));
}

/**
 * Runs a streaming call: 0..n responses, the last final. Validation errors are thrown here (nothing was
 * accepted) or reject the first next().
 */
export function streamCall(
  handle: ResolvedModel,
  request: DecodedRequest,
  call: CallContext,
): AsyncIterable<InferenceResponse> {
  return handle.stream(callRequest(request, call));
}
