/**
 * The control protocol between the host and a Python stub, written down once on this side (its Python
 * twin is python/nereid_stub/messages.py; protocol.test.ts sends every message type through both): the
 * message types and the shape of the JSON header each carries, with readable field names. Tensor bytes
 * never travel in these headers; a tensor descriptor says where its bytes are — inline in the frame's
 * blob, or in one of the instance's two /dev/shm files. Messages from the stub come from a process running
 * user code: whoever reads one checks each field before relying on it (tensors.ts the descriptors).
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

// --- the pieces messages are made of ----------------------------------------------------------------------

/** Where a tensor's bytes are: in the frame's blob, or in the sender's /dev/shm file. */
export interface WireTensor {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** true: `offset` is in the sender's /dev/shm file; false: in the frame's blob. */
  readonly in_shm: boolean;
  readonly offset: number;
  readonly byte_size: number;
}

export interface WireError {
  /** TRITONSERVER_Error_Code (see CODES below) */
  readonly code: number;
  readonly message: string;
  /** The model answered with this error (an InferenceResponse carrying a TritonError). */
  readonly from_model?: boolean;
  /** What a decoupled `async def execute` raised after it returned (messages.ErrorInfo). */
  readonly info?: unknown;
}

/** One request of an EXECUTE batch. */
export interface WireRequest {
  /** The request's number on this stub (responses, cancellations and reschedules name it). */
  readonly rid: number;
  readonly request_id: string;
  /** As text; `correlation_is_string` false = an unsigned integer. */
  readonly correlation_id: string;
  readonly correlation_is_string: boolean;
  readonly flags: number;
  /** request.parameters() in Python: a JSON object as text. */
  readonly parameters: string;
  readonly requested_outputs: readonly string[];
  readonly inputs: readonly WireTensor[];
  /** Already cancelled when dispatched. */
  readonly cancelled?: boolean;
  /** The request is traced: a BLS call given its trace (`trace=request.trace()`) joins it. */
  readonly traced?: boolean;
  /** Its W3C trace context JSON (OpenTelemetry mode), what request.trace().get_context() returns. */
  readonly trace_context?: string;
}

/** One response of a request: in EXECUTE_DONE (default mode) or a RESPONSE message of its own. */
export interface WireResponse {
  readonly rid: number;
  /** The request's last response (TRITONSERVER_RESPONSE_COMPLETE_FINAL). */
  readonly final: boolean;
  readonly outputs?: readonly WireTensor[];
  /** Response parameters as a JSON object text. */
  readonly parameters?: string;
  readonly error?: WireError;
  /** Outputs the model returned that its config does not declare (pruned by the stub; output-check.ts). */
  readonly undeclared?: readonly unknown[];
}

// --- host -> stub -----------------------------------------------------------------------------------------

/** A Python-based backend's folder, imported by the stub as a package of this name (model_path its script). */
export interface BackendPackage {
  readonly name: string;
  readonly dir: string;
}

export interface InitMessage {
  /** The instance name. */
  readonly name: string;
  readonly model_path: string;
  readonly backend_package?: BackendPackage;
  readonly decoupled: boolean;
  /** Tensors of at least this many bytes go through /dev/shm. */
  readonly shm_threshold: number;
  readonly shm_initial: number;
  readonly shm_growth: number;
  /** initialize(args): Triton's keys, all strings. */
  readonly args: Readonly<Record<string, string>>;
}

export interface AutoCompleteMessage {
  readonly name: string;
  readonly model_path: string;
  readonly backend_package?: BackendPackage;
  /** With backend_package: the model's folder and the version being loaded (get_model_dir()). */
  readonly args?: { readonly model_repository: string; readonly model_version: string };
  /** The model config as JSON text. */
  readonly config: string;
}

export interface ExecuteMessage {
  /** The batch number EXECUTE_DONE answers with. */
  readonly batch: number;
  readonly requests: readonly WireRequest[];
}

export interface CancelMessage {
  readonly rid: number;
}

export interface BlsResponseMessage {
  readonly call: number;
  readonly final: boolean;
  readonly outputs?: readonly WireTensor[];
  readonly parameters?: string;
  readonly error?: WireError;
}

/** Ranges of the stub's /dev/shm file the host has read and the stub may reuse: [offset, size]. */
export interface FreeMessage {
  readonly ranges: readonly (readonly [number, number])[];
}

export type FinalizeMessage = Readonly<Record<string, never>>;

export interface ModelControlDoneMessage {
  readonly call: number;
  /** is_model_ready's answer. */
  readonly ready?: boolean;
  readonly error?: WireError;
}

export interface MetricsQueryMessage {
  readonly query: number;
}

// --- stub -> host -----------------------------------------------------------------------------------------

