/**
 * The unary ModelInfer rpc: decode with the hand-written codec, refuse decoupled models with Triton's
 * message, run the request with the call's AbortSignal, encode the one response.
 */
import {
  refuseDecoupled,
  resolveCall,
  runCall,
  type InferenceServerApi,
  type RequestTimings,
  type RequestTrace,
  type TraceCarrier,
} from '../../core/index.js';
import { modelForVariant } from '../model-variant.js';
import { parseInferRequest, toInferenceRequest } from './infer-request.js';
import { encodeInferResponse } from './infer-response.js';

export const DECOUPLED_UNARY_MESSAGE =
  "ModelInfer RPC doesn't support models with decoupled transaction policy";

export interface InferContext {
  /** Set once the request id is known, for error logs. */
  requestId?: string;
  /** The request's trace, when sampled: the caller adds the send timestamps and ends it. */
  trace?: RequestTrace;
  /** Set when the access log is on: the core fills it in. */
  timings?: RequestTimings;
  model?: string;
  version?: string;
}

/** Handles one ModelInfer message; returns the framed response as pieces. */
export async function modelInfer(
  api: InferenceServerApi,
  message: Buffer,
  signal: AbortSignal,
  ctx: InferContext,
  forwarded?: Readonly<Record<string, string>>,
  carrier?: TraceCarrier,
  /** The call's `nereid-model-variant` metadata: the request goes to `<model>.<variant>`. */
  variant?: string,
): Promise<Buffer[]> {
  const wire = parseInferRequest(message);
  if (variant !== undefined) wire.modelName = modelForVariant(wire.modelName, variant);
  ctx.requestId = wire.id;
  ctx.model = wire.modelName;
  ctx.version = wire.modelVersion;
  const trace = api.startTrace?.(wire.modelName, carrier);
  if (trace) ctx.trace = trace;
  // One lookup for the whole request: the handle holds the version it resolved until released.
  const resolved = resolveCall(api, wire.modelName, wire.modelVersion === '' ? undefined : wire.modelVersion);
  const model = resolved instanceof Promise ? await resolved : resolved;
  ctx.version = model.version;
  try {
    refuseDecoupled(model, DECOUPLED_UNARY_MESSAGE);
    const { request } = toInferenceRequest(wire);
    const response = await runCall(model, request, { signal, trace, timings: ctx.timings, forwarded });
    return encodeInferResponse(response);
  } finally {
    model.release();
  }
}
