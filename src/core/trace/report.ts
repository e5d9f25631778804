/**
 * The core's trace points, in one place, so the request path only asks "is there a trace?": a request's
 * start (REQUEST_START, QUEUE_START, its inputs at level TENSORS), a response (its outputs), an execution's compute timestamps (from the statistics record: when an
 * instance took it, plus the phases the backend reported), and the end (REQUEST_END, release).
 */
import type { Tensor } from '../../common/tensor.js';
import type { RequestRecord } from '../stats/request-record.js';
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

/** COMPUTE_* of one request from its execution: `start`..`end` and the phases the backend reported. */
export function traceCompute(trace: InferenceTrace, record: RequestRecord, start: bigint, end: bigint): void {
  const clamp = (t: bigint): bigint => (t < start ? start : t > end ? end : t);
  const timing = record.timing;
  let inputEnd: bigint;
  let outputStart: bigint;
  if (timing) {
    inputEnd = clamp(start + BigInt(Math.round(timing.computeInputNs)));
    outputStart = clamp(inputEnd + BigInt(Math.round(timing.computeInferNs)));
  } else {
    // Without reported phases: the core's own output handling is the output phase.
    inputEnd = start;
    const close = record.ended && record.end < end ? record.end : end;
    outputStart = clamp(close - BigInt(Math.round(record.outputNs)));
  }
  trace.report('COMPUTE_START', start);
  trace.report('COMPUTE_INPUT_END', inputEnd);
  trace.report('COMPUTE_OUTPUT_START', outputStart);
  trace.report('COMPUTE_END', end);
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

/**
 * What a model version does for a request it has just admitted (model-version.ts and ensemble-version.ts
 * alike): the frontend's timings and the request's trace go on its statistics record, and the trace gets its
 * REQUEST_START and QUEUE_START.
 */
export function recordRequestStart(
  record: RequestRecord,
  request: {
    readonly id?: string;
    readonly trace?: InferenceTrace;
    readonly timings?: RequestRecord['timings'];
    readonly inputs: readonly Tensor[];
  },
  model: string,
  version: number,
  requestStart: bigint,
): void {
  if (request.timings) record.timings = request.timings;
  if (request.trace) {
    record.trace = request.trace;
    traceRequestStart(
      request.trace,
      model,
      version,
      request.id ?? '',
      requestStart,
      record.queueStart,
      request.inputs,
    );
  }
}
