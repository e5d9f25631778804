/**
 * The response sender a model gets from request.getResponseSender(), and the conversion of what a
 * model answers (InferenceResponse, or a plain `{ outputs, error, parameters }`) into a wire response
 * whose output buffers move to the main thread.
 *
 * Decoupled models send any number of responses and end with the final flag. A default-mode model may
 * answer through the sender too, with exactly one response: a response sent without the final flag is
 * held until the final send (which may carry no response of its own).
 */
import { internal, invalidArg } from '../../../common/errors.js';
import { RESPONSE_COMPLETE_FINAL, type ResponseSender } from '../../../sdk/request.js';
import { InferenceResponse, toNereidError, type InferenceResponseInit } from '../../../sdk/response.js';
import {
  RESPONSE_WINDOW,
  type JsFromWorker,
  type TransferCounters,
  type JsWireParameters,
  type WireResponse,
} from '../protocol.js';
import { moveToWire, type TensorLike } from '../tensors.js';

type Post = (message: JsFromWorker, transfer?: readonly ArrayBuffer[]) => void;

function isFinal(flags: number | { final: boolean } | undefined): boolean {
  if (flags === undefined) return false;
  if (typeof flags === 'number') return (flags & RESPONSE_COMPLETE_FINAL) !== 0;
  return flags.final === true;
}

function parametersOf(p: unknown): JsWireParameters | undefined {
  if (p === undefined || p === null) return undefined;
  if (typeof p !== 'object' || Array.isArray(p)) throw invalidArg('response parameters must be an object');
  const out: JsWireParameters = {};
  let any = false;
  for (const [k, v] of Object.entries(p as Record<string, unknown>)) {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean' && typeof v !== 'bigint') {
      throw invalidArg(`response parameter '${k}' must be a string, number, boolean or bigint`);
    }
    out[k] = v;
    any = true;
  }
  return any ? out : undefined;
}

/** Output names the model's config declares (set once by the worker; undefined = not checked). */
let declaredOutputs: ReadonlySet<string> | undefined;
export function setDeclaredOutputs(names: readonly string[]): void {
  declaredOutputs = new Set(names);
}

/**
 * One response as wire data. Only requested outputs travel (all of them when the request names none);
 * their buffers join `transfer`.
 */
export function responseToWire(
  rid: number,
  requested: readonly string[],
  response: unknown,
  final: boolean,
  transfer: Set<ArrayBuffer>,
  counters: TransferCounters,
): WireResponse {
  const r = (response instanceof InferenceResponse ? response : (response as InferenceResponseInit)) ?? {};
  if (typeof r !== 'object')
    throw invalidArg('a response must be an InferenceResponse or { outputs, error, parameters }');
  if (r.error !== undefined && r.error !== null) {
    const e = toNereidError(r.error);
    return { rid, outputs: [], final: true, error: { code: e.code, message: e.message } };
  }
  const outputs = r.outputs ?? [];
  if (!Array.isArray(outputs)) throw invalidArg('response outputs must be an array of tensors');
  const wanted = requested.length > 0 ? new Set(requested) : undefined;
  const wire = [];
  let undeclared: string[] | undefined;
  for (const t of outputs as readonly TensorLike[]) {
    if (typeof t !== 'object' || t === null || !(t.data instanceof Uint8Array)) {
      throw invalidArg('response outputs must be Tensor objects');
    }
    if (wanted && !wanted.has(t.name)) {
      // Pruned here, but a name the config does not declare is a mistake the main thread reports.
      if (declaredOutputs && !declaredOutputs.has(t.name)) (undeclared ??= []).push(t.name);
      continue;
    }
    if (t.data.byteLength === 0 && t.data.buffer.byteLength === 0 && t.shape.every((d) => d > 0)) {
      throw invalidArg(
        `output '${t.name}': its buffer was already sent in a response (outputs are moved, not copied; build a new array for each response)`,
      );
    }
    wire.push(moveToWire(t, transfer, counters));
  }
  const parameters = parametersOf(r.parameters);
  const out: WireResponse = parameters
    ? { rid, outputs: wire, final, parameters }
    : { rid, outputs: wire, final };
  if (undeclared) out.undeclared = undeclared;
  return out;
}

