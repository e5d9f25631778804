/**
 * One gRPC call on one HTTP/2 stream: reads length-prefixed request messages (decompressing them in order
 * when the client compressed them), writes response messages (compressed, in order, when the server
 * compresses this call's responses), and ends the call with the `grpc-status` / `grpc-message` trailers
 * (a trailers-only response when nothing was sent yet). The call's AbortSignal fires when the client
 * cancels, the connection drops, or the deadline (`grpc-timeout`) passes. Request bytes the call holds
 * are counted on its connection's budget and given back when the call ends.
 */
import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { ACCEPT_ENCODING, compressFramed, decompress, type Encoding } from './compression.js';
import type { CallTransport } from './connection.js';
import { drainOrClose } from '../../drain.js';
import { MessageReader, encodeGrpcMessage, parseTimeout } from './framing.js';
import { returnController, takeController } from '../../signal-pool.js';
import { GrpcStatusError, Status, type GrpcError } from './status.js';

/** Sizes one call accepts. */
export interface CallLimits {
  /** Largest request message as sent (compressed or not). */
  readonly maxMessageSize: number;
  /** Largest request message after decompression. */
  readonly maxDecompressedSize: number;
  /**
   * `--grpc-request-read-timeout`: a unary call's request (from its start to the client's half-close), or
   * a streaming call's message once its first byte arrived, must arrive within this; 0 / absent = none.
   */
  readonly requestReadTimeoutMs?: number;
}

export interface CallHandlers {
  /** A complete request message (already decompressed). */
  onMessage(message: Buffer): void;
  /** The client finished sending (half-close). */
  onEnd(): void;
  /** The call ended abnormally before finish(): cancellation, reset, deadline or a framing error. */
  onAbort?(): void;
  /** A streaming call: the read deadline covers each message once it started, not the wait for one. */
  readonly streaming?: boolean;
}

const OK: GrpcError = { code: Status.OK, details: '' };
const RESPONSE_HEADERS = Object.freeze({
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': ACCEPT_ENCODING,
});

export type ResponseHeaders = Readonly<Record<string, string | number>>;

/**
 * The response headers of every call of a frontend: gRPC's own plus `server: <product>` (a metadata key
 * clients see in a call's initial metadata, common/product.ts). Built once per frontend.
 */
export function responseHeaders(product: string): ResponseHeaders {
  return Object.freeze({ ...RESPONSE_HEADERS, server: product });
}
const WAIT_FOR_TRAILERS = Object.freeze({ waitForTrailers: true });

export class ServerCall {
  /** Taken from the pool when the signal is first asked for; given back by finish() if still clean. */
  private controller: AbortController | undefined;
  /** Why the call was aborted (cancel, reset, deadline, framing error), kept for a signal asked for later. */
  private abortReason: GrpcStatusError | undefined;
  private headersSent = false;
  private done = false;
  private endedWith: number | undefined;
  private inputEnded = false;
  private deadline: NodeJS.Timeout | undefined;
  /** The request read deadline (CallLimits.requestReadTimeoutMs), while it runs. */
  private readTimer: NodeJS.Timeout | undefined;
  /** Decompression is asynchronous: messages are handed on through this chain to keep their order. */
  private pending: Promise<void> | undefined;
  private handlers: CallHandlers | undefined;
  private reader: MessageReader | undefined;
  /** Responses are compressed under this encoding (see compress()). */
  private encoding: Encoding | undefined;
  /** Compression is asynchronous: responses are written through this chain to keep their order. */
  private sending: Promise<void> | undefined;

