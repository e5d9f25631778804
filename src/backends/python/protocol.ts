/**
 * The control protocol between the host and a Python stub (python/nereid_stub/frames.py is the other
 * half): message types and the JSON headers they carry. Tensor bytes never travel in these headers; a
 * tensor descriptor says where its bytes are — inline in the frame's blob, or in one of the instance's two
 * /dev/shm files.
 */
import type { DataType } from '../../common/datatype.js';
import type { ErrorCode } from '../../common/errors.js';

export const MessageType = {
  // host -> stub
  Init: 1,
  AutoComplete: 2,
  Execute: 3,
  Cancel: 4,
  BlsResponse: 5,
  Free: 6,
  Finalize: 7,
  ModelControlDone: 8,
  MetricsQuery: 9,
  // stub -> host
  Hello: 20,
  InitDone: 21,
  AutoCompleteDone: 22,
  Response: 23,
  ExecuteDone: 24,
  BlsRequest: 25,
  BlsCancel: 26,
  Log: 27,
  FinalizeDone: 28,
  Fatal: 29,
  ModelControl: 30,
  Metrics: 31,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** Where a tensor's bytes are: 0 = the frame's blob, 1 = the sender's /dev/shm file. */
export type TensorLocation = 0 | 1;

export interface WireTensor {
  /** name */
  readonly n: string;
  /** datatype */
  readonly d: DataType;
  /** shape */
  readonly s: readonly number[];
  readonly k: TensorLocation;
  /** offset in the blob or the file */
  readonly o: number;
  /** byte size */
  readonly z: number;
}

export interface WireError {
  /** TRITONSERVER_Error_Code */
  readonly c: number;
  readonly m: string;
  /** 1: the model answered with this error (an InferenceResponse carrying a TritonError) */
  readonly a?: 1;
}

export interface WireRequest {
  /** request id on this stub */
  readonly i: number;
  readonly id: string;
  /** correlation id, as text; `ct` 1 = a string id, 0 = an unsigned integer */
  readonly c: string;
  readonly ct: 0 | 1;
  readonly fl: number;
  /** request parameters as a JSON object text (request.parameters() in Python) */
  readonly p: string;
  /** requested output names */
  readonly o: readonly string[];
  readonly t: readonly WireTensor[];
  /** already cancelled when dispatched */
  readonly x?: 1;
  /** 1: the request is traced (a BLS call may name it in BlsRequestHeader.tr) */
  readonly tr?: 1;
  /** its trace context (OpenTelemetry mode), what request.trace().get_context() returns */
  readonly tx?: string;
}

export interface WireResponse {
  readonly i: number;
  readonly f: boolean;
  readonly t?: readonly WireTensor[];
  readonly p?: string;
  readonly e?: WireError;
}

export interface ExecuteDoneHeader {
  readonly b: number;
  /** the whole batch failed (execute raised, or returned something unusable) */
  readonly e?: string;
  /** default-mode responses returned by execute */
  readonly rs?: readonly WireResponse[];
  /** requests the model rescheduled (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE) */
  readonly rr?: readonly number[];
}

export interface BlsRequestHeader {
  readonly q: number;
  readonly m: string;
  /** model version, -1 = the default */
  readonly v: number;
  readonly id: string;
  readonly c: string;
  readonly ct: 0 | 1;
  readonly fl: number;
  /** timeout in microseconds, 0 = none */
  readonly to: number;
  readonly p: string;
  readonly o: readonly string[];
  readonly t: readonly WireTensor[];
  /** the stub's request id whose trace the call joins (`trace=request.trace()`) */
  readonly tr?: number;
}

/** pb_utils.load_model / unload_model / is_model_ready. */
export interface ModelControlHeader {
  readonly q: number;
  readonly op: 'load' | 'unload' | 'ready';
  /** model name */
  readonly m: string;
  /** load: the config override JSON ('' = none) */
  readonly c?: string;
  /** load: the `file:` overrides as [name, offset, size] in the frame's blob */
  readonly f?: readonly (readonly [string, number, number])[];
  /** unload: unload_dependents */
  readonly d?: boolean;
  /** ready: the version ('' = any) */
  readonly v?: string;
}

export interface LogHeader {
  /** 0 info, 1 warning, 2 error, 3 verbose (pb_utils.Logger.LogLevel) */
  readonly l: number;
  readonly m: string;
  readonly f: string;
  readonly n: number;
}

/** Triton's TRITONSERVER_Error_Code numbering, as pb_utils.TritonError uses it. */
const CODES: readonly ErrorCode[] = [
  'UNKNOWN',
  'INTERNAL',
  'NOT_FOUND',
  'INVALID_ARG',
  'UNAVAILABLE',
  'UNSUPPORTED',
  'ALREADY_EXISTS',
  'CANCELLED',
];

export function errorCodeOf(code: unknown): ErrorCode {
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code < CODES.length
    ? CODES[code]
    : 'INTERNAL';
}

export function tritonErrorCode(code: ErrorCode): number {
  return CODES.indexOf(code);
}
