/**
 * What every kind of protocol thread (--http-thread-count: ../http/threads/, --grpc-infer-thread-count:
 * ../grpc/threads/) and the main thread share on the wire: the control messages each side understands, the
 * tensor packing (tensor bytes travel as transferred ArrayBuffers — moved, not copied — when a tensor owns
 * its whole buffer, else as one exact-size copy: a view into Node's shared 8 KiB pool or into a larger socket
 * read cannot be moved) and the batching of one event-loop turn's messages into one postMessage.
 */

/** What a thread tells the main thread about its listener and its end. */
export type ThreadStatus =
  | { readonly t: 'listening'; readonly address: string; readonly port: number }
  | { readonly t: 'error'; readonly code: string | undefined; readonly message: string }
  | { readonly t: 'closed' };

/** What the main thread asks of every thread: stop taking new work (drain), close its listener (close). */
export type ThreadControl = { readonly t: 'drain' } | { readonly t: 'close' };

/** One turn's messages, sent as one (Coalescer). */
export interface TurnBatch<M> {
  readonly t: 'batch';
  readonly items: readonly M[];
}

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

  constructor(private readonly send: (m: M | TurnBatch<M>, transfer: ArrayBuffer[]) => void) {}

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
