/**
 * The control protocol between the host and a Python stub, written down once on this side (its Python
 * twin is python/nereid_stub/messages.py; protocol.test.ts sends every message type through both): the
 * message types and the shape of the JSON header each carries, with readable field names. Tensor bytes
 * never travel in these headers; a tensor descriptor says where its bytes are — inline in the frame's
 * blob, or in one of the instance's two /dev/shm files. Messages from the stub come from a process running
 * user code: each stub->host header is read through its decoder near the end of this file (`decode`; the
 * binary EXECUTE_DONE through `decodeExecuteDone`, at the very end), which checks every field and gives
 * its reader a typed message; tensor descriptors are checked one by one where their bytes are read
 * (tensors.ts), so a bad one fails its own request while the others' /dev/shm ranges are still handed back.
 */
import type { DataType } from '../../common/datatype.js';
import { internal, type ErrorCode } from '../../common/errors.js';
import { isJsonObject, listOf, type RawJsonObject } from './frames.js';
import { parseMetricsReply, type StubFamily } from './metrics.js';

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
  Credit: 10,
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
  BlsCredit: 32,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

// --- the pieces messages are made of ----------------------------------------------------------------------

/** Where a tensor's bytes are: in the frame's blob, or in the sender's /dev/shm file. */
export interface StubTensor {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  /** true: `offset` is in the sender's /dev/shm file; false: in the frame's blob. */
  readonly in_shm: boolean;
  readonly offset: number;
  readonly byte_size: number;
}

export interface StubError {
  /** TRITONSERVER_Error_Code (see CODES below) */
  readonly code: number;
  readonly message: string;
  /** The model answered with this error (an InferenceResponse carrying a TritonError). */
  readonly from_model?: boolean;
  /** What a decoupled `async def execute` raised after it returned (messages.ErrorInfo). */
  readonly info?: unknown;
}

/** One request of an EXECUTE batch. */
export interface StubRequest {
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
  readonly inputs: readonly StubTensor[];
  /** Already cancelled when dispatched. */
  readonly cancelled?: boolean;
  /** The request is traced: a BLS call given its trace (`trace=request.trace()`) joins it. */
  readonly traced?: boolean;
  /** Its W3C trace context JSON (OpenTelemetry mode), what request.trace().get_context() returns. */
  readonly trace_context?: string;
}

/** One response of a request: in EXECUTE_DONE (default mode) or a RESPONSE message of its own. */
export interface StubResponse {
  readonly rid: number;
  /** The request's last response (TRITONSERVER_RESPONSE_COMPLETE_FINAL). */
  readonly final: boolean;
  readonly outputs?: readonly StubTensor[];
  /** Response parameters as a JSON object text. */
  readonly parameters?: string;
  readonly error?: StubError;
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
  /**
   * Responses each request may send before the host grants more with CREDIT frames (per-request flow
   * control, credit.ts); absent or 0 = no limit (a default-mode model's one response).
   */
  readonly response_window?: number;
  /**
   * Responses past its credit a request may send from the stub's asyncio thread, which must not wait
   * (credit.ts RESPONSE_OVERDRAFT); absent = 0.
   */
  readonly response_overdraft?: number;
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
  readonly requests: readonly StubRequest[];
}

export interface CancelMessage {
  readonly rid: number;
}

export interface BlsResponseMessage {
  readonly call: number;
  readonly final: boolean;
  readonly outputs?: readonly StubTensor[];
  readonly parameters?: string;
  readonly error?: StubError;
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
  readonly error?: StubError;
}

export interface MetricsQueryMessage {
  readonly query: number;
}

