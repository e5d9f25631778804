/**
 * The bidirectional ModelStreamInfer rpc, with Triton's semantics: many requests in flight per stream;
 * responses of non-decoupled models leave in request order, those of decoupled models as they come; every
 * response carries `triton_final_response`; a request's error travels in-band as `error_message` (with
 * the request id) unless the client opened the stream with the header `triton_grpc_error: true`, in which
 * case the first error ends the stream with its gRPC status. A decoupled request's flag-only final
 * response is sent (empty) only when it asked with `triton_enable_empty_final_response`. Cancelling the
 * call aborts every request still running. A stream with nothing in flight that receives no request for
 * `idleTimeoutMs` is ended with UNAVAILABLE, so an abandoned stream does not hold its connection forever.
 * Each request on the stream is traced and access-logged on its own, as a unary ModelInfer is: its trace
 * (sampled per request, joined to the W3C traceparent of the stream's metadata) gets Triton's stream
 * timestamps (GRPC_WAITREAD_START from when the stream began waiting for it, GRPC_WAITREAD_END on arrival,
 * INFER_RESPONSE_COMPLETE, GRPC_SEND_START / GRPC_SEND_END around each response written) and ends once its
 * last response is out; then its access-log line is written. A request takes its next response only once
 * the call's HTTP/2 stream has drained below its high-water mark (back-pressure into the model, issue 33).
 */
import { unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import {
  resolveCall,
  streamCall,
  type InferenceResponse,
  type InferenceServerApi,
  type RequestTimings,
  type RequestTrace,
  type ResolvedModel,
  type TraceCarrier,
} from '../../core/index.js';
import { MODEL_VARIANT_HEADER, modelForVariant } from '../model-variant.js';
import type { AccessLog } from '../access-log.js';
import type { ServerCall } from './transport/call.js';
import { parseInferRequest, toInferenceRequest, type WireInferRequest } from './infer-request.js';
import { encodeStreamResponse, type ResponseFields } from './infer-response.js';
import { Status, toGrpcError } from './transport/status.js';
import { returnController, takeController } from '../signal-pool.js';

export const SHUTTING_DOWN_MESSAGE = 'GRPC server is shutting down and has stopped accepting new requests.';

export function idleStreamMessage(ms: number): string {
  return `the stream received no request for ${ms} ms and was closed; open a new stream`;
}

/** What the stream's requests share for tracing and the access log. */
export interface StreamObservers {
  readonly accessLog?: AccessLog;
  /** The W3C trace context of the stream's metadata: every request on it joins that trace. */
  readonly carrier?: TraceCarrier;
  /** The client's address, for the access log. */
  readonly client?: string;
}

/** One request on the stream, as its trace and access-log line see it. */
interface Exchange {
  /** Set once the request is parsed and sampled. */
  trace?: RequestTrace;
  timings?: RequestTimings;
  model: string;
  version: string;
  requestId: string;
  readonly bytesIn: number;
  bytesOut: number;
  /** gRPC status: OK, or the request's error (in-band or ending the stream). */
  status: number;
  /** When the stream began waiting for this message, and when it arrived (0n: not observed). */
  readonly readStart: bigint;
  readonly readEnd: bigint;
  /** INFER_RESPONSE_COMPLETE of the response being sent. */
  responded: bigint;
  /** The read timestamps are on the trace. */
  readCaptured: boolean;
}

/** A non-decoupled request's place in the response order. */
interface Slot {
  pieces: Buffer[] | undefined;
  sent: boolean;
  /** The request's exchange, observed when its response is written. */
  exchange?: Exchange;
  /** Runs once the response has been written (the request's trace and log line end then). */
  onSent?: () => void;
}

const NO_OUTPUTS: ResponseFields['outputs'] = [];

/** A message that could not be read: the request fails, in order, with this. */
class Unread {
  constructor(readonly error: unknown) {}
}

/** A request's handle (or why it has none) and its place in the response order (none: decoupled). */
interface Placement {
  readonly model: ResolvedModel | undefined;
  readonly slot: Slot | undefined;
  readonly lookupError: unknown;
}

export class StreamInfer {
  private inFlight = 0;
  private inputEnded = false;
  private closing = false;
  private readonly controllers = new Set<AbortController>();
  private readonly order: Slot[] = [];
  /** `triton_grpc_error: true`: errors end the stream with a status. */
  private readonly errorMode: boolean;
  private idleTimer: NodeJS.Timeout | undefined;
  /** When the stream last had nothing in flight (performance.now()). */
  private idleSince = 0;
  /** Traced or logged requests read the clock: when the stream began waiting for the next message. */
  private readonly observed: boolean;
  private waitStart: bigint;
  /** The stream's `nereid-model-variant` metadata: every request on it goes to `<model>.<variant>`. */
  private readonly variant: string | undefined;

  constructor(
    private readonly api: InferenceServerApi,
    private readonly call: ServerCall,
    private readonly log: Logger,
    private readonly onDone: () => void,
    private readonly idleTimeoutMs = 0,
    /** Metadata forwarded to every request of the stream (`--grpc-header-forward-pattern`). */
    private readonly forwarded?: Readonly<Record<string, string>>,
    private readonly observers: StreamObservers = {},
  ) {
    this.errorMode = call.metadata('triton_grpc_error') === 'true';
    this.variant = call.metadata(MODEL_VARIANT_HEADER);
    this.observed = observers.accessLog !== undefined || api.startTrace !== undefined;
    this.waitStart = this.observed ? process.hrtime.bigint() : 0n;
    call.stream.once('close', () => {
      if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
      // Answered requests still waiting for an earlier one's response will never be written: they end now.
      for (const slot of this.order.splice(0)) {
        if (slot.onSent === undefined) continue;
        if (slot.exchange) slot.exchange.status = Status.CANCELLED;
        slot.onSent();
      }
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
      streaming: true,
    });
  }

  /** The server is closing: refuse new requests, end the stream once the running ones are answered. */
  shutdown(): void {
    this.closing = true;
    this.maybeFinish();
  }

  private onMessage(message: Buffer): void {
    // The idle timer is left running: it sees the request in flight when it fires (clearing and
    // re-arming a timer per request was measurable with one request at a time).
    this.inFlight++;
    let readStart = 0n;
    let readEnd = 0n;
    if (this.observed) {
      // As in Triton: the wait for the next message starts as this one is taken.
      readStart = this.waitStart;
      readEnd = process.hrtime.bigint();
      this.waitStart = readEnd;
    }
    const exchange: Exchange = {
      model: '',
      version: '',
      requestId: '',
      bytesIn: message.length,
      bytesOut: 0,
      status: Status.OK,
      readStart,
      readEnd,
      responded: 0n,
      readCaptured: false,
    };
    void this.run(message, exchange).finally(() => {
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
      this.inputEnded
    )
      return;
    this.idleSince = performance.now();
    if (this.idleTimer === undefined) this.startIdleTimer(this.idleTimeoutMs);
  }

  private startIdleTimer(ms: number): void {
    this.idleTimer = setTimeout(() => this.idleCheck(), ms);
    this.idleTimer.unref();
  }

  /** The idle timer fired: end the stream if nothing ran since it went idle, else wait out the rest. */
  private idleCheck(): void {
    this.idleTimer = undefined;
    // Busy: the last request to finish starts the idle time again.
    if (this.inFlight > 0 || this.call.finished || this.inputEnded) return;
    const left = this.idleSince + this.idleTimeoutMs - performance.now();
    if (left >= 1) {
      this.startIdleTimer(left);
      return;
    }
    this.call.finish({ code: Status.UNAVAILABLE, details: idleStreamMessage(this.idleTimeoutMs) });
  }

  private async run(message: Buffer, exchange: Exchange): Promise<void> {
    const controller = takeController();
    this.controllers.add(controller);
    const parsed = this.read(message);
    const wire = parsed instanceof Unread ? undefined : parsed;
    // Synchronous unless the model is loading: no turn of its own (core/call.ts, performance rules).
    const placing = wire === undefined ? this.placeUnread(exchange) : this.resolve(wire, exchange);
    const place = placing instanceof Promise ? await placing : placing;
    const { model, slot } = place;
    if (wire !== undefined) this.observe(wire, model, exchange);
    let started = false;
    try {
      if (wire === undefined) throw (parsed as Unread).error;
      const { responses, enableEmptyFinalResponse } = this.start(wire, place, controller, exchange);
      started = true;
      let final = false;
      for await (const r of responses) {
        if (r.final) final = true;
        // Back-pressure: the next response is taken once the client has read enough of this one.
        if (this.deliver(r, wire, slot, enableEmptyFinalResponse, exchange)) await this.call.whenWritable();
      }
      if (!final) this.endUnfinished(wire, slot, enableEmptyFinalResponse, exchange);
    } catch (err) {
      this.fail(err, wire, slot, started, exchange);
    } finally {
      this.settle(model, controller, slot, exchange);
    }
  }

  /** Starts the request on its model (throws what refuses it: shutdown, its contents, its lookup). */
  private start(
    wire: WireInferRequest,
    place: Placement,
    controller: AbortController,
    exchange: Exchange,
  ): { responses: AsyncIterable<InferenceResponse>; enableEmptyFinalResponse: boolean } {
    if (this.closing) throw unavailable(SHUTTING_DOWN_MESSAGE);
    const { request, enableEmptyFinalResponse } = toInferenceRequest(wire);
    const model = place.model;
    if (model === undefined) throw place.lookupError;
    const { trace, timings } = exchange;
    const responses = streamCall(model, request, {
      signal: controller.signal,
      trace,
      timings,
      forwarded: this.forwarded,
    });
    return { responses, enableEmptyFinalResponse };
  }

  /** Sends one response of the model; false when there was nothing to send (a flag-only final kept back). */
  private deliver(
    r: InferenceResponse,
    wire: WireInferRequest,
    slot: Slot | undefined,
    enableEmptyFinalResponse: boolean,
    exchange: Exchange,
  ): boolean {
    if (exchange.trace) exchange.responded = process.hrtime.bigint();
    if (slot === undefined && r.final && r.outputs.length === 0) {
      // A decoupled model's flag-only final response.
      if (enableEmptyFinalResponse) this.emit(undefined, this.emptyFinal(wire), exchange);
      return false;
    }
    this.emit(slot, this.response(r), exchange);
    return true;
  }

  /** The model ended the request without a final response. */
  private endUnfinished(
    wire: WireInferRequest,
    slot: Slot | undefined,
    enableEmptyFinalResponse: boolean,
    exchange: Exchange,
  ): void {
    if (slot === undefined && enableEmptyFinalResponse) this.emit(undefined, this.emptyFinal(wire), exchange);
    if (slot !== undefined) this.emit(slot, this.response(undefined, wire), exchange);
  }

  /** The request is done here: its handle and signal go, and it is observed once its response is out. */
  private settle(
    model: ResolvedModel | undefined,
    controller: AbortController,
    slot: Slot | undefined,
    exchange: Exchange,
  ): void {
    model?.release();
    // Out of the set, nothing here aborts it any more: a clean signal serves the next request.
    this.controllers.delete(controller);
    returnController(controller);
    // A decoupled request's responses are all out; an ordered one's may wait for earlier requests.
    if (slot === undefined || slot.sent || this.call.stream.closed) this.observeEnd(exchange);
    else slot.onSent = () => this.observeEnd(exchange);
  }

  /** The message's request, for the model the stream's variant names; or why it could not be read. */
  private read(message: Buffer): WireInferRequest | Unread {
    try {
      const wire = parseInferRequest(message);
      if (this.variant !== undefined) wire.modelName = modelForVariant(wire.modelName, this.variant);
      return wire;
    } catch (err) {
      return new Unread(err);
    }
  }

  /**
   * One lookup per request, on arrival (resolveCall): the handle holds the version it resolved until
   * released. A non-decoupled request (or one whose model is unknown: it fails in order) takes its slot in
   * the response order still synchronously with the message's arrival, so slots are taken in request order.
   */
  private resolve(wire: WireInferRequest, exchange: Exchange): Placement | Promise<Placement> {
    let model: ResolvedModel | Promise<ResolvedModel> | undefined;
    let lookupError: unknown;
    try {
      model = resolveCall(this.api, wire.modelName, wire.modelVersion === '' ? undefined : wire.modelVersion);
    } catch (err) {
      lookupError = err; // unknown model: the request fails below, in order
    }
    if (model instanceof Promise) return this.resolveLoading(model, exchange);
    const slot = model === undefined || !model.decoupled ? this.takeSlot(exchange) : undefined;
    return { model, slot, lookupError };
  }

  /**
   * On-demand mode, the model is loading: its slot is taken now, in request order, then given back if the
   * model turns out decoupled (whose responses are not ordered).
   */
  private async resolveLoading(loading: Promise<ResolvedModel>, exchange: Exchange): Promise<Placement> {
    const slot = this.takeSlot(exchange);
    let model: ResolvedModel;
    try {
      model = await loading;
    } catch (lookupError) {
      return { model: undefined, slot, lookupError };
    }
    if (!model.decoupled) return { model, slot, lookupError: undefined };
    this.order.splice(this.order.indexOf(slot), 1);
    this.flushOrdered();
    return { model, slot: undefined, lookupError: undefined };
  }

  /** A message that could not be read fails in order. */
  private placeUnread(exchange: Exchange): Placement {
    return { model: undefined, slot: this.takeSlot(exchange), lookupError: undefined };
  }

  private takeSlot(exchange: Exchange): Slot {
    const slot: Slot = { pieces: undefined, sent: false, exchange };
    this.order.push(slot);
    return slot;
  }

  /** The request as its trace (sampled per request) and access-log line see it. */
  private observe(wire: WireInferRequest, model: ResolvedModel | undefined, exchange: Exchange): void {
    exchange.model = wire.modelName;
    exchange.version = model?.version ?? wire.modelVersion;
    exchange.requestId = wire.id;
    const trace = this.api.startTrace?.(wire.modelName, this.observers.carrier);
    if (trace) exchange.trace = trace;
    if (this.observers.accessLog) exchange.timings = { queueNs: 0, computeNs: 0 };
  }

  /** The request is over: its trace ends and its access-log line is written. */
  private observeEnd(exchange: Exchange): void {
    const trace = exchange.trace;
    if (trace) {
      this.traceRead(exchange);
      trace.end(exchange.status);
    }
    const accessLog = this.observers.accessLog;
    if (!accessLog) return;
    const t = exchange.timings;
    const computed = t !== undefined && (t.queueNs > 0 || t.computeNs > 0);
    accessLog.write({
      protocol: 'grpc',
      model: exchange.model,
      version: exchange.version,
      status: exchange.status,
      bytesIn: exchange.bytesIn,
      bytesOut: exchange.bytesOut,
      durationNs: Number(process.hrtime.bigint() - exchange.readStart),
      ...(computed && { queueNs: t.queueNs, computeNs: t.computeNs }),
      client: this.observers.client ?? '',
      requestId: exchange.requestId,
      traceId: trace?.traceId ?? '',
    });
  }

  /** The read timestamps, written with the first response (Triton writes its timestamps as they go out). */
  private traceRead(exchange: Exchange): void {
    const trace = exchange.trace;
    if (!trace || exchange.readCaptured || exchange.readStart === 0n) return;
    exchange.readCaptured = true;
    trace.capture('GRPC_WAITREAD_START', exchange.readStart);
    trace.capture('GRPC_WAITREAD_END', exchange.readEnd);
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
      modelName: r.modelName,
      modelVersion: r.modelVersion,
      id: r.id,
      outputs: r.outputs,
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
    exchange: Exchange,
  ): void {
    if (this.call.finished) {
      exchange.status = Status.CANCELLED;
      return;
    }
    const status = toGrpcError(err, { log: this.log, method: this.call.method, requestId: wire?.id });
    exchange.status = status.code;
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
    this.emit(slot, encodeStreamResponse(status.details, fields), exchange);
  }

  /** Sends at once (decoupled), or when every earlier non-decoupled request has been answered. */
  private emit(slot: Slot | undefined, pieces: Buffer[], exchange: Exchange): void {
    if (slot === undefined) {
      this.send(pieces, exchange);
      return;
    }
    slot.pieces = pieces;
    this.flushOrdered();
  }

  /** Sends the ordered responses that are ready, oldest request first. */
  private flushOrdered(): void {
    while (this.order.length > 0 && this.order[0].pieces !== undefined) {
      const next = this.order.shift()!;
      this.send(next.pieces!, next.exchange);
      next.sent = true;
      next.onSent?.();
    }
  }

  /** Writes one response, with its trace's send timestamps and its bytes counted for the access log. */
  private send(pieces: Buffer[], exchange: Exchange | undefined): void {
    const trace = exchange?.trace;
    if (trace) {
      this.traceRead(exchange);
      if (exchange.responded !== 0n) trace.capture('INFER_RESPONSE_COMPLETE', exchange.responded);
      trace.capture('GRPC_SEND_START');
    }
    this.call.send(pieces);
    if (trace) trace.capture('GRPC_SEND_END');
    if (exchange) for (const p of pieces) exchange.bytesOut += p.length;
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
