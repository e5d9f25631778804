/**
 * The bidirectional ModelStreamInfer rpc, with Triton's semantics: many requests in flight per stream;
 * responses of non-decoupled models leave in request order, those of decoupled models as they come; every
 * response carries `triton_final_response`; a request's error travels in-band as `error_message` (with
 * the request id) unless the client opened the stream with the header `triton_grpc_error: true`, in which
 * case the first error ends the stream with its gRPC status. A decoupled request's flag-only final
 * response is sent (empty) only when it asked with `triton_enable_empty_final_response`. Cancelling the
 * call aborts every request still running. A stream with nothing in flight that receives no request for
 * `idleTimeoutMs` is ended with UNAVAILABLE, so an abandoned stream does not hold its connection forever.
 */
import { unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { ResolvedModel } from '../../core/model-handle.js';
import type { InferenceServerApi } from '../../core/server-api.js';
import type { InferenceResponse } from '../../core/types.js';
import { withForwarded } from '../header-forward.js';
import type { ServerCall } from './call.js';
import { parseInferRequest, toInferenceRequest, type WireInferRequest } from './infer-request.js';
import { encodeStreamResponse, type ResponseFields } from './infer-response.js';
import { Status, toGrpcError } from './status.js';
import { returnController, takeController } from '../signal-pool.js';

export const SHUTTING_DOWN_MESSAGE = 'GRPC server is shutting down and has stopped accepting new requests.';

export function idleStreamMessage(ms: number): string {
  return `the stream received no request for ${ms} ms and was closed; open a new stream`;
}

/** A non-decoupled request's place in the response order. */
interface Slot {
  pieces: Buffer[] | undefined;
}

const NO_OUTPUTS: ResponseFields['outputs'] = [];

export class StreamInfer {
  private inFlight = 0;
  private inputEnded = false;
  private closing = false;
  private readonly controllers = new Set<AbortController>();
  private readonly order: Slot[] = [];
  /** `triton_grpc_error: true`: errors end the stream with a status. */
  private readonly errorMode: boolean;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly api: InferenceServerApi,
    private readonly call: ServerCall,
    private readonly log: Logger,
    private readonly onDone: () => void,
    private readonly idleTimeoutMs = 0,
    /** Metadata forwarded to every request of the stream (`--grpc-header-forward-pattern`). */
    private readonly forwarded?: Readonly<Record<string, string>>,
  ) {
    this.errorMode = call.metadata('triton_grpc_error') === 'true';
    call.stream.once('close', () => {
      if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
      onDone();
    });
    this.armIdle();
    call.start({
      onMessage: (m) => this.onMessage(m),
      onEnd: () => {
        this.inputEnded = true;
        this.maybeFinish();
      },
      onAbort: () => this.abortAll(),
    });
  }

  /** The server is closing: refuse new requests, end the stream once the running ones are answered. */
  shutdown(): void {
    this.closing = true;
    this.maybeFinish();
  }

  private onMessage(message: Buffer): void {
    if (this.idleTimer !== undefined) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
    this.inFlight++;
    void this.run(message).finally(() => {
      this.inFlight--;
      this.maybeFinish();
      if (this.inFlight === 0) this.armIdle();
    });
  }

  /** Nothing in flight: the stream may wait this long for its next request. */
  private armIdle(): void {
    if (
      !(this.idleTimeoutMs > 0 && this.idleTimeoutMs <= 0x7fffffff) ||
      this.call.finished ||
      this.inputEnded ||
      this.idleTimer !== undefined
    )
      return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.inFlight > 0 || this.call.finished) return;
      this.call.finish({ code: Status.UNAVAILABLE, details: idleStreamMessage(this.idleTimeoutMs) });
    }, this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private async run(message: Buffer): Promise<void> {
    const controller = takeController();
    this.controllers.add(controller);
    let wire: WireInferRequest | undefined;
    let parseError: unknown;
    try {
      wire = parseInferRequest(message);
    } catch (err) {
      parseError = err;
    }
    // One lookup per request, on arrival: the handle holds the version it resolved until released.
    let model: ResolvedModel | undefined;
    let lookupError: unknown;
    if (wire !== undefined) {
      try {
        model = this.api.resolveModel(
          wire.modelName,
          wire.modelVersion === '' ? undefined : wire.modelVersion,
        );
      } catch (err) {
        lookupError = err; // unknown model: the request fails below, in order
      }
    }
    // Still synchronous with the message's arrival, so slots are taken in request order.
    let slot: Slot | undefined;
    if (model === undefined || !model.decoupled) {
      slot = { pieces: undefined };
      this.order.push(slot);
    }
    let started = false;
    try {
      if (wire === undefined) throw parseError;
      if (this.closing) throw unavailable(SHUTTING_DOWN_MESSAGE);
      const { request, enableEmptyFinalResponse } = toInferenceRequest(wire);
      if (model === undefined) throw lookupError;
      const responses = model.stream({
        ...withForwarded(request, this.forwarded),
        signal: controller.signal,
      });
      started = true;
      let final = false;
      for await (const r of responses) {
        if (r.final) final = true;
        if (slot === undefined && r.final && r.outputs.length === 0) {
          // A decoupled model's flag-only final response.
          if (enableEmptyFinalResponse) this.emit(undefined, this.emptyFinal(wire));
          continue;
        }
        this.emit(slot, this.response(r));
      }
      if (!final && slot === undefined && enableEmptyFinalResponse)
        this.emit(undefined, this.emptyFinal(wire));
      if (!final && slot !== undefined) this.emit(slot, this.response(undefined, wire));
    } catch (err) {
      this.fail(err, wire, slot, started);
    } finally {
      model?.release();
      // Out of the set, nothing here aborts it any more: a clean signal serves the next request.
      this.controllers.delete(controller);
      returnController(controller);
    }
  }

  private response(r: InferenceResponse | undefined, wire?: WireInferRequest): Buffer[] {
    if (r === undefined) {
      // Defensive: a non-decoupled request must end with a response; report the missing one in order.
      return encodeStreamResponse(`model '${wire!.modelName}' ended the request without a response`, {
        modelName: wire!.modelName,
        modelVersion: wire!.modelVersion,
        id: wire!.id,
        parameters: { triton_final_response: true },
        outputs: NO_OUTPUTS,
      });
    }
    return encodeStreamResponse('', {
      ...r,
      parameters: { ...r.parameters, triton_final_response: r.final },
    });
  }

  private emptyFinal(wire: WireInferRequest): Buffer[] {
    return encodeStreamResponse('', {
      modelName: wire.modelName,
      modelVersion: wire.modelVersion,
      id: wire.id,
      parameters: { triton_final_response: true },
      outputs: NO_OUTPUTS,
    });
  }

  /** A request failed: in-band error (setup errors carry only the id, as Triton's do), or end the stream. */
  private fail(
    err: unknown,
    wire: WireInferRequest | undefined,
    slot: Slot | undefined,
    started: boolean,
  ): void {
    if (this.call.finished) return;
    const status = toGrpcError(err, { log: this.log, method: this.call.method, requestId: wire?.id });
    if (this.errorMode) {
      this.call.finish(status);
      this.abortAll();
      return;
    }
    const fields: ResponseFields =
      started && wire !== undefined
        ? {
            modelName: wire.modelName,
            modelVersion: wire.modelVersion,
            id: wire.id,
            parameters: { triton_final_response: true },
            outputs: NO_OUTPUTS,
          }
        : { modelName: '', modelVersion: '', id: wire?.id ?? '', parameters: {}, outputs: NO_OUTPUTS };
    this.emit(slot, encodeStreamResponse(status.details, fields));
  }

  /** Sends at once (decoupled), or when every earlier non-decoupled request has been answered. */
  private emit(slot: Slot | undefined, pieces: Buffer[]): void {
    if (slot === undefined) {
      this.call.send(pieces);
      return;
    }
    slot.pieces = pieces;
    while (this.order.length > 0 && this.order[0].pieces !== undefined) {
      this.call.send(this.order.shift()!.pieces!);
    }
  }

  private maybeFinish(): void {
    if (this.call.finished || this.inFlight > 0) return;
    if (this.closing) this.call.finish({ code: Status.UNAVAILABLE, details: SHUTTING_DOWN_MESSAGE });
    else if (this.inputEnded) this.call.finishOk();
  }

  private abortAll(): void {
    for (const c of this.controllers) c.abort();
  }
}