export interface HelloMessage {
  readonly pid: number;
  readonly python: string;
  readonly numpy: string;
}

export interface InitDoneMessage {
  /** initialize() raised: the formatted exception. */
  readonly error?: string;
  /** What it raised (messages.ErrorInfo): the host locates the user's frame (failures.ts). */
  readonly error_info?: unknown;
}

export interface AutoCompleteDoneMessage {
  /** The completed config as JSON text. */
  readonly config?: string;
  readonly error?: string;
}

export type ResponseMessage = WireResponse;

export interface ExecuteDoneMessage {
  readonly batch: number;
  /** The whole batch failed (execute raised, or returned something unusable). */
  readonly error?: string;
  /** What execute raised (messages.ErrorInfo): the host locates the user's frame (failures.ts). */
  readonly error_info?: unknown;
  /** Default-mode responses returned by execute. */
  readonly responses?: readonly WireResponse[];
  /** Requests the model rescheduled (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE), by rid. */
  readonly rescheduled?: readonly number[];
  /**
   * CLOCK_MONOTONIC in ns (the host's process.hrtime) when the stub began the batch and when it had its
   * answer ready: the statistics' compute phases, and how long the batch waited behind earlier ones.
   */
  readonly started?: number;
  readonly finished?: number;
}

export interface BlsRequestMessage {
  readonly call: number;
  readonly model_name: string;
  /** -1 = the default version. */
  readonly model_version: number;
  readonly request_id: string;
  readonly correlation_id: string;
  readonly correlation_is_string: boolean;
  readonly flags: number;
  /** Microseconds, 0 = none. */
  readonly timeout_us: number;
  readonly parameters: string;
  readonly requested_outputs: readonly string[];
  readonly inputs: readonly WireTensor[];
  /** The executing request (its rid) whose trace the call joins (`trace=request.trace()`). */
  readonly trace_rid?: number;
}

export interface BlsCancelMessage {
  readonly call: number;
}

export interface LogMessage {
  /** 0 info, 1 warning, 2 error, 3 verbose (pb_utils.Logger.LogLevel). */
  readonly level: number;
  readonly message: string;
  readonly file: string;
  readonly line: number;
}

export type FinalizeDoneMessage = Readonly<Record<string, never>>;

export interface FatalMessage {
  readonly message: string;
}

/** pb_utils.load_model / unload_model / is_model_ready. */
export interface ModelControlMessage {
  readonly call: number;
  readonly op: 'load' | 'unload' | 'ready';
  readonly model_name: string;
  /** load: the config override JSON ('' = none). */
  readonly config?: string;
  /** load: the `file:` overrides as [name, offset, size] in the frame's blob. */
  readonly files?: readonly (readonly [string, number, number])[];
  readonly unload_dependents?: boolean;
  /** ready: the version ('' = any). */
  readonly version?: string;
}

export interface MetricsMessage {
  readonly query: number;
  /** The model's metric families (metrics.ts reads them, checking every field). */
  readonly families: unknown;
}

/** What each message type carries: the one place the host's side of the protocol is written down. */
export interface Messages {
  [MessageType.Init]: InitMessage;
  [MessageType.AutoComplete]: AutoCompleteMessage;
  [MessageType.Execute]: ExecuteMessage;
  [MessageType.Cancel]: CancelMessage;
  [MessageType.BlsResponse]: BlsResponseMessage;
  [MessageType.Free]: FreeMessage;
  [MessageType.Finalize]: FinalizeMessage;
  [MessageType.ModelControlDone]: ModelControlDoneMessage;
  [MessageType.MetricsQuery]: MetricsQueryMessage;
  [MessageType.Hello]: HelloMessage;
  [MessageType.InitDone]: InitDoneMessage;
  [MessageType.AutoCompleteDone]: AutoCompleteDoneMessage;
  [MessageType.Response]: ResponseMessage;
  [MessageType.ExecuteDone]: ExecuteDoneMessage;
  [MessageType.BlsRequest]: BlsRequestMessage;
  [MessageType.BlsCancel]: BlsCancelMessage;
  [MessageType.Log]: LogMessage;
  [MessageType.FinalizeDone]: FinalizeDoneMessage;
  [MessageType.Fatal]: FatalMessage;
  [MessageType.ModelControl]: ModelControlMessage;
  [MessageType.Metrics]: MetricsMessage;
}

export type HostMessageType =
  | typeof MessageType.Init
  | typeof MessageType.AutoComplete
  | typeof MessageType.Execute
  | typeof MessageType.Cancel
  | typeof MessageType.BlsResponse
  | typeof MessageType.Free
  | typeof MessageType.Finalize
  | typeof MessageType.ModelControlDone
  | typeof MessageType.MetricsQuery;

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
