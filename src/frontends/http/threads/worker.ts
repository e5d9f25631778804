/**
 * One HTTP protocol thread (--http-thread-count; pool.ts starts them). Each has a listener of its own on the
 * HTTP port (SO_REUSEPORT: the kernel spreads connections over the threads) and does the protocol work of
 * `POST /v2/models/<m>[/versions/<v>]/infer` itself — HTTP framing, reading the body, decompression,
 * decoding the JSON and binary tensors, encoding and compressing the answer — with the same functions the
 * main thread's route uses (infer-codec.ts, transport/body.ts). The decoded request goes to the main
 * thread, which runs it through the core's one inference call (pool.ts).
 *
 * Every other request, and every inference request the thread cannot answer exactly as the main thread
 * would (a decoding error, a raw binary body, a model variant, a JSON header big enough for the JSON pool,
 * settings that need the main thread's view of each request), is forwarded as it came — its body as read —
 * to the main thread's own HTTP server on 127.0.0.1, and its answer relayed byte for byte (forward.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { decodeInferRequest, inferenceHeaderLength, type DecodedInferRequest } from '../infer-codec.js';
import { MODEL_VARIANT_HEADER } from '../../model-variant.js';
import { matchRoute } from '../router.js';
import { declaredLength, decodeContentEncoding, isBodyTooLarge, readBody } from '../transport/body.js';
import { answerMalformed } from '../transport/malformed.js';
import { framingError } from '../transport/request-framing.js';
import { limitConnections, type ConnectionLimit } from '../transport/connection-limits.js';
import { Forwarder } from './forward.js';
import { writeError, writeErrorMessage, writeInferAnswer, type ReplyOptions } from './reply.js';
import {
  Coalescer,
  ownedBuffer,
  packTensors,
  unpackTensors,
  type TurnBatch,
  type ThreadControl,
  type ThreadStatus,
  type ThreadWorkerData,
  type ToMain,
  type ToThread,
} from './wire.js';

type Settled = ToThread;
type FromMain = ToThread | ThreadControl | TurnBatch<ToThread | ThreadControl>;

class ProtocolThread {
  private readonly toMain: Coalescer<ToMain>;
  /** Requests sent to the main thread, by id, waiting for its answer. */
  private readonly pending = new Map<number, (m: Settled) => void>();
  private nextId = 1;
  private closing = false;
  private readonly forwarder: Forwarder;
  private readonly server: http.Server;
  /** This thread's share of the connection caps (the whole server's: pool.ts). */
  private readonly connections: ConnectionLimit;

  constructor(
    private readonly data: ThreadWorkerData,
    private readonly port: MessagePort,
  ) {
    this.toMain = new Coalescer<ToMain>((m, transfer) => port.postMessage(m, transfer));
    this.forwarder = new Forwarder(data.internalPort);
    this.server = http.createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) =>
      this.route(req, res),
    );
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) =>
      answerMalformed(err, socket, data.serverHeader),
    );
    this.connections = limitConnections(this.server, {
      max: data.maxConnections,
      maxPerAddress: data.maxConnectionsPerAddress,
      overCapBody: data.overCapBody,
      overShareBody: data.overShareBody,
    });
    port.on('message', (m: FromMain) => this.receive(m));
  }

  listen(): void {
    const { server, data } = this;
    server.once('error', (err: NodeJS.ErrnoException) =>
      this.post({ t: 'error', code: err.code, message: err.message }),
    );
    const options = { host: data.address, port: data.port, backlog: data.backlog, reusePort: true };
    server.listen(options as never, () => {
      const a = server.address();
      if (a !== null && typeof a === 'object')
        this.post({ t: 'listening', address: a.address, port: a.port });
    });
  }

  private post(m: ThreadStatus): void {
    this.port.postMessage(m);
  }

  private replyOptions(closeConnection = false): ReplyOptions {
    return { serverHeader: this.data.serverHeader, closeConnection: this.closing || closeConnection };
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
      case 'drain':
        this.closing = true;
        break;
      case 'close':
        this.closing = true;
        this.server.close(() => {
          this.forwarder.close();
          this.post({ t: 'closed' });
        });
        this.server.closeIdleConnections();
        break;
    }
  }

  /** An inference request this thread can serve goes to infer(); everything else to the main thread. */
  private route(req: IncomingMessage, res: ServerResponse): void {
    const { data } = this;
    // Over the cap: refused as the main thread refuses (health checks excepted, then the connection closes).
    const refusal = this.connections.refusal(req.socket);
    if (refusal !== undefined) {
      if (!isHealthCheck(req.url ?? '/')) {
        writeError(res, 503, refusal, this.replyOptions(true));
        return;
      }
      res.shouldKeepAlive = false;
    }
    if (data.fastPath && req.method === 'POST' && req.headers[MODEL_VARIANT_HEADER] === undefined) {
      const match = matchInfer(req.url ?? '/');
      if (
        match !== undefined &&
        req.headers.upgrade === undefined &&
        framingError(req) === undefined &&
        (declaredLength(req) ?? 0) <= data.maxInputSize
      ) {
        void this.infer(req, res, match.model, match.version);
        return;
      }
    }
    this.forwarder.forward(req, res, undefined);
  }

  /** An inference request: decoded here, run on the main thread; anything unusual is forwarded. */
  private async infer(
    req: IncomingMessage,
    res: ServerResponse,
    model: string,
    version: string | undefined,
  ): Promise<void> {
    let raw: Buffer;
    try {
      raw = await readBody(req, this.data.maxInputSize);
    } catch (err) {
      // A chunked body past --http-max-input-size: refused and not drained, as the main thread does.
      if (isBodyTooLarge(err)) writeErrorMessage(res, 400, (err as Error).message, this.replyOptions(true));
      else if (!res.destroyed) res.destroy(); // the client went away
      return;
    }
    const decoded = await this.decode(req, raw, model, version);
    if (decoded === undefined) {
      // The main thread answers it: its errors come in its order (an unknown model before a bad body).
      this.forwarder.forward(req, res, raw);
      return;
    }
    const m = await this.runOnMain(req, res, model, version, decoded);
    if (m.t === 'failed') {
      writeError(res, m.status, m.body, this.replyOptions());
      return;
    }
    const response = { ...m.response, outputs: unpackTensors(m.response.outputs) };
    try {
      await writeInferAnswer(
        res,
        decoded.decoded,
        response,
        req.headers['accept-encoding'],
        this.replyOptions(),
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      writeErrorMessage(res, 500, `internal error: ${message}`, this.replyOptions());
    }
  }

  /** The body decompressed and decoded, or undefined when the main thread must see it (see the top). */
  private async decode(
    req: IncomingMessage,
    raw: Buffer,
    model: string,
    version: string | undefined,
  ): Promise<{ decoded: DecodedInferRequest; body: Buffer } | undefined> {
    const { maxInputSize, jsonThreshold } = this.data;
    try {
      const contentEncoding = req.headers['content-encoding'];
      const body =
        contentEncoding === undefined ? raw : await decodeContentEncoding(raw, contentEncoding, maxInputSize);
      const headerLength = inferenceHeaderLength(req.headers['inference-header-content-length'], body.length);
      if (headerLength === 0 || (headerLength ?? body.length) >= jsonThreshold) return undefined;
      const decoded = decodeInferRequest(body, headerLength, {
        modelName: model,
        modelVersion: version,
        maxInputSize,
      });
      return { decoded, body };
    } catch {
      return undefined;
    }
  }

  /** Sends the decoded request to the main thread (cancelled if the client goes) and waits for its answer. */
  private async runOnMain(
    req: IncomingMessage,
    res: ServerResponse,
    model: string,
    version: string | undefined,
    { decoded, body }: { decoded: DecodedInferRequest; body: Buffer },
  ): Promise<Settled> {
    const id = this.nextId++;
    const transfer: ArrayBuffer[] = [];
    const r = decoded.request;
    const request = { ...r, inputs: packTensors(r.inputs, transfer, ownedBuffer(body)) };
    const settled = new Promise<Settled>((resolve) => this.pending.set(id, resolve));
    const onClose = (): void => {
      if (!res.writableFinished && this.pending.has(id)) this.toMain.post({ t: 'cancel', id });
    };
    res.on('close', onClose);
    const tp = req.headers.traceparent;
    const ts = req.headers.tracestate;
    const traceparent = typeof tp === 'string' ? tp : undefined;
    const tracestate = typeof ts === 'string' ? ts : undefined;
    this.toMain.post({ t: 'infer', id, model, version, traceparent, tracestate, request }, transfer);
    const m = await settled;
    res.removeListener('close', onClose);
    return m;
  }
}

/** A liveness or readiness probe, which the connection cap never refuses (server.ts). */
function isHealthCheck(url: string): boolean {
  const q = url.indexOf('?');
  try {
    const name = matchRoute(q === -1 ? url : url.slice(0, q))?.name;
    return name === 'serverLive' || name === 'serverReady' || name === 'modelReady';
  } catch {
    return false;
  }
}

/** The model and version of an /infer path (its query string aside), or undefined for any other path. */
function matchInfer(url: string): { model: string; version: string | undefined } | undefined {
  const q = url.indexOf('?');
  let match;
  try {
    match = matchRoute(q === -1 ? url : url.slice(0, q));
  } catch {
    return undefined;
  }
  return match?.name === 'modelInfer' && match.model !== undefined
    ? { model: match.model, version: match.version }
    : undefined;
}

const data = workerData as ThreadWorkerData | undefined;
if (parentPort !== null && data?.nereidHttpThread === true) new ProtocolThread(data, parentPort).listen();
