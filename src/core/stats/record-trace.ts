/**
 * Where a request's statistics record and its trace meet: the trace points that read the record (an
 * execution's compute timestamps: when an instance took it, plus the phases the backend reported) or fill
 * it on admission. Here, not in trace/report.ts, so the dependency points one way: stats/ → trace/.
 */
import type { Tensor } from '../../common/tensor.js';
import { traceRequestStart } from '../trace/report.js';
import type { InferenceTrace } from '../trace/types.js';
import type { RequestRecord } from './request-record.js';

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
