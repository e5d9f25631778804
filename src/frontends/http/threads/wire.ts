/**
 * What the HTTP protocol threads (--http-thread-count, worker.ts) and the main thread (pool.ts) send each
 * other over the worker's MessagePort, and the tensor packing both sides use: tensor bytes travel as
 * transferred ArrayBuffers (moved, not copied) when a tensor owns its whole buffer, else as one exact-size
 * copy (a view into Node's shared 8 KiB pool or into a larger socket read cannot be moved).
 */
import type { InferenceRequest, InferenceResponse } from '../../../core/index.js';

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
}

/** A request without `signal`, its tensors' Buffers as plain Uint8Arrays (what structured clone delivers). */
export type ThreadRequest = Omit<InferenceRequest, 'signal' | 'trace' | 'parentTrace' | 'timings'>;

export type ToMain =
  | { readonly t: 'listening'; readonly address: string; readonly port: number }
  | { readonly t: 'error'; readonly code: string | undefined; readonly message: string }
  | {
      readonly t: 'infer';
      readonly id: number;
      readonly model: string;
      readonly version: string | undefined;
      readonly traceparent: string | undefined;
      readonly tracestate: string | undefined;
      readonly request: ThreadRequest;
    }
  | { readonly t: 'cancel'; readonly id: number }
  | { readonly t: 'closed' }
  | { readonly t: 'batch'; readonly items: readonly ToMain[] };

export type ToThread =
  | { readonly t: 'answer'; readonly id: number; readonly response: InferenceResponse }
  | { readonly t: 'failed'; readonly id: number; readonly status: number; readonly body: string }
  | { readonly t: 'drain' }
  | { readonly t: 'close' }
  | { readonly t: 'batch'; readonly items: readonly ToThread[] };

/**
 * `tensors` with their data in a form postMessage delivers: views into `owned` (a request body that owns its
 * whole ArrayBuffer, and nothing else uses afterwards) go as they are, the buffer moved once; any other data
 * is copied into an exact-size buffer of its own that is moved (moving a buffer that others may hold, such
 * as a model's output or a cached tensor, would empty theirs).
 */
export function packTensors<T extends { readonly data: Buffer }>(
  tensors: readonly T[],
  transfer: ArrayBuffer[],
  owned?: ArrayBuffer,
): T[] {
  const out: T[] = new Array<T>(tensors.length);
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i];
    const data = t.data;
    let view: Uint8Array;
    if (owned !== undefined && data.buffer === owned) {
      if (!transfer.includes(owned)) transfer.push(owned);
      view = data;
    } else if (data.byteLength === 0) {
      view = new Uint8Array(0);
    } else {
      view = new Uint8Array(data.byteLength);
      view.set(data);
      transfer.push(view.buffer as ArrayBuffer);
    }
    out[i] = { ...t, data: view as Buffer };
  }
  return out;
}

/** The body's ArrayBuffer when the body is all of it (then it can be moved), else undefined. */
export function ownedBuffer(body: Buffer): ArrayBuffer | undefined {
  const ab = body.buffer;
  return ab instanceof ArrayBuffer && body.byteOffset === 0 && body.byteLength === ab.byteLength
    ? ab
    : undefined;
}

/** Turns the Uint8Arrays structured clone delivered back into Buffers (no copy). */
export function unpackTensors<T extends { readonly data: Buffer }>(tensors: readonly T[]): T[] {
  const out: T[] = new Array<T>(tensors.length);
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i];
    const d = t.data as Uint8Array;
    out[i] = { ...t, data: Buffer.from(d.buffer, d.byteOffset, d.byteLength) };
  }
  return out;
}

/**
 * Messages posted in one event-loop turn go as one: each postMessage costs a serialisation, a wake-up of the
 * other thread and a 'message' event there, and under load many requests are decoded (or answered) in the
 * same turn. Flushed from setImmediate, so after every socket the turn read from: no added wait.
 */
export class Coalescer<M extends { readonly t: string }> {
  private items: M[] = [];
  private transfer: ArrayBuffer[] = [];
  private scheduled = false;

  constructor(
    private readonly send: (m: M | { t: 'batch'; items: readonly M[] }, transfer: ArrayBuffer[]) => void,
  ) {}

  post(m: M, transfer?: readonly ArrayBuffer[]): void {
    this.items.push(m);
    if (transfer !== undefined) for (const ab of transfer) this.transfer.push(ab);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const items = this.items;
    const transfer = this.transfer;
    this.items = [];
    this.transfer = [];
    if (items.length === 1) this.send(items[0], transfer);
    else if (items.length > 1) this.send({ t: 'batch', items }, transfer);
  };
}
