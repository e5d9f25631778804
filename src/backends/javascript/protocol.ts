/**
 * The messages between a JavaScript model instance (main thread) and its worker thread. Everything is
 * structured-cloneable. Tensor bytes travel as Uint8Arrays whose ArrayBuffer is either moved (in the
 * transfer list: the sender's copy is detached), or a SharedArrayBuffer (shared, never copied); see
 * tensors.ts for who copies what.
 */
import type { DataType } from '../../common/datatype.js';
import type { ErrorCode } from '../../common/errors.js';
import type { ParameterValue } from '../../backend-api/backend.js';
import type { MetricFamilySnapshot } from '../../sdk/metrics.js';
import type { ModelPhase } from '../model-errors.js';

export interface JsWireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

export interface WireError {
  code: ErrorCode;
  message: string;
  /** Where model code threw (logged by the main thread, never sent to clients). */
  stack?: string;
  /** The thrown error's class (`TypeError`); absent when it was not an Error. */
  name?: string;
  /** Which hook of the model threw (absent for errors the runtime made itself). */
  phase?: ModelPhase;
  /**
   * The model threw a NereidError: a code and message it chose for the client, sent as they are (like a
   * Python model's error response), and not logged as a failure.
   */
  chosen?: boolean;
  /** A TypeScript build error: where esbuild stopped (absolute paths; the main thread relativizes). */
  build?: { file: string; line: number; column: number; text: string };
}

export type JsWireParameters = Record<string, ParameterValue>;

/** Facts the model gets in initialize(args, context). */
export interface InstanceFacts {
  modelName: string;
  modelVersion: number;
  instanceName: string;
  instanceKind: 'CPU' | 'GPU' | 'MODEL';
  deviceId: number;
  modelDir: string;
  decoupled: boolean;
}

/** workerData of a model worker. */
export interface JsWorkerInit {
  /** 'instance': import, construct, initialize, then serve; 'autocomplete': run autoCompleteConfig and exit. */
  mode: 'instance' | 'autocomplete';
  /** The module file (absolute path). */
  modelPath: string;
  /** The model config as Triton's JSON. */
  configJson: string;
  /** Present in 'instance' mode. */
  facts?: InstanceFacts;
}

export interface WireRequest {
  rid: number;
  id: string;
  correlationId: bigint | string;
  flags: number;
  parameters: JsWireParameters;
  inputs: JsWireTensor[];
  outputs: string[];
  batchSize: number;
  cancelled: boolean;
}

export interface WireResponse {
  rid: number;
  outputs: JsWireTensor[];
  final: boolean;
  parameters?: JsWireParameters;
  error?: WireError;
  /** Outputs the model returned that its config does not declare (not sent; ../output-check.ts). */
  undeclared?: string[];
}

/** A BLS request from the model. */
export interface WireBlsRequest {
  modelName: string;
  modelVersion: string;
  id: string;
  inputs: JsWireTensor[];
  outputs: string[];
  parameters: JsWireParameters;
}

export interface WireBlsResult {
  outputs: JsWireTensor[];
  parameters: JsWireParameters;
  modelName: string;
  modelVersion: string;
  id: string;
  final: boolean;
}

/** Bytes that crossed the thread boundary, by how (see tensors.ts). */
export interface TransferCounters {
  /** Main → worker inputs copied once into a buffer that was then moved. */
  inputBytesCopied: number;
  /** Main → worker inputs in SharedArrayBuffers (no copy). */
  inputBytesShared: number;
  /** Worker → main outputs whose whole buffer was moved (no copy). */
  outputBytesMoved: number;
  /** Worker → main outputs that were views into a larger buffer and were copied out. */
  outputBytesCopied: number;
  /** Worker → main outputs in SharedArrayBuffers (no copy). */
  outputBytesShared: number;
}

/**
 * Non-final responses of one decoupled request the worker may have sent that the main thread has not yet
 * acknowledged ('taken'). The main thread acknowledges a response once the request's queue of undelivered
 * responses has room for it, so a model that awaits `sender.whenWritable()` stays at most this many
 * responses ahead of a slow reader (on top of that queue's own bound).
 */
export const RESPONSE_WINDOW = 16;

export type JsToWorker =
  | { kind: 'execute'; batch: number; requests: WireRequest[] }
  /** Responses of these requests (counts[i] for rids[i]) reached a response queue with room. */
  | { kind: 'taken'; rids: number[]; counts: number[] }
  | { kind: 'cancel'; rid: number }
  /** The main thread failed the request (its stream stalled): cancel it and close its sender. */
  | { kind: 'drop'; rid: number }
  | { kind: 'bls-result'; call: number; result: WireBlsResult }
  | { kind: 'bls-error'; call: number; error: WireError }
  | { kind: 'finalize' }
  | { kind: 'query'; q: number; what: 'ready' | 'metrics' | 'counters' };

export type QueryAnswer =
  | { what: 'ready'; ready: boolean }
  | { what: 'metrics'; families: MetricFamilySnapshot[] }
  | { what: 'counters'; counters: TransferCounters };

export type JsFromWorker =
  /** initialize() returned; `definesIsReady`: the model has an isReady() worth asking. */
  | { kind: 'ready'; definesIsReady: boolean }
  | { kind: 'init-error'; error: WireError }
  | { kind: 'autocompleted'; configJson: string | undefined }
  | { kind: 'response'; response: WireResponse }
  | { kind: 'executed'; batch: number; responses?: WireResponse[]; error?: WireError }
  | { kind: 'log'; level: 'info' | 'warn' | 'error' | 'verbose'; message: string }
  | { kind: 'bls'; call: number; request: WireBlsRequest }
  | { kind: 'bls-cancel'; call: number }
  | { kind: 'finalized'; error?: WireError }
  | { kind: 'answer'; q: number; answer?: QueryAnswer; error?: WireError };
