/**
 * What the tracing parts say to each other. The core reports to an InferenceTrace (Triton's
 * TRITONSERVER_InferenceTrace: one per request, children for ensemble steps and BLS calls); a frontend
 * holds a RequestTrace (Triton's TraceManager::Trace) for the whole exchange, adds its own timestamps
 * (HTTP_RECV_START, GRPC_SEND_END, ...) and ends it when the reply is out. Timestamps are
 * process.hrtime.bigint() values: one monotonic nanosecond clock (CLOCK_MONOTONIC on Linux, as Triton's
 * steady_clock).
 */
import type { Tensor } from '../../common/tensor.js';

/** A trace settings update (the trace extension's form); `null` clears a model's key back to the global value. */
export type TraceSettingsUpdate = Record<string, string | string[] | null>;

/** Triton's activity names (TRITONSERVER_InferenceTraceActivityString). */
export type TraceActivity =
  | 'REQUEST_START'
  | 'QUEUE_START'
  | 'COMPUTE_START'
  | 'COMPUTE_INPUT_END'
  | 'COMPUTE_OUTPUT_START'
  | 'COMPUTE_END'
  | 'INFER_RESPONSE_COMPLETE'
  | 'REQUEST_END';

export type TensorActivity = 'TENSOR_QUEUE_INPUT' | 'TENSOR_BACKEND_INPUT' | 'TENSOR_BACKEND_OUTPUT';

/** One request's trace as the core sees it. */
export interface InferenceTrace {
  /** Triton's trace id (a per-server counter from 1). */
  readonly id: number;
  /** The id of the trace that spawned this one (ensemble, BLS); 0 for a root. */
  readonly parentId: number;
  /** Tensors are wanted (level TENSORS): lets the core skip formatting them otherwise. */
  readonly wantsTensors: boolean;
  /** The model the request runs on; reported with REQUEST_START (`requestId` '' = none). */
  setModel(name: string, version: number, requestId: string): void;
  report(activity: TraceActivity, ns: bigint): void;
  tensor(activity: TensorActivity, tensor: Tensor): void;
  /** A child trace for a request this one causes (an ensemble step, a BLS call). */
  spawn(): InferenceTrace;
  /**
   * The request is over: REQUEST_END at `at` and release, or, while requests it spawned are still
   * running, once the last of them is released (then at that time).
   */
  end(at: bigint): void;
  /** The core is done with the trace without ending a request (it never started); later reports are dropped. */
  release(): void;
  /** W3C trace context of this trace (OpenTelemetry mode), for a Python model's `request.trace()`. */
  context(): string | undefined;
}

/** One sampled exchange as the frontend sees it. */
export interface RequestTrace {
  /** The trace the core gets in InferenceRequest.trace. */
  readonly inference: InferenceTrace;
  /** The id an access log line shows: Triton's trace id, or the OpenTelemetry trace id (hex). */
  readonly traceId: string;
  /** A frontend timestamp (HTTP_RECV_START, GRPC_SEND_END, ...); `ns` defaults to now. */
  capture(name: string, ns?: bigint): void;
  /**
   * The frontend is done; the trace is written once the core has released every part too. `status`: what
   * the client was answered — the HTTP status, or the gRPC status code (0 = OK).
   */
  end(status?: number): void;
}

/**
 * Where a request arrived, as the frontend saw it: what the OpenTelemetry mode writes on the request's
 * SERVER span in the semantic conventions' attributes (docs/tracing.md). Triton-mode traces ignore it.
 */
export type TraceEdge =
  | {
      readonly protocol: 'http';
      /** GET, POST, ... */
      readonly method: string;
      /** The path without the query string. */
      readonly path: string;
      /** The route's template, e.g. `/v2/models/{model_name}/infer`. */
      readonly route: string;
      readonly scheme: 'http' | 'https';
      /** '1.1', '2' */
      readonly protocolVersion: string;
      /** From the Host header, when it has one. */
      readonly serverAddress?: string;
      readonly serverPort?: number;
    }
  | {
      readonly protocol: 'grpc';
      /** The rpc's name in the service, e.g. `ModelInfer`. */
      readonly method: string;
      /** From :authority, when it has one. */
      readonly serverAddress?: string;
      readonly serverPort?: number;
    };

/**
 * The W3C trace-context headers of a request (HTTP headers or gRPC metadata), when it carries them, and
 * where it arrived.
 */
export interface TraceCarrier {
  readonly traceparent?: string;
  readonly tracestate?: string;
  /** Made only when a span is (OpenTelemetry mode, sampled): most requests are never traced. */
  readonly edge?: () => TraceEdge;
}

export function isInferenceTrace(x: unknown): x is InferenceTrace {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as InferenceTrace).spawn === 'function' &&
    typeof (x as InferenceTrace).report === 'function'
  );
}
