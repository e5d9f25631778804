/**
 * The core's trace points, so the request path only asks "is there a trace?": a request's
 * start (REQUEST_START, QUEUE_START, its inputs at level TENSORS), a response (its outputs) and the end
 * (REQUEST_END, release). The points that read a request's statistics record (its compute timestamps, its
 * start on admission) are stats/record-trace.ts: stats/ sits above trace/ (a record carries its trace).
 */
import type { Tensor } from '../../common/tensor.js';
import type { InferenceTrace } from './types.js';

export function traceRequestStart(
  trace: InferenceTrace,
  model: string,
  version: number,
  requestId: string,
  requestStart: bigint,
  queueStart: bigint,
  inputs: readonly Tensor[],
): void {
  trace.setModel(model, version, requestId);
  trace.report('REQUEST_START', requestStart);
  trace.report('QUEUE_START', queueStart);
  if (trace.wantsTensors) for (const t of inputs) trace.tensor('TENSOR_QUEUE_INPUT', t);
}

/** A response's outputs at level TENSORS (INFER_RESPONSE_COMPLETE is the frontend's, as in Triton). */
export function traceResponse(trace: InferenceTrace, outputs: readonly Tensor[]): void {
  if (trace.wantsTensors) for (const t of outputs) trace.tensor('TENSOR_BACKEND_OUTPUT', t);
}

/** REQUEST_END (after the requests it spawned have ended), after which the core lets go of the trace. */
export function traceRequestEnd(trace: InferenceTrace, at: bigint): void {
  trace.end(at);
}

/** A request refused before it was queued (validation): it starts and ends at once. */
export function traceRefused(
  trace: InferenceTrace,
  model: string,
  version: number,
  request: { readonly id?: string },
  requestStart: bigint,
): void {
  trace.setModel(model, version, request.id ?? '');
  trace.report('REQUEST_START', requestStart);
  traceRequestEnd(trace, process.hrtime.bigint());
}
