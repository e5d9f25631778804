/**
 * Large JSON request bodies, parsed off the event loop and bounded in memory.
 *
 * Parsing JSON tensors is slow (tens of ms per MB: a 66 MB body took 3-4 s) and blocks everything else
 * on the event loop, health checks included; the JS values it builds take several times the body's size
 * (hostile nesting such as [[0],[0],...] about 20 times). So:
 * - a JSON document larger than --http-max-json-size is refused (400, like --http-max-input-size), from
 *   its declared size before the body is read when it can be;
 * - one of --http-json-worker-threshold bytes or more is decoded on a worker thread (Piscina, at most
 *   --http-json-worker-threads of them, started on demand, lower CPU priority than the event loop where the
 *   OS allows it); an inference body comes back as tensors, never as millions of JS numbers to copy;
 * - such documents in flight at once (being received, waiting for a worker, being parsed) are bounded by
 *   --http-json-worker-bytes, charged with the bytes that have arrived, not the length a request declares
 *   (issue 33: four connections declaring 64 MiB and trickling bytes locked every large JSON request out):
 *   the request whose bytes would pass it is refused with 503 and its connection closed, the rest of its
 *   body unread;
 * - a document whose parse could need more than 16 × --http-max-json-size of heap (1 GiB by default:
 *   many arrays or objects, a nesting bomb) is refused with a 400 before it is parsed (json-worker.ts,
 *   parseHeapBound); the worker's heap is capped at twice that, for anything else that runs away.
 * Smaller documents are parsed on the event loop as before: a worker round trip would cost them more
 * than it saves.
 */
import type { IncomingMessage } from 'node:http';
import { Piscina } from 'piscina';
import { internal, invalidArg, NereidError, unavailable } from '../../common/errors.js';
import type { ModelMetadata } from '../../core/index.js';
import { refusedBeforeBody } from './transport/body.js';
import { parseGenerateRequest, type GenerateRequestParts } from './generate-codec.js';
import { decodeInferRequest, type DecodeOptions, type DecodedInferRequest } from './infer-codec.js';
import { parseJson, type JsonIn } from './json.js';
import type { JsonTask, JsonTaskResult } from './json-worker.js';

