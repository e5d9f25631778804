/**
 * One HTTP protocol thread (--http-thread-count; pool.ts starts them). Each has a listener of its own on the
 * HTTP port (SO_REUSEPORT: the kernel spreads connections over the threads) and does the protocol work of
 * `POST /v2/models/<m>[/versions/<v>]/infer` itself — HTTP framing, reading the body, decompression,
 * decoding the JSON and binary tensors, encoding and compressing the answer — with the same functions the
 * main thread's route uses (infer-codec.ts, transport/body.ts). The decoded request goes to the main
 * thread, which resolves the model and runs it through the core exactly as the route does (pool.ts).
 *
 * Every other request, and every inference request the thread cannot answer exactly as the main thread
 * would (a decoding error, a raw binary body, a model variant, a JSON header big enough for the JSON pool,
 * settings that need the main thread's view of each request), is forwarded as it came — its body as read —
 * to the main thread's own HTTP server on 127.0.0.1, and its answer relayed byte for byte.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import type { InferenceResponse } from '../../../core/index.js';
import { encodeInferResponse, inferenceHeaderLength, type DecodedInferRequest } from '../infer-codec.js';
import { decodeInferRequest } from '../infer-codec.js';
import { matchRoute } from '../router.js';
import { MODEL_VARIANT_HEADER } from '../../model-variant.js';
import {
  chooseResponseCoding,
  declaredLength,
  decodeContentEncoding,
  isBodyTooLarge,
  encodeResponse,
  readBody,
} from '../transport/body.js';
import { framingError } from '../transport/request-framing.js';
import { errorBody } from '../transport/errors.js';
import {
  Coalescer,
  ownedBuffer,
  packTensors,
  unpackTensors,
  type ThreadWorkerData,
  type ToMain,
  type ToThread,
} from './wire.js';

const JSON_TYPE = 'application/json';

interface Pending {
  resolve(m: ToThread & { t: 'answer' | 'failed' }): void;
}

function run(data: ThreadWorkerData, port: NonNullable<typeof parentPort>): void {
  const post = (m: ToMain, transfer?: ArrayBuffer[]): void => port.postMessage(m, transfer);
  const toMain = new Coalescer<ToMain>((m, transfer) => port.postMessage(m, transfer));
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let closing = false;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  const receive = (m: ToThread): void => {
    switch (m.t) {
      case 'batch':
        for (const item of m.items) receive(item);
        break;
      case 'answer':
      case 'failed': {
        const p = pending.get(m.id);
        if (p !== undefined) {
          pending.delete(m.id);
          p.resolve(m);
        }
        break;
      }
      case 'drain':
        closing = true;
        break;
      case 'close':
        closing = true;
        server.close(() => {
          agent.destroy();
          post({ t: 'closed' });
        });
        server.closeIdleConnections();
        break;
    }
  };
  port.on('message', receive);

  /** Sends `body` to the main thread's server as the request `req` and relays its answer. */
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer | undefined): void => {
    const headers = { ...req.headers };
    // The 100-continue exchange already happened here (Node answers it); the main thread gets the body.
    delete headers.expect;
    const out = http.request(
      {
        agent,
        host: '127.0.0.1',
        port: data.internalPort,
        method: req.method,
        path: req.url,
        headers,
      },
      (answer) => {
        if (res.destroyed) {
          answer.resume();
          return;
        }
        // The main thread's status line and headers as they are (its Date, Connection, Content-Length or
        // Transfer-Encoding), so the client sees what it would have seen without threads.
        res.sendDate = false;
        res.writeHead(answer.statusCode ?? 500, answer.statusMessage, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    if (body !== undefined) out.end(body);
    else req.pipe(out);
  };

  const reply = (
    res: ServerResponse,
    status: number,
    headers: readonly (string | number)[],
    body: string | Buffer | readonly Buffer[],
    closeConnection = false,
  ): void => {
    if (res.headersSent || res.destroyed) return;
    let length = 0;
    if (typeof body === 'string') length = Buffer.byteLength(body);
    else if (Buffer.isBuffer(body)) length = body.length;
    else for (const b of body) length += b.length;
    const raw: (string | number)[] = ['Server', data.serverHeader, ...headers, 'Content-Length', length];
    if (closing || closeConnection) raw.push('Connection', 'close');
    res.writeHead(status, raw);
    if (typeof body === 'string' || Buffer.isBuffer(body)) {
      res.end(body);
      return;
    }
    res.cork();
    for (const b of body) res.write(b);
    res.end();
  };

  /** The main thread's answer for one decoded request, encoded here as routes.ts encodes it. */
  const answer = async (
    res: ServerResponse,
    decoded: DecodedInferRequest,
    response: InferenceResponse,
    acceptEncoding: string | undefined,
  ): Promise<void> => {
    const coding = acceptEncoding === undefined ? 'identity' : chooseResponseCoding(acceptEncoding);
    const encoded = encodeInferResponse(response, decoded.format);
    if (!encoded.hasBinary) {
      if (coding === 'identity') return reply(res, 200, ['Content-Type', JSON_TYPE], encoded.json);
      const z = await encodeResponse(Buffer.from(encoded.json, 'utf8'), coding);
      return reply(res, 200, ['Content-Type', JSON_TYPE, 'Content-Encoding', coding], z);
    }
    const headerBytes = Buffer.byteLength(encoded.json, 'utf8');
    let size = headerBytes;
    for (const b of encoded.binary) size += b.length;
    const headers = [
      'Content-Type',
      'application/octet-stream',
      'Inference-Header-Content-Length',
      headerBytes,
    ];
    if (coding === 'identity' && size > BINARY_JOIN_MAX_BYTES) {
      return reply(res, 200, headers, [Buffer.from(encoded.json, 'utf8'), ...encoded.binary]);
    }
    const whole = Buffer.allocUnsafe(size);
    let at = whole.write(encoded.json, 0, 'utf8');
    for (const b of encoded.binary) at += b.copy(whole, at);
    if (coding === 'identity') return reply(res, 200, headers, whole);
    const z = await encodeResponse(whole, coding);
    return reply(res, 200, [...headers, 'Content-Encoding', coding], z);
  };

  /** An inference request: decoded here, run on the main thread; anything unusual is forwarded. */
  const infer = async (
    req: IncomingMessage,
    res: ServerResponse,
    model: string,
    version: string | undefined,
  ): Promise<void> => {
    let raw: Buffer;
    try {
      raw = await readBody(req, data.maxInputSize);
    } catch (err) {
      // A chunked body past --http-max-input-size: refused and not drained, as the main thread does.
      if (isBodyTooLarge(err)) {
        reply(res, 400, ['Content-Type', JSON_TYPE], errorBody((err as Error).message), true);
      } else if (!res.destroyed) res.destroy(); // the client went away
      return;
    }
    let decoded: DecodedInferRequest;
    let body: Buffer;
    try {
      const contentEncoding = req.headers['content-encoding'];
      body =
        contentEncoding === undefined
          ? raw
          : await decodeContentEncoding(raw, contentEncoding, data.maxInputSize);
      const headerLength = inferenceHeaderLength(req.headers['inference-header-content-length'], body.length);
      if (headerLength === 0 || (headerLength ?? body.length) >= data.jsonThreshold) {
        forward(req, res, raw);
        return;
      }
      decoded = decodeInferRequest(body, headerLength, {
        modelName: model,
        modelVersion: version,
        maxInputSize: data.maxInputSize,
      });
    } catch {
      // The main thread answers it: its errors come in its order (an unknown model before a bad body).
      forward(req, res, raw);
      return;
    }
    const id = nextId++;
    const transfer: ArrayBuffer[] = [];
    const r = decoded.request;
    const request = { ...r, inputs: packTensors(r.inputs, transfer, ownedBuffer(body)) };
    const done = new Promise<ToThread & { t: 'answer' | 'failed' }>((resolve) =>
      pending.set(id, { resolve }),
    );
    const onClose = (): void => {
      if (!res.writableFinished && pending.has(id)) toMain.post({ t: 'cancel', id });
    };
    res.on('close', onClose);
    const tp = req.headers.traceparent;
    const ts = req.headers.tracestate;
    toMain.post(
      {
        t: 'infer',
        id,
        model,
        version,
        traceparent: typeof tp === 'string' ? tp : undefined,
        tracestate: typeof ts === 'string' ? ts : undefined,
        request,
      },
      transfer,
    );
    const m = await done;
    res.removeListener('close', onClose);
    if (m.t === 'failed') {
      reply(res, m.status, ['Content-Type', JSON_TYPE], m.body);
      return;
    }
    const response = { ...m.response, outputs: unpackTensors(m.response.outputs) };
    try {
      await answer(res, decoded, response, req.headers['accept-encoding']);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      reply(res, 500, ['Content-Type', JSON_TYPE], errorBody(`internal error: ${message}`));
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (data.fastPath && req.method === 'POST' && req.headers[MODEL_VARIANT_HEADER] === undefined) {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      let match;
      try {
        match = matchRoute(path);
      } catch {
        match = undefined;
      }
      if (
        match?.name === 'modelInfer' &&
        req.headers.upgrade === undefined &&
        framingError(req) === undefined &&
        (declaredLength(req) ?? 0) <= data.maxInputSize
      ) {
        void infer(req, res, match.model!, match.version);
        return;
      }
    }
    forward(req, res, undefined);
  };

  const server = http.createServer({ noDelay: true, keepAliveTimeout: 60_000 }, handle);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // As the main thread answers malformed HTTP (server.ts answerBeforeRoutes).
    if (err.code === 'ECONNRESET' || !socket.writable || socket.destroyed) {
      socket.destroy();
      return;
    }
    const [status, reason] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout']
          : [400, 'Bad Request'];
    const body = errorBody(`malformed HTTP request: ${err.code ?? err.message}`);
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nServer: ${data.serverHeader}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  server.once('error', (err: NodeJS.ErrnoException) =>
    post({ t: 'error', code: err.code, message: err.message }),
  );
  server.listen(
    { host: data.address, port: data.port, backlog: data.backlog, reusePort: true } as never,
    () => {
      const a = server.address();
      if (a !== null && typeof a === 'object') post({ t: 'listening', address: a.address, port: a.port });
    },
  );
}

/** Largest binary reply built as one Buffer (as routes.ts); larger ones go out as their parts. */
const BINARY_JOIN_MAX_BYTES = 64 * 1024;

const data = workerData as ThreadWorkerData | undefined;
if (parentPort !== null && data?.nereidHttpThread === true) run(data, parentPort);
