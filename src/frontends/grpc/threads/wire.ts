/**
 * What the gRPC protocol threads (--grpc-infer-thread-count, worker.ts) and the main thread (pool.ts) send
 * each other over the worker's MessagePort; the control messages, tensor packing and batching are the ones
 * the HTTP threads use (../../threads/wire.ts).
 */
import type { ErrorCode } from '../../../common/errors.js';
import type { LogSettings } from '../../../common/logger.js';
import type { DecodedRequest, InferenceResponse } from '../../../core/index.js';
import type { GrpcFrontendOptions } from '../server.js';

/** The frontend options a thread's port is built from (what structured clone can carry). */
export type ThreadPortOptions = Omit<
  GrpcFrontendOptions,
  'log' | 'accessLog' | 'tls' | 'requestCounts' | 'address' | 'port'
>;

export interface GrpcThreadData {
  /** Marks this module's worker data (an embedding that loads Nereid in a worker never starts it). */
  readonly nereidGrpcThread: true;
  /** 0-based; the verbose log names thread index + 1. */
  readonly index: number;
  readonly address: string;
  readonly port: number;
  /** The main thread's own gRPC server, on 127.0.0.1: every stream the thread does not serve goes there. */
  readonly internalPort: number;
  /** The Server metadata's product token. */
  readonly serverToken: string;
  readonly options: ThreadPortOptions;
  readonly logSettings: LogSettings;
  /** False when a setting needs the main thread's view of each call (the access log): all is forwarded. */
  readonly fastPath: boolean;
}

export type GrpcToMain =
  | {
      readonly t: 'infer';
      readonly id: number;
      readonly model: string;
      /** As on the wire: '' for the model's policy. */
      readonly version: string;
      readonly requestId: string;
      readonly traceparent: string | undefined;
      readonly tracestate: string | undefined;
      readonly authority: string | undefined;
      readonly forwarded: Readonly<Record<string, string>> | undefined;
      /** The decoded request; undefined when Triton's request rules refused it (`invalid`). */
      readonly request: DecodedRequest | undefined;
      /**
       * Why toInferenceRequest refused the request: raised by the main thread after the model is resolved
       * and decoupled models refused, the order the main thread's ModelInfer checks in.
       */
      readonly invalid: { readonly code: ErrorCode; readonly message: string } | undefined;
    }
  | { readonly t: 'cancel'; readonly id: number }
  /** Calls the thread finished, for nereid_grpc_requests_total: [`<code> <rpc>`, how many]. */
  | { readonly t: 'counts'; readonly entries: readonly (readonly [string, number])[] }
  /** A log line the thread's Logger formatted. */
  | { readonly t: 'log'; readonly line: string };

export type GrpcToThread =
  | { readonly t: 'answer'; readonly id: number; readonly response: InferenceResponse }
  | { readonly t: 'failed'; readonly id: number; readonly code: number; readonly details: string }
  /** The main thread's log settings changed (the logging API): the thread's logger follows. */
  | { readonly t: 'log-settings'; readonly settings: LogSettings };
