// The gRPC frontend against hostile and broken clients, over real sockets (fake api): reset floods,
// protocol errors nghttp2 answers by going deaf, unanswered and abusive pings, idle and aged connections,
// streams past the concurrency limit, declared sizes without bytes, byte budgets, gzip bombs, idle
// inference streams, response compression, and close() against a client that never lets go. No timing
// assertions: every wait is for a condition, with a generous deadline.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, describe, it } from 'node:test';
import { gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { Metadata, status as GrpcCode, type ServiceError } from '@grpc/grpc-js';
import { Logger } from '../../common/logger.js';
import { GrpcFakeApi } from './fake-api.testkit.js';
import { decodeGrpcMessage, frame as grpcFrame } from './transport/framing.js';
import type { Plain } from './messages.js';
import {
  Flag,
  FrameType,
  RawConnection,
  frame,
  grpcHeaders,
  headerBlock,
  openFds,
  rstStream,
  settings,
  windowUpdate,
} from './transport/raw-h2.testkit.js';
import {
  MAX_FRAME_SIZE,
  advertisedMaxStreams,
  createGrpcFrontend,
  type GrpcFrontend,
  type GrpcFrontendOptions,
} from './server.js';
import { TestClient, decodeMessage, encodeMessage } from './test-client.testkit.js';

const SERVER_LIVE = '/inference.GRPCInferenceService/ServerLive';
const MODEL_INFER = '/inference.GRPCInferenceService/ModelInfer';
const STREAM_INFER = '/inference.GRPCInferenceService/ModelStreamInfer';
const ENHANCE_YOUR_CALM = 11;

const int32s = (...v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);

interface Running {
  frontend: GrpcFrontend;
  port: number;
  client: TestClient;
  api: GrpcFakeApi;
}

const running: Running[] = [];

after(async () => {
  for (const r of running) {
    r.client.close();
    await r.frontend.close();
  }
});

async function start(options: Partial<GrpcFrontendOptions> = {}): Promise<Running> {
  const api = new GrpcFakeApi();
  const frontend = createGrpcFrontend(api, {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => {}),
    ...options,
  });
  const port = (await frontend.listen()).port;
  const r = { frontend, port, client: new TestClient(`127.0.0.1:${port}`), api };
  running.push(r);
  return r;
}

async function healthy(r: Running): Promise<void> {
  assert.deepEqual(await r.client.call('ServerLive', {}), { live: true });
}

/** Polls `cond` until it holds; fails after `timeoutMs` with `what`. */
async function eventually(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface H2Result {
  grpcStatus: number | undefined;
  grpcMessage: string;
  headers: http2.IncomingHttpHeaders;
  data: Buffer;
}

/** One call over Node's own HTTP/2 client: body chunks written as given, then (unless `hold`) the end. */
function h2Call(
  port: number,
  path: string,
  chunks: Buffer[],
  headers: Record<string, string> = {},
  hold = false,
): Promise<H2Result> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    let grpcStatus: number | undefined;
    let grpcMessage = '';
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const data: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) grpcStatus = Number(h['grpc-status']);
      if (typeof h['grpc-message'] === 'string') grpcMessage = decodeGrpcMessage(h['grpc-message']);
    };
    req.on('response', (h) => {
      responseHeaders = h;
      take(h);
    });
    req.on('trailers', take);
    req.on('data', (c: Buffer) => data.push(c));
    req.on('error', () => {});
    req.on('close', () => {
      session.close();
      resolve({ grpcStatus, grpcMessage, headers: responseHeaders, data: Buffer.concat(data) });
    });
    for (const c of chunks) req.write(c);
    if (!hold) req.end();
  });
}

function serverLiveFrames(streamId: number): Buffer[] {
  return [grpcHeaders(streamId, SERVER_LIVE), frame(FrameType.DATA, 1, streamId, grpcFrame(Buffer.alloc(0)))];
}