/** The request may send `n` more responses (its client took that many: credit.ts). */
export interface CreditMessage {
  readonly rid: number;
  readonly n: number;
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

export type ResponseMessage = StubResponse;

export interface ExecuteDoneMessage {
  readonly batch: number;
  /** The whole batch failed (execute raised, or returned something unusable). */
  readonly error?: string;
  /** What execute raised (messages.ErrorInfo): the host locates the user's frame (failures.ts). */
  readonly error_info?: unknown;
  /** Default-mode responses returned by execute. */
  readonly responses?: readonly StubResponse[];
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
  readonly inputs: readonly StubTensor[];
  /** The executing request (its rid) whose trace the call joins (`trace=request.trace()`). */
  readonly trace_rid?: number;
  /**
   * BLS_RESPONSE frames the host may send ahead of what the call's iterator took; the stub grants more
   * with BLS_CREDIT frames (bls.ts). Absent or 0 = no limit.
   */
  readonly window?: number;
}

export interface BlsCancelMessage {
  readonly call: number;
}

/** The BLS call's iterator took `n` more responses: the host may send that many more (bls.ts). */
export interface BlsCreditMessage {
  readonly call: number;
  readonly n: number;
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
  [MessageType.Credit]: CreditMessage;
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
  [MessageType.BlsCredit]: BlsCreditMessage;
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
  | typeof MessageType.MetricsQuery
  | typeof MessageType.Credit;

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

// --- stub -> host, as the host reads it ----------------------------------------------------------------------
//
// What each reader may rely on once the header passed its decoder. A field the stub got wrong becomes what
// the host does without it, written here once: an absent number is 0 (no request, batch or call has the
// number 0), an absent text '', a list that is not one is empty.

export type StubMessageType = Exclude<MessageType, HostMessageType>;
/** Stub->host types whose header is a fixed binary layout, not JSON (decoded by their own function). */
export type BinaryMessageType = typeof MessageType.ExecuteDone;
export type JsonStubMessageType = Exclude<StubMessageType, BinaryMessageType>;
/** What the host's FrameDecoder keeps as bytes. */
export const BINARY_HEADERS: ReadonlySet<number> = new Set([MessageType.ExecuteDone]);

const EMPTY: RawJsonObject = {};
const objectOf = (v: unknown): RawJsonObject => (isJsonObject(v) ? v : EMPTY);
const numberOr = (v: unknown, absent: number): number => (typeof v === 'number' ? v : absent);
const stringOr = (v: unknown, absent: string): string => (typeof v === 'string' ? v : absent);
/** A model's text the host prints: a string as it is, anything else as its JSON. */
const textOf = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** An error a response carries, as the host reports it. */
export interface ErrorIn {
  readonly code: ErrorCode;
  /** The model's text; when the stub sent no text, the whole error as JSON. */
  readonly message: string;
  readonly fromModel: boolean;
  /** What a decoupled `async def execute` raised (messages.ErrorInfo), checked by failures.ts. */
  readonly info: unknown;
}

export interface ResponseIn {
  /** 0 = none (then the response answers no request; its tensors are still read and given back). */
  readonly rid: number;
  readonly final: boolean;
  /** The tensor descriptors, checked one by one as they are read (tensors.ts). */
  readonly outputs: unknown;
  /** Response parameters as JSON object text ('' = none). */
  readonly parameters: string;
  readonly error: ErrorIn | undefined;
  readonly undeclared: readonly unknown[] | undefined;
}

export interface ExecuteDoneIn {
  readonly batch: number;
  /** The whole batch failed: the stub's text (undefined: execute returned). */
  readonly error: string | undefined;
  readonly errorInfo: unknown;
  readonly responses: readonly ResponseIn[];
  /** Rescheduled requests' rids (what is not a number is left out). */
  readonly rescheduled: readonly number[];
  /** CLOCK_MONOTONIC ns as the stub stamped them; undefined when it sent none. */
  readonly started: number | undefined;
  readonly finished: number | undefined;
}

export interface InitDoneIn {
  /** initialize() raised; `error` is its text when the stub sent one as text. */
  readonly failed: boolean;
  readonly error: string | undefined;
  readonly errorInfo: unknown;
}

export interface AutoCompleteDoneIn {
  /** The stub's error as text (JSON when it was not text); undefined: none. */
  readonly error: string | undefined;
  readonly config: string | undefined;
}

export interface BlsRequestIn {
  readonly call: number;
  readonly modelName: string;
  /** '' = the default version. */
  readonly modelVersion: string;
  readonly requestId: string;
  readonly correlationId: string;
  readonly correlationIsString: boolean;
  readonly flags: number;
  /** Microseconds, 0 = none. */
  readonly timeoutUs: number;
  /** A JSON object as text ('' = none). */
  readonly parameters: string;
  readonly requestedOutputs: readonly string[];
  /** Descriptors, checked where read (tensors.ts). */
  readonly inputs: unknown;
  /** The executing request whose trace the call joins (0 = none). */
  readonly traceRid: number;
  /** Responses the host may send ahead of the stub's grants (0 = no limit). */
  readonly window: number;
}

export interface ModelControlIn {
  readonly call: number;
  /** 'load' | 'unload' | 'ready' from a well-behaved stub; anything else is refused by its reader. */
  readonly op: string;
  readonly modelName: string;
  /** load: the config override JSON ('' = none). */
  readonly config: string;
  /** load: `file:` overrides, checked entry by entry against the blob (model-control.ts). */
  readonly files: readonly unknown[];
  readonly unloadDependents: boolean;
  /** ready: the version ('' = any). */
  readonly version: string;
}

export interface LogIn {
  readonly level: number;
  readonly message: string;
  readonly file: string;
  readonly line: number;
}

/** What each stub->host message is once decoded. */
export interface Incoming {
  [MessageType.Hello]: { readonly pid: number };
  [MessageType.InitDone]: InitDoneIn;
  [MessageType.AutoCompleteDone]: AutoCompleteDoneIn;
  [MessageType.Response]: ResponseIn;
  [MessageType.ExecuteDone]: ExecuteDoneIn;
  [MessageType.BlsRequest]: BlsRequestIn;
  [MessageType.BlsCancel]: { readonly call: number };
  [MessageType.Log]: LogIn;
  [MessageType.FinalizeDone]: Readonly<Record<string, never>>;
  [MessageType.Fatal]: { readonly message: string | undefined };
  [MessageType.ModelControl]: ModelControlIn;
  [MessageType.Metrics]: { readonly query: number; readonly families: StubFamily[] };
  [MessageType.BlsCredit]: { readonly call: number; readonly n: number };
}

function decodeError(v: unknown): ErrorIn {
  const e = objectOf(v);
  return {
    code: errorCodeOf(e.code),
    message: typeof e.message === 'string' ? e.message : JSON.stringify(v),
    fromModel: e.from_model === true,
    info: e.info,
  };
}

function decodeResponse(v: unknown): ResponseIn {
  const h = objectOf(v);
  return {
    rid: numberOr(h.rid, 0),
    final: h.final === true,
    outputs: h.outputs,
    parameters: stringOr(h.parameters, ''),
    error: h.error === undefined ? undefined : decodeError(h.error),
    undeclared: Array.isArray(h.undeclared) ? listOf(h.undeclared) : undefined,
  };
}

function decodeBlsRequest(h: RawJsonObject): BlsRequestIn {
  const version = h.model_version;
  return {
    call: numberOr(h.call, 0),
    modelName: String(h.model_name),
    modelVersion: typeof version === 'number' && version >= 0 ? String(version) : '',
    requestId: stringOr(h.request_id, ''),
    correlationId: String(h.correlation_id),
    correlationIsString: h.correlation_is_string === true,
    flags: Number(h.flags) | 0,
    timeoutUs: typeof h.timeout_us === 'number' && h.timeout_us > 0 ? h.timeout_us : 0,
    parameters: stringOr(h.parameters, ''),
    requestedOutputs: listOf(h.requested_outputs).map(String),
    inputs: h.inputs,
    traceRid: numberOr(h.trace_rid, 0),
    window: typeof h.window === 'number' && h.window > 0 ? Math.floor(h.window) : 0,
  };
}

function decodeModelControl(h: RawJsonObject): ModelControlIn {
  return {
    call: numberOr(h.call, 0),
    op: String(h.op),
    modelName: stringOr(h.model_name, ''),
    config: stringOr(h.config, ''),
    files: listOf(h.files),
    unloadDependents: h.unload_dependents === true,
    version: stringOr(h.version, ''),
  };
}

/** The decoder of each JSON stub->host message type: the one place their headers are read. */
export const decode: { readonly [T in JsonStubMessageType]: (header: RawJsonObject) => Incoming[T] } = {
  [MessageType.Hello]: (h) => ({ pid: numberOr(h.pid, 0) }),
  [MessageType.InitDone]: (h) => ({
    failed: h.error !== undefined,
    error: typeof h.error === 'string' ? h.error : undefined,
    errorInfo: h.error_info,
  }),
  [MessageType.AutoCompleteDone]: (h) => ({
    error: h.error === undefined ? undefined : textOf(h.error),
    config: typeof h.config === 'string' ? h.config : undefined,
  }),
  [MessageType.Response]: decodeResponse,
  [MessageType.BlsRequest]: decodeBlsRequest,
  [MessageType.BlsCancel]: (h) => ({ call: numberOr(h.call, 0) }),
  [MessageType.Log]: (h) => ({
    level: numberOr(h.level, 0),
    message: String(h.message),
    file: stringOr(h.file, ''),
    line: numberOr(h.line, 0),
  }),
  [MessageType.FinalizeDone]: () => ({}),
  [MessageType.Fatal]: (h) => ({ message: typeof h.message === 'string' ? h.message : undefined }),
  [MessageType.ModelControl]: decodeModelControl,
  [MessageType.Metrics]: (h) => ({ query: numberOr(h.query, 0), families: parseMetricsReply(h) }),
  [MessageType.BlsCredit]: (h) => ({
    call: numberOr(h.call, 0),
    n: typeof h.n === 'number' && h.n > 0 ? Math.floor(h.n) : 0,
  }),
};

// --- EXECUTE_DONE: a fixed binary layout --------------------------------------------------------------------
//
// The one stub->host message of every default-mode request, so its header is not JSON (python/nereid_stub/
// messages.py execute_done() writes it). Little-endian throughout:
//
//   u32 batch | f64 started | f64 finished (NaN: not stamped) | u32 responses | u32 rescheduled | u32 tail bytes
//   u32 rid × rescheduled
//   tail: a JSON object {error?, error_info?} (the whole batch failed) or nothing
//   responses, each: u8 kind
//     kind 0 (outputs): u32 rid | u8 flags (1 final, 2 parameters, 4 undeclared) | u16 outputs | each output:
//       u16 name bytes | name (UTF-8) | u8 datatype bytes | datatype | u8 dims | f64 × dims
//       | u8 in_shm | f64 offset | f64 byte_size
//       then by its flags: u32 bytes + the parameters' JSON object text; u32 bytes + undeclared's JSON list
//     kind 1 (a response carrying an error): u32 bytes | a StubResponse as JSON
//
// The stub runs user code, so a header that ends early or says more than it holds is a clear error (the
// stub is stopped, protocol error), never a read past the header.

const KIND_OUTPUTS = 0;
const KIND_JSON = 1;
const FLAG_FINAL = 1;
const FLAG_PARAMETERS = 2;
const FLAG_UNDECLARED = 4;

/** Bounds-checked little-endian reads over one header. */
class HeadReader {
  private pos = 0;
  constructor(private readonly b: Buffer) {}

