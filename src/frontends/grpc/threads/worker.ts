/**
 * One gRPC protocol thread (--grpc-infer-thread-count; pool.ts starts them). Each has a listener of its own
 * on the gRPC port (SO_REUSEPORT: the kernel spreads connections over the threads) and the same port as the
 * main thread's frontend (server.ts createGrpcPort: HTTP/2, connection lifecycle and caps, the checks every
 * stream passes, gRPC framing and compression). ModelInfer it serves itself: the message is decoded and
 * checked by the main thread's own functions (infer-request.ts), the decoded request goes to the main
 * thread, which runs it through the core's one inference call (pool.ts), and the answer is encoded here
 * (infer-response.ts).
 *
 * Every other stream — the other rpcs, ModelStreamInfer, unknown paths, and every call while the access
 * log is on — is forwarded as it came to the main thread's own gRPC server on 127.0.0.1 (forward.ts). A
 * request Triton's rules refuse (toInferenceRequest) still goes to the main thread, with the reason, so that
 * an unknown model or a decoupled one is reported first, as without threads.
 */
import type { IncomingHttpHeaders } from 'node:http2';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { NereidError, type ErrorCode } from '../../../common/errors.js';
import { Logger } from '../../../common/logger.js';
import type { DecodedRequest } from '../../../core/index.js';
import { MODEL_VARIANT_HEADER, modelForVariant } from '../../model-variant.js';
import type { RequestCounter } from '../../request-counts.js';
import {
  Coalescer,
  ownedBuffer,
  packTensors,
  unpackTensors,
  type TurnBatch,
  type ThreadControl,
  type ThreadStatus,
} from '../../threads/wire.js';
import type { InferContext } from '../infer.js';
import { parseInferRequest, toInferenceRequest } from '../infer-request.js';
import { encodeInferResponse } from '../infer-response.js';
import {
  compressInferResponses,
  createGrpcPort,
  grpcSettings,
  MODEL_INFER_PATH,
  runUnary,
  type GrpcFrontend,
  type GrpcSettings,
} from '../server.js';
import type { ServerCall } from '../transport/call.js';
import { GrpcStatusError, Status, type StatusCode } from '../transport/status.js';
import { StreamForwarder } from './forward.js';
import type { GrpcThreadData, GrpcToMain, GrpcToThread } from './wire.js';

type FromMain = GrpcToThread | ThreadControl | TurnBatch<GrpcToThread | ThreadControl>;
type Settled = GrpcToThread & { t: 'answer' | 'failed' };

/** How long a thread's request counts wait to be sent to the main thread's metrics. */
const COUNT_FLUSH_MS = 100;

const header = (v: string | string[] | undefined): string | undefined =>
  typeof v === 'string' ? v : undefined;

class GrpcProtocolThread {
  private readonly toMain: Coalescer<GrpcToMain>;
  /** ModelInfer calls sent to the main thread, by id, waiting for its answer. */
  private readonly pending = new Map<number, (m: Settled) => void>();
  private nextId = 1;
  /** Finished calls by `<code> <rpc>` since the last flush. */
  private readonly counts = new Map<string, number>();
  private countTimer: NodeJS.Timeout | undefined;
  private readonly log: Logger;
  private readonly settings: GrpcSettings;
  private readonly forwarder: StreamForwarder;
  private readonly server: GrpcFrontend;

  constructor(
    private readonly data: GrpcThreadData,
    private readonly port: MessagePort,
  ) {
    this.toMain = new Coalescer<GrpcToMain>((m, transfer) => port.postMessage(m, transfer));
    // Lines go out through the main thread's logger (its sink, the dashboard's recent lines aside).
    this.log = new Logger(data.logSettings, (line) => this.toMain.post({ t: 'log', line }));
    const counts: RequestCounter = { http: () => {}, grpc: (rpc, code) => this.count(rpc, code) };
    this.settings = grpcSettings(data.serverToken, data.options);
    this.forwarder = new StreamForwarder(data.internalPort, {
      stream: this.settings.streamWindow,
      connection: this.settings.connectionWindow,
    });
    this.server = createGrpcPort(
      this.settings,
      { log: this.log, requestCounts: counts, address: data.address, port: data.port, reusePort: true },
      {
        startCall: (call, path, headers, raw) => this.startCall(call, path, headers, raw),
        take: (stream, headers) => {
          if (data.fastPath && headers[':path'] === MODEL_INFER_PATH) return false;
          this.forwarder.forward(stream, headers);
          return true;
        },
        where: ` on protocol thread ${data.index + 1}`,
      },
    );
    port.on('message', (m: FromMain) => this.receive(m));
  }