export interface JsonLimits {
  /** --http-max-json-size: largest JSON document accepted. */
  readonly maxJsonSize: number;
  /** --http-json-worker-threshold: documents of this size or more are parsed on a worker thread. */
  readonly workerThreshold: number;
  /** --http-json-worker-threads: 0 parses every document on the event loop. */
  readonly workerThreads: number;
  /** --http-json-worker-bytes: bytes of worker-bound documents admitted at once. */
  readonly workerBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_JSON_LIMITS: JsonLimits = {
  maxJsonSize: 64 * MiB,
  workerThreshold: 64 * 1024,
  workerThreads: 1,
  workerBytes: 256 * MiB,
};

/** A reservation of the worker budget, held from before the body is read until it is decoded. */
export interface JsonTicket {
  release(): void;
  /**
   * Charges `bytes` more of the document's body, as they arrive (readBody's onBytes); throws the 503 that
   * closes the connection when they would pass the budget. Absent when the document is not counted.
   */
  readonly onBytes?: (bytes: number) => void;
}

const NO_TICKET: JsonTicket = { release() {} };

interface GrowingTicket extends JsonTicket {
  readonly onBytes: (bytes: number) => void;
  /** The whole body is here: charges what has not been charged yet, without the budget check. */
  complete(): void;
}

/**
 * The most heap one parse may need (json-worker.ts's parseHeapBound, checked before parsing): 16 ×
 * --http-max-json-size, 1 GiB by default, enough for the worst ordinary document (64 MB of one-digit
 * numbers needs at most 768 MB by that bound) and not for nesting bombs.
 */
export function maxParseHeap(maxJsonSize: number): number {
  return 16 * maxJsonSize;
}

/**
 * Worker heap cap (MB): twice the largest parse admitted, so that the cap is never what stops a parse
 * (inside JSON.parse it would abort the process, see parseHeapBound); it bounds the rest of the worker.
 */
export function workerHeapMb(maxJsonSize: number): number {
  return Math.max(256, Math.ceil((2 * maxParseHeap(maxJsonSize)) / MiB));
}

/**
 * The size of the request's JSON document as declared by its headers, or undefined when not known before
 * the body is read (compressed, chunked). `infer`: an inference request, whose JSON may be followed by
 * binary tensors (Inference-Header-Content-Length).
 */
export function declaredJsonLength(req: IncomingMessage, infer: boolean): number | undefined {
  const coding = req.headers['content-encoding'];
  if (coding !== undefined && coding !== '' && coding.trim().toLowerCase() !== 'identity') return undefined;
  const length = req.headers['content-length'];
  const total = length === undefined ? undefined : Number(length);
  const header = infer ? req.headers['inference-header-content-length'] : undefined;
  if (header === undefined) return total;
  // Only a plain value within the body counts; the decoder words the error for anything else.
  const n = typeof header === 'string' && /^\d{1,10}$/.test(header.trim()) ? Number(header) : NaN;
  return Number.isSafeInteger(n) && n > 0 && total !== undefined && n <= total ? n : undefined;
}

/** A body's bytes as a view another thread can take: moved when it owns its memory, else copied once. */
function forTransfer(body: Buffer): { view: Uint8Array; transfer: ArrayBuffer[] } {
  if (!(body.buffer instanceof ArrayBuffer)) return { view: body, transfer: [] }; // shared memory
  if (body.byteOffset === 0 && body.byteLength === body.buffer.byteLength) {
    return { view: body, transfer: [body.buffer] };
  }
  const copy = new Uint8Array(body.byteLength);
  copy.set(body);
  return { view: copy, transfer: [copy.buffer] };
}

const asBuffer = (v: Uint8Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

export class JsonPool {
  private readonly limits: JsonLimits;
  private pool: Piscina | undefined;
  private inFlight = 0;

  constructor(limits: Partial<JsonLimits> = {}) {
    this.limits = { ...DEFAULT_JSON_LIMITS, ...limits };
  }

  private get maxParseHeap(): number {
    return maxParseHeap(this.limits.maxJsonSize);
  }

  /** Bytes of worker-bound documents admitted and not yet decoded. */
  get bytesInFlight(): number {
    return this.inFlight;
  }

  private offloads(size: number): boolean {
    return this.limits.workerThreads > 0 && size >= this.limits.workerThreshold;
  }

  /** The --http-max-json-size refusal. */
  private tooLarge(size: number): NereidError {
    return invalidArg(
      `request JSON size of ${size} bytes exceeds the maximum allowed JSON size of ${this.limits.maxJsonSize} bytes. ` +
        'Use --http-max-json-size to increase the limit, or send tensors as binary data.',
    );
  }

  /** The 503 for a document past the --http-json-worker-bytes budget. */
  private refusal(): NereidError {
    return unavailable(
      `too many large JSON requests in progress (${this.inFlight} bytes of JSON being received or parsed, ` +
        `limit ${this.limits.workerBytes}); retry later, or send tensors as binary data`,
    );
  }

  /** A ticket for a document of `size` declared bytes, charged as its bytes arrive. */
  private growing(size: number): GrowingTicket {
    let charged = 0;
    let released = false;
    const charge = (bytes: number, checked: boolean): void => {
      if (released) return;
      const add = Math.min(bytes, size - charged);
      if (add <= 0) return;
      // One document is always admitted: only the bytes of the others count against this one.
      const others = this.inFlight - charged;
      if (checked && others > 0 && this.inFlight + add > this.limits.workerBytes) {
        throw refusedBeforeBody(this.refusal());
      }
      this.inFlight += add;
      charged += add;
    };
    return {
      onBytes: (bytes) => charge(bytes, true),
      complete: () => charge(size, false),
      release: () => {
        if (released) return;
        released = true;
        this.inFlight -= charged;
      },
    };
  }

  private take(size: number, beforeBody: boolean): JsonTicket {
    if (this.inFlight > 0 && this.inFlight + size > this.limits.workerBytes) {
      const err = this.refusal();
      throw beforeBody ? refusedBeforeBody(err) : err;
    }
    this.inFlight += size;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inFlight -= size;
      },
    };
  }

  /**
   * Checks a request's declared JSON size before its body is read: over --http-max-json-size is a 400 (the
   * connection is then closed rather than drained, refusedBeforeBody). A worker-bound document gets a
   * ticket that charges the budget as its bytes arrive (pass `ticket.onBytes` to readBody).
   */
  admit(req: IncomingMessage, infer: boolean): JsonTicket {
    const size = declaredJsonLength(req, infer);
    if (size === undefined) return NO_TICKET;
    if (size > this.limits.maxJsonSize) throw refusedBeforeBody(this.tooLarge(size));
    return this.offloads(size) ? this.growing(size) : NO_TICKET;
  }

  /**
   * Whether a document of `size` bytes goes to a worker; throws the --http-max-json-size refusal for one
   * that is too large.
   */
  private routes(size: number): boolean {
    if (size > this.limits.maxJsonSize) throw this.tooLarge(size);
    return this.offloads(size);
  }