  private need(n: number): number {
    const at = this.pos;
    if (at + n > this.b.length)
      throw internal('malformed EXECUTE_DONE from the Python stub: header truncated');
    this.pos = at + n;
    return at;
  }
  u8(): number {
    return this.b[this.need(1)];
  }
  u16(): number {
    return this.b.readUInt16LE(this.need(2));
  }
  u32(): number {
    return this.b.readUInt32LE(this.need(4));
  }
  f64(): number {
    return this.b.readDoubleLE(this.need(8));
  }
  utf8(n: number): string {
    const at = this.need(n);
    return this.b.toString('utf8', at, at + n);
  }
  latin1(n: number): string {
    const at = this.need(n);
    return this.b.toString('latin1', at, at + n);
  }
  json(n: number): unknown {
    const text = this.utf8(n);
    try {
      return JSON.parse(text);
    } catch {
      throw internal('malformed EXECUTE_DONE from the Python stub: an entry is not JSON');
    }
  }
  get done(): boolean {
    return this.pos === this.b.length;
  }
}

/** An output's descriptor as the stub wrote it; tensors.ts checks it (its datatype too) where it is read. */
interface WireTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly in_shm: boolean;
  readonly offset: number;
  readonly byte_size: number;
}

function readDescriptor(r: HeadReader): WireTensor {
  const name = r.utf8(r.u16());
  const datatype = r.latin1(r.u8());
  const dims = r.u8();
  const shape: number[] = [];
  for (let i = 0; i < dims; i++) shape.push(r.f64());
  const inShm = r.u8() !== 0;
  const offset = r.f64();
  return { name, datatype, shape, in_shm: inShm, offset, byte_size: r.f64() };
}

function readResponse(r: HeadReader): ResponseIn {
  const kind = r.u8();
  if (kind === KIND_JSON) return decodeResponse(r.json(r.u32()));
  if (kind !== KIND_OUTPUTS)
    throw internal(`malformed EXECUTE_DONE from the Python stub: response kind ${kind}`);
  const rid = r.u32();
  const flags = r.u8();
  const n = r.u16();
  const outputs: WireTensor[] = [];
  for (let i = 0; i < n; i++) outputs.push(readDescriptor(r));
  const parameters = (flags & FLAG_PARAMETERS) !== 0 ? r.utf8(r.u32()) : '';
  const undeclared = (flags & FLAG_UNDECLARED) !== 0 ? listOf(r.json(r.u32())) : undefined;
  return { rid, final: (flags & FLAG_FINAL) !== 0, outputs, parameters, error: undefined, undeclared };
}

/** Decodes an EXECUTE_DONE header (its binary layout above); throws on a malformed one. */
export function decodeExecuteDone(head: Buffer): ExecuteDoneIn {
  const r = new HeadReader(head);
  const batch = r.u32();
  const started = r.f64();
  const finished = r.f64();
  const count = r.u32();
  const rescheduledCount = r.u32();
  const tailBytes = r.u32();
  const rescheduled: number[] = [];
  for (let i = 0; i < rescheduledCount; i++) rescheduled.push(r.u32());
  const tail = tailBytes === 0 ? EMPTY : objectOf(r.json(tailBytes));
  const responses: ResponseIn[] = [];
  for (let i = 0; i < count; i++) responses.push(readResponse(r));
  if (!r.done) throw internal('malformed EXECUTE_DONE from the Python stub: bytes after the last response');
  return {
    batch,
    error: tail.error === undefined ? undefined : textOf(tail.error),
    errorInfo: tail.error_info,
    responses,
    rescheduled,
    started: Number.isFinite(started) ? started : undefined,
    finished: Number.isFinite(finished) ? finished : undefined,
  };
}

/**
 * Writes an EXECUTE_DONE header in the layout above, from the fields its JSON shape names (ExecuteDoneMessage).
 * The host never sends one: this is the layout written out once on this side, for the tests that check
 * the decoder and the stub's encoder against it.
 */
export function encodeExecuteDone(m: ExecuteDoneMessage): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number): Buffer => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  const sized = (text: string): Buffer => {
    const b = Buffer.from(text, 'utf8');
    return Buffer.concat([u32(b.length), b]);
  };
  const responses = m.responses ?? [];
  const rescheduled = m.rescheduled ?? [];
  const tail =
    m.error === undefined && m.error_info === undefined
      ? Buffer.alloc(0)
      : Buffer.from(JSON.stringify({ error: m.error, error_info: m.error_info }), 'utf8');
  const head = Buffer.alloc(32);
  head.writeUInt32LE(m.batch, 0);
  head.writeDoubleLE(m.started ?? NaN, 4);
  head.writeDoubleLE(m.finished ?? NaN, 12);
  head.writeUInt32LE(responses.length, 20);
  head.writeUInt32LE(rescheduled.length, 24);
  head.writeUInt32LE(tail.length, 28);
  parts.push(head, ...rescheduled.map(u32), tail);
  for (const r of responses) {
    if (r.error !== undefined) {
      parts.push(Buffer.from([KIND_JSON]), sized(JSON.stringify(r)));
      continue;
    }
    const outputs = r.outputs ?? [];
    const parameters = r.parameters !== undefined && r.parameters !== '' && r.parameters !== '{}';
    const undeclared = r.undeclared !== undefined && r.undeclared.length > 0;
    const entry = Buffer.alloc(8);
    entry.writeUInt8(KIND_OUTPUTS, 0);
    entry.writeUInt32LE(r.rid, 1);
    entry.writeUInt8(
      (r.final ? FLAG_FINAL : 0) | (parameters ? FLAG_PARAMETERS : 0) | (undeclared ? FLAG_UNDECLARED : 0),
      5,
    );
    entry.writeUInt16LE(outputs.length, 6);
    parts.push(entry);
    for (const t of outputs) {
      const name = Buffer.from(t.name, 'utf8');
      const fixed = Buffer.alloc(2);
      fixed.writeUInt16LE(name.length);
      const dims = Buffer.alloc(1 + 8 * t.shape.length);
      dims.writeUInt8(t.shape.length, 0);
      t.shape.forEach((d, i) => dims.writeDoubleLE(d, 1 + 8 * i));
      const where = Buffer.alloc(17);
      where.writeUInt8(t.in_shm ? 1 : 0, 0);
      where.writeDoubleLE(t.offset, 1);
      where.writeDoubleLE(t.byte_size, 9);
      parts.push(
        fixed,
        name,
        Buffer.from([t.datatype.length]),
        Buffer.from(t.datatype, 'latin1'),
        dims,
        where,
      );
    }
    if (parameters) parts.push(sized(r.parameters ?? ''));
    if (undeclared) parts.push(sized(JSON.stringify(r.undeclared)));
  }
  return Buffer.concat(parts);
}