describe('gRPC connections against hostile clients (fake api, real sockets)', () => {
  it('a reset flood gets GOAWAY ENHANCE_YOUR_CALM, its socket is closed, descriptors come back', async () => {
    const r = await start();
    await healthy(r);
    const base = openFds();
    const conns: RawConnection[] = [];
    const notGrpc = headerBlock([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'localhost'],
    ]);
    for (let k = 0; k < 20; k++) {
      const c = await RawConnection.open(r.port);
      const frames: Buffer[] = [];
      for (let i = 0; i < 1200; i++) {
        // Half the connections flood with requests that are not even gRPC calls.
        const open =
          k % 2 === 0
            ? grpcHeaders(2 * i + 1, SERVER_LIVE)
            : frame(FrameType.HEADERS, Flag.END_HEADERS, 2 * i + 1, notGrpc);
        frames.push(open, rstStream(2 * i + 1));
      }
      c.write(...frames);
      conns.push(c); // never closed by the client: the server must let go
    }
    for (const c of conns) {
      assert.ok(await c.waitClosed(), 'the server closed the flooding connection');
      assert.ok(
        c.goaways().some((g) => g.code === ENHANCE_YOUR_CALM && g.debug === 'too_many_resets'),
        JSON.stringify(c.goaways()),
      );
    }
    await eventually(() => openFds() <= base, `descriptors back to ${base} (now ${openFds()})`);
    await healthy(r);
  });

  it('a connection nghttp2 gave up on (DATA on stream 0) is found by the liveness ping and closed', async () => {
    const r = await start({ connection: { livenessQuietMs: 100, keepaliveTimeoutMs: 500 } });
    const base = openFds();
    const conns: RawConnection[] = [];
    for (let k = 0; k < 20; k++) {
      const c = await RawConnection.open(r.port);
      c.write(grpcHeaders(1, STREAM_INFER), frame(FrameType.DATA, 0, 0, Buffer.from('bad')));
      conns.push(c);
    }
    for (const [i, c] of conns.entries()) {
      // Half the clients go away (the CLOSE-WAIT case), half stay silent.
      if (i % 2 === 0) c.socket.end();
      assert.ok(await c.waitClosed(), 'the server closed the socket');
      assert.ok(
        c.goaways().some((g) => g.code === 1),
        'nghttp2 answered PROTOCOL_ERROR',
      );
    }
    await eventually(() => openFds() <= base, `descriptors back to ${base} (now ${openFds()})`);
    await healthy(r);
  });

  it('a peer that does not answer keepalive pings is closed after the timeout', async () => {
    const r = await start({
      connection: {
        keepaliveTimeMs: 100,
        keepaliveTimeoutMs: 300,
        keepalivePermitWithoutCalls: true,
        livenessQuietMs: 3_600_000,
      },
    });
    const c = await RawConnection.open(r.port);
    assert.ok(await c.waitFor((f) => f.type === FrameType.PING), 'a keepalive PING');
    assert.ok(await c.waitClosed(), 'closed when the PING went unanswered');
    await healthy(r);
  });

  it('keepalive pings only with calls (unless permitted), at most http2MaxPingsWithoutData without data', async () => {
    const r = await start({
      connection: { keepaliveTimeMs: 50, keepaliveTimeoutMs: 60_000, livenessQuietMs: 3_600_000 },
    });
    const idle = await RawConnection.open(r.port);
    idle.ackPings = true;
    // A call that stays open (a stream waiting for requests) makes keepalive pings due.
    const busy = await RawConnection.open(r.port);
    busy.ackPings = true;
    busy.write(grpcHeaders(1, STREAM_INFER));
    await eventually(() => busy.pingsReceived() >= 2, 'two keepalive pings on the connection with a call');
    await new Promise((res) => setTimeout(res, 500)); // ten more keepalive periods
    assert.equal(busy.pingsReceived(), 2, 'no more than 2 pings without data');
    assert.equal(idle.pingsReceived(), 0, 'no keepalive ping without calls');
    // Data from the server re-allows pings.
    busy.write(...serverLiveFrames(3));
    await eventually(() => busy.pingsReceived() >= 3, 'pings again after the server sent data');
    idle.destroy();
    busy.destroy();
  });

  it('a client pinging too often gets GOAWAY ENHANCE_YOUR_CALM "too_many_pings"; pings between calls are fine', async () => {
    const r = await start();
    const polite = http2.connect(`http://127.0.0.1:${r.port}`);
    polite.on('error', () => {});
    await new Promise<void>((resolve) => polite.once('connect', () => resolve()));
    for (let i = 0; i < 6; i++) {
      await new Promise<void>((resolve, reject) => polite.ping((err) => (err ? reject(err) : resolve())));
      const res = await new Promise<number>((resolve) => {
        const req = polite.request({
          ':method': 'POST',
          ':path': SERVER_LIVE,
          'content-type': 'application/grpc',
        });
        req.on('trailers', (t: http2.IncomingHttpHeaders) => resolve(Number(t['grpc-status'])));
        req.on('error', () => resolve(-1));
        req.resume();
        req.end(grpcFrame(Buffer.alloc(0)));
      });
      assert.equal(res, 0);
    }
    assert.equal(polite.closed, false, 'a ping after each call never strikes');
    polite.close();

    const rude = http2.connect(`http://127.0.0.1:${r.port}`);
    rude.on('error', () => {});
    const goaway = new Promise<{ code: number; debug: string }>((resolve) =>
      rude.once('goaway', (code: number, _last: number, data?: Buffer) =>
        resolve({ code, debug: data?.toString() ?? '' }),
      ),
    );
    await new Promise<void>((resolve) => rude.once('connect', () => resolve()));
    for (let i = 0; i < 5; i++) rude.ping(() => {});
    assert.deepEqual(await goaway, { code: ENHANCE_YOUR_CALM, debug: 'too_many_pings' });
    await eventually(() => rude.destroyed, 'the rude connection closed');
    await healthy(r);
  });

  it('an idle connection gets GOAWAY and is closed', async () => {
    const r = await start({ connection: { maxConnectionIdleMs: 200 } });
    const s = http2.connect(`http://127.0.0.1:${r.port}`);
    s.on('error', () => {});
    const goaway = new Promise<number>((resolve) => s.once('goaway', (code: number) => resolve(code)));
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    const req = s.request({ ':method': 'POST', ':path': SERVER_LIVE, 'content-type': 'application/grpc' });
    req.resume();
    req.end(grpcFrame(Buffer.alloc(0)));
    assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR);
    await closed;
  });

  it('a call running past the idle time keeps its connection; idle again, the connection is closed', async () => {
    const r = await start({ connection: { maxConnectionIdleMs: 200 } });
    const s = http2.connect(`http://127.0.0.1:${r.port}`);
    s.on('error', () => {});
    const events: string[] = [];
    s.once('goaway', (code: number) => events.push(`goaway ${code}`));
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    // Warm the connection with a call, so the idle timer is armed before the long one starts.
    const first = s.request({ ':method': 'POST', ':path': SERVER_LIVE, 'content-type': 'application/grpc' });
    first.resume();
    first.end(grpcFrame(Buffer.alloc(0)));
    await new Promise<void>((resolve) => first.on('close', () => resolve()));
    const req = s.request({ ':method': 'POST', ':path': STREAM_INFER, 'content-type': 'application/grpc' });
    req.on('error', () => {});
    req.on('close', () => events.push('call closed'));
    req.resume();
    // Two responses 400 ms apart: the idle timer fires while the call runs, and must leave it alone.
    req.end(
      grpcFrame(
        encodeMessage('inference.ModelInferRequest', {
          model_name: 'repeat',
          inputs: [
            { name: 'IN', datatype: 'INT32', shape: [2] },
            { name: 'DELAY', datatype: 'INT32', shape: [2] },
          ],
          raw_input_contents: [int32s(1, 2), int32s(400, 400)],
        }),
      ),
    );
    await closed;
    assert.deepEqual(events, ['call closed', 'goaway 0']);
    assert.equal(r.api.repeatSignals.length, 1);
    assert.equal(r.api.repeatSignals[0].aborted, false, 'the call ran to its end');
  });

  it('an aged connection gets GOAWAY, running calls get the grace, then the connection is closed', async () => {
    const r = await start({
      connection: { maxConnectionAgeMs: 200, maxConnectionAgeGraceMs: 300, maxConnectionIdleMs: 0 },
    });
    const s = http2.connect(`http://127.0.0.1:${r.port}`);
    s.on('error', () => {});
    const events: string[] = [];
    s.once('goaway', (code: number) => events.push(`goaway ${code}`));
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    const req = s.request({ ':method': 'POST', ':path': STREAM_INFER, 'content-type': 'application/grpc' });
    req.on('error', () => {});
    req.on('close', () => events.push('call closed'));
    req.resume();
    // A request that takes 10 s: only the grace can end it sooner.
    req.write(
      grpcFrame(
        encodeMessage('inference.ModelInferRequest', {
          model_name: 'repeat',
          inputs: [
            { name: 'IN', datatype: 'INT32', shape: [1] },
            { name: 'DELAY', datatype: 'INT32', shape: [1] },
          ],
          raw_input_contents: [int32s(1), int32s(10_000)],
        }),
      ),
    );
    await closed;
    assert.deepEqual(events, ['goaway 0', 'call closed']);
    await eventually(
      () => r.api.repeatSignals.length === 1 && r.api.repeatSignals[0].aborted,
      'the request aborted',
    );
  });

  it('caps concurrent streams with SETTINGS_MAX_CONCURRENT_STREAMS; streams past it are refused', async () => {
    const r = await start({ maxConcurrentStreams: 4 });
    const c = await RawConnection.open(r.port);
    assert.ok(await c.waitFor((f) => f.type === FrameType.SETTINGS));
    // Advertised with headroom (advertisedMaxStreams): the server refuses past 4 itself.
    assert.equal(c.serverSettings().get(3), advertisedMaxStreams(4), 'SETTINGS_MAX_CONCURRENT_STREAMS');
    for (let i = 0; i < 8; i++) c.write(grpcHeaders(2 * i + 1, STREAM_INFER));
    await eventually(
      () => c.frames.filter((f) => f.type === FrameType.RST_STREAM).length >= 4,
      'the streams past the limit reset',
    );
    const refused = c.frames.filter((f) => f.type === FrameType.RST_STREAM);
    assert.ok(refused.every((f) => f.payload.readUInt32BE(0) === http2.constants.NGHTTP2_REFUSED_STREAM));
    assert.deepEqual(
      refused.map((f) => f.streamId),
      [9, 11, 13, 15],
    );
    c.destroy();
    await healthy(r);
  });

  it('a client that acknowledged the limit and opens one stream past it: that stream is refused, the connection lives', async () => {
    const r = await start({ maxConcurrentStreams: 4 });
    const c = await RawConnection.open(r.port);
    c.ackSettings = true;
    assert.ok(await c.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) === 0));
    // The server's SETTINGS acknowledged: nghttp2 now enforces them as the connection's own.
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 0; i < 5; i++) c.write(grpcHeaders(2 * i + 1, STREAM_INFER));
    await eventually(
      () => c.frames.some((f) => f.type === FrameType.RST_STREAM || f.type === FrameType.GOAWAY),
      'the stream past the limit answered',
    );
    assert.deepEqual(c.goaways(), [], 'no GOAWAY');
    const refused = c.frames.filter((f) => f.type === FrameType.RST_STREAM);
    assert.deepEqual(
      refused.map((f) => [f.streamId, f.payload.readUInt32BE(0)]),
      [[9, http2.constants.NGHTTP2_REFUSED_STREAM]],
    );
    c.destroy();
    await healthy(r);
  });

  it('accepts DATA frames up to SETTINGS_MAX_FRAME_SIZE: a 200 KB message in one frame is answered', async () => {
    const r = await start();
    // Large receive windows, so the 200 KB answer needs no WINDOW_UPDATE from this client.
    const c = await RawConnection.open(r.port, settings([[4, 16 << 20]]));
    c.ackSettings = true;
    c.write(windowUpdate(0, 16 << 20));
    assert.ok(await c.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) === 0));
    assert.equal(c.serverSettings().get(5), MAX_FRAME_SIZE, 'SETTINGS_MAX_FRAME_SIZE');
    // The server's connection window opens past HTTP/2's 64 KiB default before the frame is sent.
    assert.ok(await c.waitFor((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 0));
    const values = Float32Array.from({ length: 50_000 }, (_, i) => i / 2);
    const message = grpcFrame(
      encodeMessage('inference.ModelInferRequest', {
        model_name: 'identity',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [values.length] }],
        raw_input_contents: [Buffer.from(values.buffer)],
      }),
    );
    assert.ok(message.length > 16384 * 12, 'far beyond the 16 KiB default frame size');
    c.write(grpcHeaders(1, MODEL_INFER), frame(FrameType.DATA, Flag.END_STREAM, 1, message));
    const trailers = await c.waitFor(
      (f) => f.type === FrameType.HEADERS && f.streamId === 1 && (f.flags & Flag.END_STREAM) !== 0,
    );
    assert.ok(trailers, 'the call ended with trailers');
    assert.deepEqual(c.goaways(), [], 'no FRAME_SIZE_ERROR');
    const body = Buffer.concat(
      c.frames.filter((f) => f.type === FrameType.DATA && f.streamId === 1).map((f) => f.payload),
    );
    const reply = decodeMessage('inference.ModelInferResponse', body.subarray(5)) as {
      raw_output_contents: Uint8Array[];
    };
    assert.deepEqual(Buffer.from(reply.raw_output_contents[0]), Buffer.from(values.buffer));
    c.destroy();
  });

  it('prefixes declaring 2 GiB allocate nothing; the health check answers meanwhile', async () => {
    const r = await start();
    const before = process.memoryUsage().arrayBuffers;
    const c = await RawConnection.open(r.port);
    const prefix = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
    for (let i = 0; i < 500; i++) {
      c.write(grpcHeaders(2 * i + 1, MODEL_INFER), frame(FrameType.DATA, 0, 2 * i + 1, prefix));
    }
    await healthy(r);
    await new Promise((res) => setTimeout(res, 200));
    await healthy(r);
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.ok(grown < 64 << 20, `array buffers grew by ${grown} bytes for 500 declared 2 GiB messages`);
    c.destroy();
  });

  it('refuses a call whose bytes would pass the connection budget with RESOURCE_EXHAUSTED', async () => {
    const r = await start({ connection: { maxConnectionBufferedBytes: 1 << 20 } });
    const body = grpcFrame(Buffer.alloc(4 << 20, 1));
    const res = await h2Call(r.port, MODEL_INFER, [body.subarray(0, 3 << 20)], {}, true);
    assert.equal(res.grpcStatus, GrpcCode.RESOURCE_EXHAUSTED);
    assert.match(res.grpcMessage, /this connection would exceed its limit of 1048576 buffered bytes/);
    await healthy(r);
  });

  it('a gzip bomb is refused at the decompressed cap with RESOURCE_EXHAUSTED, memory bounded', async () => {
    const r = await start({ maxDecompressedSize: 8 << 20 });
    const bomb = gzipSync(Buffer.alloc(256 << 20), { level: 9 });
    const framed = grpcFrame(bomb);
    framed[0] = 1;
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 2);
    const results = await Promise.all(
      [0, 1, 2].map(() => h2Call(r.port, MODEL_INFER, [framed], { 'grpc-encoding': 'gzip' })),
    );
    clearInterval(sampler);
    for (const res of results) {
      assert.equal(res.grpcStatus, GrpcCode.RESOURCE_EXHAUSTED);
      assert.match(res.grpcMessage, /Received message larger than max \(decompressed beyond 8388608 bytes\)/);
    }
    assert.ok(peak - before < 128 << 20, `array buffers grew by ${peak - before} for three 256 MiB bombs`);
    await healthy(r);
  });

  it('ends an inference stream that waits for a request longer than the idle timeout with UNAVAILABLE', async () => {
    const r = await start({ streamIdleTimeoutMs: 300 });
    const stream = r.client.stream();
    const got: Plain[] = [];
    const ended = new Promise<ServiceError | undefined>((resolve) => {
      stream.on('data', (m: Plain) => got.push(m));
      stream.on('error', (e: ServiceError) => resolve(e));
      stream.on('end', () => resolve(undefined));
    });
    stream.write({
      model_name: 'add_sub',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [16] },
      ],
      raw_input_contents: [
        int32s(...new Array<number>(16).fill(1)),
        int32s(...new Array<number>(16).fill(2)),
      ],
    });
    const err = await ended;
    assert.equal(got.length, 1, 'the request was answered first');
    assert.equal(err?.code, GrpcCode.UNAVAILABLE);
    assert.match(err?.details ?? '', /received no request for 300 ms/);
  });

  it('an inference stream whose request runs past the idle timeout is ended only once idle again', async () => {
    const r = await start({ streamIdleTimeoutMs: 200 });
    const stream = r.client.stream();
    const got: Plain[] = [];
    const ended = new Promise<ServiceError | undefined>((resolve) => {
      stream.on('data', (m: Plain) => got.push(m));
      stream.on('error', (e: ServiceError) => resolve(e));
      stream.on('end', () => resolve(undefined));
    });
    // Three responses 250 ms apart on a decoupled model: the idle timer fires while the request runs.
    stream.write({
      model_name: 'repeat',
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [3] },
        { name: 'DELAY', datatype: 'INT32', shape: [3] },
      ],
      raw_input_contents: [int32s(7, 8, 9), int32s(250, 250, 250)],
    });
    const err = await ended;
    assert.equal(got.length, 3, 'every response of the running request came first');
    assert.equal(r.api.repeatSignals[0].aborted, false, 'the request ran to its end');
    assert.equal(err?.code, GrpcCode.UNAVAILABLE);
    assert.match(err?.details ?? '', /received no request for 200 ms/);
  });

  it('close() ends connections whose client never lets go', async () => {
    const r = await start();
    running.splice(running.indexOf(r), 1);
    const c = await RawConnection.open(r.port);
    c.write(grpcHeaders(1, STREAM_INFER)); // a call that never ends, and nobody reads
    await eventually(() => c.frames.length > 0, 'the server spoke');
    const closed = r.frontend.close();
    r.client.close();
    await closed;
    assert.ok(await c.waitClosed(), 'the socket was closed');
  });
});