  listen(): void {
    this.server.listen().then(
      (bound) => this.post({ t: 'listening', address: bound.address, port: bound.port }),
      (err: Error & { code?: string }) => this.post({ t: 'error', code: err.code, message: err.message }),
    );
  }

  /**
   * A finished call, for nereid_grpc_requests_total: counted here and sent every COUNT_FLUSH_MS, not as a
   * message of its own per call (a call ends in a later turn than its answer: one more wake-up each).
   */
  private count(rpc: string, code: number): void {
    const key = `${code} ${rpc}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (this.countTimer === undefined) {
      this.countTimer = setTimeout(() => {
        this.countTimer = undefined;
        const entries = [...this.counts];
        this.counts.clear();
        this.toMain.post({ t: 'counts', entries });
      }, COUNT_FLUSH_MS);
      this.countTimer.unref();
    }
  }

  private post(m: ThreadStatus): void {
    this.port.postMessage(m);
  }

  private receive(m: FromMain): void {
    switch (m.t) {
      case 'batch':
        for (const item of m.items) this.receive(item);
        break;
      case 'answer':
      case 'failed': {
        const settle = this.pending.get(m.id);
        if (settle !== undefined) {
          this.pending.delete(m.id);
          settle(m);
        }
        break;
      }
      case 'log-settings':
        Object.assign(this.log.settings, m.settings);
        break;
      case 'drain':
        break;
      case 'close':
        void this.server.close().then(() => {
          this.forwarder.close();
          this.post({ t: 'closed' });
        });
        break;
    }
  }

  /** A ModelInfer the port admitted (the only rpc not forwarded). */
  private startCall(
    call: ServerCall,
    path: string,
    headers: IncomingHttpHeaders,
    raw: readonly string[],
  ): void {
    if (path !== MODEL_INFER_PATH) {
      call.finish({ code: Status.UNIMPLEMENTED, details: `Method not found: ${path}` });
      return;
    }
    compressInferResponses(call, this.settings.compression);
    const forwarded = this.settings.forwardHeaders?.parameters(raw);
    const variant = call.metadata(MODEL_VARIANT_HEADER);
    runUnary(
      call,
      (message, ctx) => this.modelInfer(call, headers, message, ctx, forwarded, variant),
      false,
      this.log,
      undefined,
    );
  }

  /** Decodes here, runs on the main thread, encodes here: infer.ts modelInfer split at the core's call. */
  private async modelInfer(
    call: ServerCall,
    headers: IncomingHttpHeaders,
    message: Buffer,
    ctx: InferContext,
    forwarded: Readonly<Record<string, string>> | undefined,
    variant: string | undefined,
  ): Promise<Buffer[]> {
    const wire = parseInferRequest(message);
    if (variant !== undefined) wire.modelName = modelForVariant(wire.modelName, variant);
    ctx.requestId = wire.id;
    let invalid: { code: ErrorCode; message: string } | undefined;
    let request: DecodedRequest | undefined;
    const transfer: ArrayBuffer[] = [];
    try {
      const decoded = toInferenceRequest(wire).request;
      request = { ...decoded, inputs: packTensors(decoded.inputs, transfer, ownedBuffer(message)) };
    } catch (err) {
      if (!(err instanceof NereidError)) throw err;
      invalid = { code: err.code, message: err.message };
    }
    const id = this.nextId++;
    const settled = new Promise<Settled>((resolve) => this.pending.set(id, resolve));
    const signal = call.signal;
    const onAbort = (): void => {
      if (this.pending.has(id)) this.toMain.post({ t: 'cancel', id });
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.toMain.post(
      {
        t: 'infer',
        id,
        model: wire.modelName,
        version: wire.modelVersion,
        requestId: wire.id,
        traceparent: header(headers.traceparent),
        tracestate: header(headers.tracestate),
        authority: header(headers[':authority']),
        forwarded,
        request,
        invalid,
      },
      transfer,
    );
    const m = await settled;
    signal.removeEventListener('abort', onAbort);
    if (m.t === 'failed') throw new GrpcStatusError(m.code as StatusCode, m.details);
    return encodeInferResponse({ ...m.response, outputs: unpackTensors(m.response.outputs) });
  }
}

const data = workerData as GrpcThreadData | undefined;
if (parentPort !== null && data?.nereidGrpcThread === true) new GrpcProtocolThread(data, parentPort).listen();
