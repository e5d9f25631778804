/**
 * Business Logic Scripting: `pb_utils.InferenceRequest(...).exec()` in a model becomes a BLS_REQUEST frame;
 * this runs it on the server through the ModelLoadContext's serverApi (any model, any backend) and streams
 * every response back as BLS_RESPONSE frames, the last one final. Errors (unknown model, bad input, the
 * target failing) come back as an error response, as Triton does; `ResponseIterator.cancel()` aborts the
 * call. As in Triton, a model calling itself with no free instance waits forever: don't.
 *
 * Flow control (issue 33): the host sends at most the call's window (BLS_REQUEST's `window`, the stub's
 * BLS_WINDOW) of responses ahead of what the model's ResponseIterator took; the stub grants more with
 * BLS_CREDIT frames as the iterator is read. While a call has no credit this side simply does not take
 * the next response from the core, so the target model's responses wait in the core's bounded queue of
 * undelivered responses (--max-undelivered-responses) and a decoupled target waits in its send: a model
 * that reads its BLS responses slowly, or holds the iterator, holds back its own call, never the host's
 * memory. Cancelling the iterator (or the stub closing) ends the wait.
 */
import type {
  BackendTraceToken,
  ParameterValue,
  ServerApi,
  ServerInferRequest,
  ServerInferResponse,
} from '../../backend-api/backend.js';
import { NereidError, cancelled, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { isJsonObject } from './frames.js';
import { MessageType, tritonErrorCode, type BlsRequestIn, type StubTensor } from './protocol.js';
import type { StubProcess } from './stub-process.js';
import {
  BlobBuilder,
  describeInline,
  describeTensors,
  readInlineTensors,
  readTensors,
  type FreedRanges,
} from './tensors.js';

export type ServerInfer = ServerApi['infer'];

function parseParameters(text: string): Record<string, ParameterValue> {
  // What a call without parameters sends (request.parameters() is '{}'): no JSON.parse for it.
  if (text === '' || text === '{}') return {};
  const parsed: unknown = JSON.parse(text);
  if (!isJsonObject(parsed)) {
    throw internal('BLS request parameters must be a JSON object');
  }
  const out: Record<string, ParameterValue> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      out[k] = v;
    } else {
      throw internal(`BLS request parameter '${k}' must be a bool, an int or a string`);
    }
  }
  return out;
}

/**
 * The core request for a BLS header: flags, correlation id and timeout become Triton's parameters;
 * `callerModel` is the model making the call. One literal with every member written out (absent ones
 * undefined), as core/call.ts builds a frontend's request: one object shape for every BLS call.
 */
export function blsRequest(
  h: BlsRequestIn,
  inputs: Tensor[],
  signal: AbortSignal,
  callerModel: string | undefined,
  parentTrace?: BackendTraceToken,
): ServerInferRequest {
  const parameters = parseParameters(h.parameters);
  const c = h.correlationId;
  const corr = h.correlationIsString ? c : BigInt(/^\d+$/.test(c) ? c : '0');
  if (corr !== '' && corr !== 0n) parameters.sequence_id = corr;
  if ((h.flags & 1) !== 0) parameters.sequence_start = true;
  if ((h.flags & 2) !== 0) parameters.sequence_end = true;
  if (h.timeoutUs > 0) parameters.timeout = h.timeoutUs;
  return {
    modelName: h.modelName,
    modelVersion: h.modelVersion,
    id: h.requestId,
    inputs,
    outputs: h.requestedOutputs.map((name) => ({ name })),
    parameters,
    signal,
    parentTrace,
    callerModel,
  };
}

/** One running BLS call: its cancellation and its credit (responses it may still send). */
interface Call {
  readonly ac: AbortController;
  /** The stub gave the call a window: responses sent count as `ahead` until granted back. */
  readonly windowed: boolean;
  credit: number;
  /** Responses sent and not granted back yet (a call with a window). */
  ahead: number;
  /** Wakes the call waiting for credit (a grant, or its cancellation). */
  wake: (() => void) | undefined;
}

export class BlsService {
  private readonly calls = new Map<number, Call>();
  /** BLS_RESPONSE frames sent and not yet granted back, summed over the calls; and one call's most. */
  private ahead = 0;
  private peak = 0;

  constructor(
    private readonly stub: StubProcess,
    private readonly infer: ServerInfer | undefined,
    private readonly threshold: number,
    private readonly log: Logger,
    /** The trace of a request this stub is executing (by its rid), for `trace=request.trace()`. */
    private readonly traceOf: (rid: number) => BackendTraceToken | undefined = () => undefined,
    /** The model whose stub makes the calls (on-demand mode keeps the callee loaded while it is busy). */
    private readonly callerModel?: string,
  ) {}

  /** No call is running (so the host->stub file's space can be reused). */
  get idle(): boolean {
    return this.calls.size === 0;
  }

  /** A BLS_REQUEST: runs the call, its responses go back as BLS_RESPONSE frames. */
  onRequest(h: BlsRequestIn, blob: Buffer): void {
    if (h.call !== 0) void this.run(h, blob);
  }

  /** A BLS_CANCEL (ResponseIterator.cancel()). */
  onCancel(call: number): void {
    const c = this.calls.get(call);
    if (c !== undefined) abortCall(c);
  }

  /** A BLS_CREDIT: the call's iterator took `n` more responses. */
  onCredit(call: number, n: number): void {
    const c = this.calls.get(call);
    if (c === undefined || n <= 0) return;
    c.credit += n;
    const back = Math.min(n, c.ahead);
    c.ahead -= back;
    this.ahead -= back;
    const wake = c.wake;
    c.wake = undefined;
    wake?.();
  }