  constructor(
    readonly stream: ServerHttp2Stream,
    readonly method: string,
    readonly headers: IncomingHttpHeaders,
    private readonly limits: CallLimits,
    private readonly transport?: CallTransport,
    private readonly replyHeaders: ResponseHeaders = RESPONSE_HEADERS,
  ) {
    // Stream errors (resets, protocol errors) surface as 'close' (the server keeps an 'error' listener).
    stream.on('close', () => {
      if (this.deadline) clearTimeout(this.deadline);
      this.stopReadTimer();
      this.reader?.dispose();
      if (!this.done) {
        this.done = true;
        this.endedWith = Status.CANCELLED;
        this.abort(new GrpcStatusError(Status.CANCELLED, 'the client cancelled the call'));
        this.handlers?.onAbort?.();
      }
    });
    const timeoutMs = parseTimeout(headerString(headers['grpc-timeout']));
    if (timeoutMs !== undefined) {
      this.deadline = setTimeout(() => this.fail(Status.DEADLINE_EXCEEDED, 'Deadline Exceeded'), timeoutMs);
      this.deadline.unref();
    }
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = takeController();
      // Asked for only after the call was aborted: the request must still see it aborted.
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  private abort(reason: GrpcStatusError): void {
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /** True once the call was finished or aborted. */
  get finished(): boolean {
    return this.done;
  }

  /** The status the call ended with (CANCELLED when the client went away first); undefined while it runs. */
  get outcome(): number | undefined {
    return this.endedWith;
  }

  /** Client metadata (an HTTP/2 header) as a string. */
  metadata(key: string): string | undefined {
    return headerString(this.headers[key]);
  }

  /**
   * Compresses this call's responses under `encoding` (the response header `grpc-encoding` says so); call
   * before the first send().
   */
  compress(encoding: Encoding): void {
    if (!this.headersSent) this.encoding = encoding;
  }

  /** Starts reading request messages. */
  start(handlers: CallHandlers): void {
    this.handlers = handlers;
    const encoding = this.metadata('grpc-encoding') ?? 'identity';
    const transport = this.transport;
    const reader = new MessageReader(this.limits.maxMessageSize, transport?.budget);
    this.reader = reader;
    const streaming = handlers.streaming === true;
    if (!streaming) this.startReadTimer();
    this.stream.on('data', (chunk: Buffer) => {
      transport?.received(chunk.length);
      if (this.done) return;
      let messages;
      try {
        messages = reader.push(chunk);
      } catch (err) {
        reader.dispose();
        const e = err as GrpcStatusError;
        this.fail(e.code, e.message);
        return;
      }
      if (streaming) {
        if (reader.partial) this.startReadTimer();
        else this.stopReadTimer();
      }
      if (messages.length > 0) transport?.messageArrived(this.stream);
      for (const m of messages) {
        if (this.done) break; // e.g. a unary call refused its second message
        if (!m.compressed && this.pending === undefined) {
          handlers.onMessage(m.data);
          continue;
        }
        const previous = this.pending ?? Promise.resolve();
        this.pending = previous
          .then(() =>
            m.compressed
              ? decompress(m.data, encoding, this.limits.maxDecompressedSize, transport?.budget)
              : m.data,
          )
          .then((data) => {
            if (!this.done) handlers.onMessage(data);
          })
          .catch((err: unknown) => {
            const e =
              err instanceof GrpcStatusError ? err : new GrpcStatusError(Status.INTERNAL, String(err));
            this.fail(e.code, e.message);
          });
      }
    });
    this.stream.on('end', () => {
      this.inputEnded = true;
      this.stopReadTimer();
      if (this.done) return;
      if (reader.partial) {
        this.fail(Status.INTERNAL, 'the request stream ended inside a message');
        return;
      }
      if (this.pending === undefined) handlers.onEnd();
      else void this.pending.then(() => this.done || handlers.onEnd());
    });
  }

  /** Arms the request read deadline unless it runs already (or there is none). */
  private startReadTimer(): void {
    const ms = this.limits.requestReadTimeoutMs ?? 0;
    if (ms <= 0 || this.readTimer !== undefined || this.done) return;
    this.readTimer = setTimeout(() => {
      this.readTimer = undefined;
      this.fail(
        Status.DEADLINE_EXCEEDED,
        `the request message did not arrive within ${ms} ms (--grpc-request-read-timeout)`,
      );
    }, ms);
    this.readTimer.unref();
  }

  private stopReadTimer(): void {
    if (this.readTimer === undefined) return;
    clearTimeout(this.readTimer);
    this.readTimer = undefined;
  }

  /** Sends one framed response message (given as pieces). Never throws: a broken stream is dropped. */
  send(pieces: readonly Buffer[]): void {
    if (this.done || this.stream.destroyed) return;
    const encoding = this.encoding;
    if (encoding === undefined) {
      this.write(pieces);
      return;
    }
    this.respondHeaders();
    const previous = this.sending ?? Promise.resolve();
    this.sending = previous
      .then(() => compressFramed(pieces, encoding))
      .then(
        (compressed) => this.write(compressed),
        () => this.write(pieces), // zlib failed (out of memory): the uncompressed message is still valid
      );
  }

  /**
   * Resolves once the messages sent so far are compressed and the HTTP/2 stream's buffer is below its
   * high-water mark (a 'drain'), or the call is over: a streaming caller awaits it before taking the next
   * response, so a client that reads slowly holds back the model instead of filling the server's memory.
   */
  whenWritable(): Promise<void> {
    const ready = (): Promise<void> => {
      const s = this.stream;
      if (this.done || s.destroyed || !s.writableNeedDrain) return Promise.resolve();
      return drainOrClose(s);
    };
    const pending = this.sending;
    return pending === undefined ? ready() : pending.then(ready, ready);
  }

  private write(pieces: readonly Buffer[]): void {
    if (this.stream.destroyed) return;
    this.guard(() => {
      this.respondHeaders();
      const transport = this.transport;
      transport?.dataSent();
      // Each write tells the connection when it has left the stream (see CallTransport.writing).
      const flushed = transport === undefined ? undefined : (): void => transport.writing(-1);
      if (pieces.length === 1) {
        transport?.writing(1);
        this.stream.write(pieces[0], flushed);
        return;
      }
      this.stream.cork();
      for (const p of pieces) {
        transport?.writing(1);
        this.stream.write(p, flushed);
      }
      this.stream.uncork();
    });
  }

  /** Ends the call with OK (after the messages sent). */
  finishOk(): void {
    this.finish(OK);
  }

  /** Ends the call with a status: trailers after messages, or a trailers-only response. */
  finish(status: GrpcError): void {
    if (this.done) return;
    this.done = true;
    this.endedWith = status.code;
    if (this.deadline) clearTimeout(this.deadline);
    this.stopReadTimer();
    this.reader?.dispose(); // a message still arriving will never be read
    // Nothing aborts the signal after this point (the 'close' handler checks `done`); an aborted one
    // stays here, so the signal reads aborted even if asked for after the end.
    if (this.controller && !this.controller.signal.aborted) {
      returnController(this.controller);
      this.controller = undefined;
    }
    if (this.sending !== undefined) {
      // Compressed responses are still on their way: the trailers follow them.
      void this.sending.then(() => this.end(status));
      return;
    }
    this.end(status);
  }

  private end(status: GrpcError): void {
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    this.transport?.dataSent();
    const trailers: Record<string, string> = { 'grpc-status': String(status.code) };
    if (status.details !== '') trailers['grpc-message'] = encodeGrpcMessage(status.details);
    this.guard(() => {
      if (this.headersSent) {
        // Trailers follow the queued messages; a client still sending is left to stop on its own (a
        // reset here could overtake them).
        // 'wantTrailers' fires once per stream: a plain listener spares once()'s wrapper.
        stream.on('wantTrailers', () => this.guard(() => stream.sendTrailers(trailers)));
        stream.end();
        return;
      }
      this.headersSent = true;
      stream.respond({ ...this.replyHeaders, ...trailers }, { endStream: true });
      // Answered before the client finished sending: stop the upload instead of draining it. The reset
      // follows the trailers-only HEADERS frame, already submitted.
      if (!this.inputEnded) {
        setImmediate(() => this.guard(() => stream.destroyed || stream.close(constants.NGHTTP2_NO_ERROR)));
      }
    });
  }

  /** Runs a stream operation; if the stream broke underneath (a reset racing us), drops the stream. */
  private guard(op: () => void): void {
    try {
      op();
    } catch {
      this.stream.destroy();
    }
  }

  /** Ends the call with an error status and aborts its work. */
  fail(code: GrpcError['code'], details: string): void {
    if (this.done) return;
    this.abort(new GrpcStatusError(code, details));
    this.finish({ code, details });
    this.handlers?.onAbort?.();
  }

  private respondHeaders(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.stream.respond(
      this.encoding === undefined
        ? this.replyHeaders
        : { ...this.replyHeaders, 'grpc-encoding': this.encoding },
      WAIT_FOR_TRAILERS,
    );
  }
}

function headerString(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(',') : v;
}