export class WorkerSender implements ResponseSender {
  private ended = false;
  private held: InferenceResponse | InferenceResponseInit | undefined;
  private sent = 0;
  /** Non-final responses posted that the main thread has not acknowledged (protocol.ts RESPONSE_WINDOW). */
  private unacked = 0;
  private writers: (() => void)[] = [];

  constructor(
    private readonly rid: number,
    private readonly requested: readonly string[],
    private readonly decoupled: boolean,
    private readonly signal: AbortSignal,
    private readonly post: Post,
    private readonly counters: TransferCounters,
    private readonly onEnd: () => void,
  ) {}

  get done(): boolean {
    return this.ended;
  }

  isCancelled(): boolean {
    return this.signal.aborted;
  }

  /** No more sends through this sender (execute() answered for it, or the batch failed). */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.wakeWriters();
    this.onEnd();
  }

  /**
   * Resolves when another response may be sent without running ahead of the reader: at once while this
   * request has fewer than RESPONSE_WINDOW responses the main thread has not taken, else when it takes
   * some, the request is cancelled or the sender closes.
   */
  whenWritable(): Promise<void> {
    if (this.ended || !this.decoupled || this.signal.aborted || this.unacked < RESPONSE_WINDOW) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      if (this.writers.length === 0) this.signal.addEventListener('abort', this.wakeWriters, { once: true });
      this.writers.push(resolve);
    });
  }

  /** The main thread took `n` of this request's responses. */
  taken(n: number): void {
    this.unacked = Math.max(0, this.unacked - n);
    if (this.unacked < RESPONSE_WINDOW) this.wakeWriters();
  }

  private readonly wakeWriters = (): void => {
    if (this.writers.length === 0) return;
    this.signal.removeEventListener('abort', this.wakeWriters);
    for (const w of this.writers.splice(0)) w();
  };

  send(
    response?: InferenceResponse | InferenceResponseInit | null,
    flags?: number | { final: boolean },
  ): void {
    if (this.ended) throw invalidArg('Unable to send response. Response sender has been closed.');
    const final = isFinal(flags);
    const has = response !== undefined && response !== null;
    if (!has && !final) throw invalidArg('send() needs a response, the final flag, or both');
    const failed = has && (response as InferenceResponseInit).error != null;
    if (!this.decoupled && !failed) {
      if (has && (this.held !== undefined || this.sent > 0)) {
        throw internal('a non-decoupled model must send exactly one response per request');
      }
      if (!final) {
        this.held = response ?? undefined;
        return;
      }
      if (!has) {
        if (this.held === undefined) {
          throw internal(
            'a non-decoupled model must send exactly one response per request (the final flag came alone)',
          );
        }
        response = this.held;
      }
    }
    const transfer = new Set<ArrayBuffer>();
    let wire: WireResponse;
    let problem: Error | undefined;
    try {
      wire =
        response === undefined || response === null
          ? { rid: this.rid, outputs: [], final }
          : responseToWire(this.rid, this.requested, response, final || failed, transfer, this.counters);
    } catch (err) {
      // The request fails (nobody is left to answer it) and the model hears why.
      problem = err instanceof Error ? err : toNereidError(err);
      const e = toNereidError(err);
      wire = { rid: this.rid, outputs: [], final: true, error: { code: e.code, message: e.message } };
    }
    this.sent++;
    if (this.decoupled && !wire.final) this.unacked++;
    if (wire.final) this.close();
    this.post({ kind: 'response', response: wire }, [...transfer]);
    if (problem !== undefined) throw problem;
  }
}