  /** Runs `task` on a worker, under `ticket` (or one taken now when admit() did not take one). */
  private async run(size: number, ticket: JsonTicket, body: Buffer, task: (view: Uint8Array) => JsonTask) {
    if ('complete' in ticket) (ticket as GrowingTicket).complete();
    const own = ticket === NO_TICKET ? this.take(size, false) : ticket;
    try {
      const { view, transfer } = forTransfer(body);
      let result: JsonTaskResult;
      try {
        result = (await this.workers().run(task(view), { transferList: transfer })) as JsonTaskResult;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
          throw invalidArg(
            `request JSON of ${size} bytes needs more memory to parse than a JSON worker thread may use ` +
              `(${workerHeapMb(this.limits.maxJsonSize)} MB); send tensors as binary data`,
          );
        }
        throw internal(`JSON worker thread failed: ${err instanceof Error ? err.message : String(err)}`, err);
      }
      if (!result.ok) throw new NereidError(result.code, result.message);
      return result;
    } finally {
      own.release();
    }
  }

  /**
   * decodeInferRequest, on a worker thread when the JSON part is large (then a promise; a small body is
   * decoded at once, without the cost of a promise). The body is moved to the worker: the caller must not
   * use it afterwards (binary inputs come back as views into it).
   */
  decodeInfer(
    body: Buffer,
    headerLength: number | undefined,
    options: DecodeOptions,
    ticket: JsonTicket = NO_TICKET,
  ): DecodedInferRequest | Promise<DecodedInferRequest> {
    const size = headerLength ?? body.length;
    if (!this.routes(size)) return decodeInferRequest(body, headerLength, options);
    return this.decodeInferOnWorker(body, size, headerLength, options, ticket);
  }

  private async decodeInferOnWorker(
    body: Buffer,
    size: number,
    headerLength: number | undefined,
    options: DecodeOptions,
    ticket: JsonTicket,
  ): Promise<DecodedInferRequest> {
    const result = await this.run(size, ticket, body, (view) => ({
      kind: 'infer',
      body: view,
      maxParseHeap: this.maxParseHeap,
      headerLength,
      options,
    }));
    if (result.kind !== 'infer') throw internal(`JSON worker answered a ${result.kind} task`);
    // Structured clone made the Buffers plain Uint8Arrays; the body's views came back over the moved body.
    const { request, format } = result.decoded;
    return {
      request: { ...request, inputs: request.inputs.map((i) => ({ ...i, data: asBuffer(i.data) })) },
      format,
    };
  }

  /** parseJson, on a worker thread when the document is large (the body is moved there). */
  async parse(body: Buffer, ticket: JsonTicket = NO_TICKET): Promise<JsonIn> {
    if (!this.routes(body.length)) return parseJson(body);
    const result = await this.run(body.length, ticket, body, (view) => ({
      kind: 'json',
      body: view,
      maxParseHeap: this.maxParseHeap,
    }));
    if (result.kind !== 'json') throw internal(`JSON worker answered a ${result.kind} task`);
    return result.value;
  }

  /** parseGenerateRequest, on a worker thread when the document is large (the body is moved there). */
  async parseGenerate(
    body: Buffer,
    metadata: ModelMetadata,
    maxInputSize: number,
    ticket: JsonTicket = NO_TICKET,
  ): Promise<GenerateRequestParts> {
    if (!this.routes(body.length)) return parseGenerateRequest(body.toString('utf8'), metadata, maxInputSize);
    const result = await this.run(body.length, ticket, body, (view) => ({
      kind: 'generate',
      body: view,
      maxParseHeap: this.maxParseHeap,
      metadata,
      maxInputSize,
    }));
    if (result.kind !== 'generate') throw internal(`JSON worker answered a ${result.kind} task`);
    const { parts } = result;
    return { ...parts, inputs: parts.inputs.map((i) => ({ ...i, data: asBuffer(i.data) })) };
  }

  private workers(): Piscina {
    if (this.pool === undefined) {
      this.pool = new Piscina({
        filename: new URL('./json-worker.js', import.meta.url).href,
        minThreads: 0,
        maxThreads: this.limits.workerThreads,
        // Kept a while after a burst (starting one costs tens of ms), then their memory goes back.
        idleTimeout: 30_000,
        resourceLimits: { maxOldGenerationSizeMb: workerHeapMb(this.limits.maxJsonSize) },
        // The event loop (health checks, small requests) comes first on a busy machine.
        niceIncrement: 5,
      });
      // A worker that dies between tasks is replaced; Piscina reports it here rather than crash the server.
      this.pool.on('error', () => {});
    }
    return this.pool;
  }

  /** Stops the worker threads (waiting tasks fail). */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.destroy();
  }
}