  /** Responses sent to the stub that its iterators have not taken (and granted back) yet. */
  get responsesAhead(): number {
    return this.ahead;
  }

  /** The most responses one call ever had ahead of its iterator (tests: bounded by the window). */
  get peakAhead(): number {
    return this.peak;
  }

  abortAll(): void {
    for (const c of this.calls.values()) abortCall(c);
    this.calls.clear();
  }

  /** Waits until `c` may send another response; throws CANCELLED if the call is cancelled meanwhile. */
  private async waitForCredit(c: Call): Promise<void> {
    while (c.credit <= 0) {
      if (c.ac.signal.aborted) throw cancelled('the BLS call was cancelled');
      await new Promise<void>((resolve) => (c.wake = resolve));
    }
  }

  /** The call's inputs when one of them is in /dev/shm (the inline ones are read in run()'s turn). */
  private async sharedInputs(h: BlsRequestIn, blob: Buffer): Promise<Tensor[]> {
    const freed: FreedRanges = [];
    try {
      return await readTensors(h.inputs, blob, this.stub.files?.fromStub, freed);
    } finally {
      if (freed.length > 0) this.stub.send(MessageType.Free, { ranges: freed });
    }
  }

  private async run(h: BlsRequestIn, blob: Buffer): Promise<void> {
    const q = h.call;
    const ac = new AbortController();
    const windowed = h.window > 0;
    // No 'abort' listener (one costs more than a small call): whoever aborts the call wakes it (abortCall).
    const c: Call = { ac, windowed, credit: windowed ? h.window : Infinity, ahead: 0, wake: undefined };
    this.calls.set(q, c);
    try {
      // Inline inputs (the small call) are read in this turn: the target's request is dispatched in it too.
      const inputs = readInlineTensors(h.inputs, blob) ?? (await this.sharedInputs(h, blob));
      if (!this.infer) {
        throw unavailable(
          'BLS is not available: this server did not give the python backend its inference API',
        );
      }
      const parent = h.traceRid !== 0 ? this.traceOf(h.traceRid) : undefined;
      const request = blsRequest(h, inputs, ac.signal, this.callerModel, parent);
      // The iterator by hand, not for-await (core/call.ts, performance rules): the final response ends
      // the call without another next(). The next response is taken from the core only once the stub has
      // room for it (credit).
      const responses = this.infer(request)[Symbol.asyncIterator]();
      for (;;) {
        const next = await responses.next();
        if (next.done === true) {
          await this.reply(q, [], {}, true);
          break;
        }
        try {
          let final = this.forward(c, q, next.value);
          if (final instanceof Promise) final = await final;
          if (final) break;
        } catch (err) {
          // Cancelled while it waited for credit, or its response could not be sent: the target's
          // stream is closed as for-await would close it (the core's own stream ends by the signal).
          void responses.return?.();
          throw err;
        }
      }
    } catch (err) {
      const e = NereidError.from(err);
      if (this.log.isVerbose()) this.log.verbose(`BLS request from '${this.stub.name}' failed: ${e.message}`);
      this.stub.send(MessageType.BlsResponse, {
        call: q,
        final: true,
        error: { code: tritonErrorCode(e.code), message: e.message },
      });
    } finally {
      this.calls.delete(q);
      // The call is over: what the stub did not grant back is no longer ahead.
      this.ahead -= c.ahead;
    }
  }

  /**
   * Sends one response of the call once it has credit; true when it was the final one. In this turn (no
   * promise) when the call has credit and the outputs go inline: the small call's path.
   */
  private forward(c: Call, q: number, r: ServerInferResponse): boolean | Promise<boolean> {
    if (c.credit <= 0) return this.waitForCredit(c).then(() => this.forward(c, q, r));
    c.credit--;
    const sending = this.reply(q, r.outputs, r.parameters, r.final);
    if (sending !== undefined) return sending.then(() => this.sent(c, r.final));
    return this.sent(c, r.final);
  }

  /** A response went out: with a window, it counts against the call's credit until granted back. */
  private sent(c: Call, final: boolean): boolean {
    if (c.windowed) {
      c.ahead++;
      this.ahead++;
      if (c.ahead > this.peak) this.peak = c.ahead;
    }
    return final;
  }

  /** Sends one response: in this turn when its outputs all go inline, else once written to /dev/shm. */
  private reply(
    q: number,
    outputs: readonly Tensor[],
    parameters: Readonly<Record<string, ParameterValue>>,
    final: boolean,
  ): Promise<void> | undefined {
    const blob = new BlobBuilder();
    const sink = { arena: this.stub.files?.toStub, threshold: this.threshold };
    const inline = describeInline(outputs, sink, blob);
    if (inline !== undefined) {
      this.send(q, inline, blob, parameters, final);
      return undefined;
    }
    return describeTensors(outputs, sink, blob).then((tensors) =>
      this.send(q, tensors, blob, parameters, final),
    );
  }

  private send(
    q: number,
    tensors: StubTensor[],
    blob: BlobBuilder,
    parameters: Readonly<Record<string, ParameterValue>>,
    final: boolean,
  ): void {
    let p: string | undefined;
    for (const _ in parameters) {
      p = JSON.stringify(parameters, bigintReplacer);
      break;
    }
    this.stub.send(
      MessageType.BlsResponse,
      p === undefined
        ? { call: q, final, outputs: tensors }
        : { call: q, final, outputs: tensors, parameters: p },
      blob.parts,
    );
  }
}

/** Cancels the call and wakes it if it waits for credit. */
function abortCall(c: Call): void {
  c.ac.abort();
  const wake = c.wake;
  c.wake = undefined;
  wake?.();
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
