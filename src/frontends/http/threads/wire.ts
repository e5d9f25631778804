/**
 * What the HTTP protocol threads (--http-thread-count, worker.ts) and the main thread (pool.ts) send each
 * other over the worker's MessagePort; the control messages, tensor packing and batching are shared with
 * the gRPC threads (../../threads/wire.ts).
 */
import type { InferenceRequest, InferenceResponse } from '../../../core/index.js';

export {
  Coalescer,
  ownedBuffer,
  packTensors,
  unpackTensors,
  type TurnBatch,
  type ThreadControl,
  type ThreadStatus,
} from '../../threads/wire.js';

export interface ThreadWorkerData {
  /** Marks this module's worker data (an embedding that loads Nereid in a worker never starts it). */
  readonly nereidHttpThread: true;
  readonly address: string;
  readonly port: number;
  readonly backlog: number;
  /** The main thread's own HTTP server, on 127.0.0.1: every request the thread does not serve goes there. */
  readonly internalPort: number;
  readonly maxInputSize: number;
  /** --http-json-worker-threshold: larger JSON headers go to the main thread's JSON pool, as without threads. */
  readonly jsonThreshold: number;
  readonly serverHeader: string;
  /** False when a setting needs the main thread's per-request view (restrictions, header forwarding, access log). */
  readonly fastPath: boolean;
  /** This thread's share of --http-max-connections and --http-max-connections-per-address (0: none). */
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  /** The main thread's 503 bodies for them, quoting the whole server's caps. */
  readonly overCapBody: string;
  readonly overShareBody: string;
}

/** A request without `signal`, its tensors' Buffers as plain Uint8Arrays (what structured clone delivers). */
export type ThreadRequest = Omit<InferenceRequest, 'signal' | 'trace' | 'parentTrace' | 'timings'>;

/** What a thread asks of the main thread (its listener's news are ThreadStatus). */
export type ToMain =
  | {
      readonly t: 'infer';
      readonly id: number;
      readonly model: string;
      readonly version: string | undefined;
      readonly traceparent: string | undefined;
      readonly tracestate: string | undefined;
      readonly request: ThreadRequest;
    }
  | { readonly t: 'cancel'; readonly id: number };

/** The main thread's answers (besides ThreadControl). */
export type ToThread =
  | { readonly t: 'answer'; readonly id: number; readonly response: InferenceResponse }
  | { readonly t: 'failed'; readonly id: number; readonly status: number; readonly body: string };