describe('response compression (--grpc-infer-response-compression-level)', () => {
  const addSub = encodeMessage('inference.ModelInferRequest', {
    model_name: 'add_sub',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [16] },
    ],
    raw_input_contents: [int32s(...new Array<number>(16).fill(3)), int32s(...new Array<number>(16).fill(2))],
  });
  const accept = { 'grpc-accept-encoding': 'identity,deflate,gzip' };

  function output0(message: Buffer): number[] {
    const m = decodeMessage('inference.ModelInferResponse', message);
    const raw = Buffer.from((m.raw_output_contents as Uint8Array[])[0]);
    return Array.from({ length: raw.length / 4 }, (_, i) => raw.readInt32LE(4 * i));
  }

  it('compresses ModelInfer responses with the algorithm the level picks among those the client accepts', async () => {
    for (const [level, encoding, inflate] of [
      ['low', 'gzip', gunzipSync],
      ['high', 'deflate', inflateSync],
    ] as const) {
      const r = await start({ responseCompression: level });
      const res = await h2Call(r.port, MODEL_INFER, [grpcFrame(addSub)], accept);
      assert.equal(res.grpcStatus, 0);
      assert.equal(res.headers['grpc-encoding'], encoding);
      assert.equal(res.data[0], 1, 'the message is flagged compressed');
      assert.equal(res.data.readUInt32BE(1), res.data.length - 5);
      assert.deepEqual(output0(inflate(res.data.subarray(5))), new Array<number>(16).fill(5));
      // A client that accepts neither gets plain responses.
      const plain = await h2Call(r.port, MODEL_INFER, [grpcFrame(addSub)], {
        'grpc-accept-encoding': 'identity',
      });
      assert.equal(plain.headers['grpc-encoding'], undefined);
      assert.equal(plain.data[0], 0);
      assert.deepEqual(output0(plain.data.subarray(5)), new Array<number>(16).fill(5));
    }
  });

  it('a compressed response stream keeps its order and a real client reads it', async () => {
    const r = await start({ responseCompression: 'medium' });
    const stream = r.client.stream(new Metadata());
    const got: Plain[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: Plain) => got.push(m));
      stream.on('error', reject);
      stream.on('end', resolve);
    });
    const values = Array.from({ length: 40 }, (_, i) => i * 1000);
    stream.write({
      model_name: 'repeat',
      id: 'r1',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }],
      raw_input_contents: [int32s(...values)],
    });
    stream.end();
    await done;
    const outs = got
      .map((m) => m.infer_response as Plain)
      .filter((m) => (m.raw_output_contents as Uint8Array[]).length > 0)
      .map((m) => Buffer.from((m.raw_output_contents as Uint8Array[])[0]).readInt32LE(0));
    assert.deepEqual(outs, values);
  });
});
