// The gRPC port's connection cap (--grpc-max-connections) and request read deadline
// (--grpc-request-read-timeout) against raw HTTP/2 clients (fake api, real sockets): a connection over the
// cap gets GOAWAY ENHANCE_YOUR_CALM and is closed while the others keep working; a call that drips its
// request is ended with DEADLINE_EXCEEDED; a connection that starts no call is closed. No timing
// assertions: every wait is for a condition, with a generous deadline.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, describe, it } from 'node:test';
import { Logger } from '../../common/logger.js';
import { GrpcFakeApi } from './fake-api.testkit.js';
import { decodeGrpcMessage, frame as grpcFrame } from './transport/framing.js';
import { Flag, FrameType, RawConnection, frame, grpcHeaders } from './transport/raw-h2.testkit.js';
import { createGrpcFrontend, type GrpcFrontend, type GrpcFrontendOptions } from './server.js';
import { TestClient } from './test-client.testkit.js';

const SERVER_LIVE = '/inference.GRPCInferenceService/ServerLive';
const STREAM_INFER = '/inference.GRPCInferenceService/ModelStreamInfer';
const NO_ERROR = 0;
const ENHANCE_YOUR_CALM = 11;
const DEADLINE_EXCEEDED = 4;

interface Running {
  frontend: GrpcFrontend;
  port: number;
}

const running: Running[] = [];
const clients: TestClient[] = [];

after(async () => {
  for (const c of clients) c.close();
  for (const r of running) await r.frontend.close();
});

async function start(options: Partial<GrpcFrontendOptions>): Promise<Running> {
  const frontend = createGrpcFrontend(new GrpcFakeApi(), {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => {}),
    ...options,
  });
  const r = { frontend, port: (await frontend.listen()).port };
  running.push(r);
  return r;
}

/** ServerLive on a raw connection: true once its answer (trailers-only HEADERS, END_STREAM) arrives. */
async function liveOn(c: RawConnection, streamId: number): Promise<boolean> {
  c.write(
    grpcHeaders(streamId, SERVER_LIVE),
    frame(FrameType.DATA, Flag.END_STREAM, streamId, grpcFrame(Buffer.alloc(0))),
  );
  const f = await c.waitFor((x) => x.streamId === streamId && (x.flags & Flag.END_STREAM) !== 0);
  return f !== undefined;
}

/**
 * A call being served on a raw connection: a ModelStreamInfer stream with one whole message (an empty
 * request, answered in the stream with an error), left open. True once the server answered it.
 */
async function busyOn(c: RawConnection, streamId: number): Promise<boolean> {
  c.write(
    grpcHeaders(streamId, STREAM_INFER),
    frame(FrameType.DATA, 0, streamId, grpcFrame(Buffer.alloc(0))),
  );
  const f = await c.waitFor((x) => x.streamId === streamId && x.type === FrameType.DATA);
  return f !== undefined;
}

/** Waits until `c` is closed and returns its first GOAWAY, or undefined when it stays open (20 s). */
async function goneWith(c: RawConnection): Promise<{ code: number; debug: string } | undefined> {
  await c.waitFor((f) => f.type === FrameType.GOAWAY);
  if (!(await c.waitClosed())) return undefined;
  return c.goaways()[0];
}

describe('gRPC connection cap and request read deadline (fake api, real sockets)', () => {
  it('a connection over --grpc-max-connections gets GOAWAY ENHANCE_YOUR_CALM and is closed when every open one is busy; the others work', async () => {
    const r = await start({ maxConnections: 2 });
    const a = await RawConnection.open(r.port);
    const b = await RawConnection.open(r.port);
    // Each has a call being served: neither may be closed to make room.
    assert.ok(await busyOn(a, 1));
    assert.ok(await busyOn(b, 1));
    const over = await RawConnection.open(r.port);
    assert.ok(await over.waitClosed(), 'the connection over the cap is closed');
    const goaways = over.goaways();
    assert.ok(goaways.length >= 1, 'a GOAWAY first');
    assert.equal(goaways[0].code, ENHANCE_YOUR_CALM);
    assert.match(goaways[0].debug, /connection limit \(2\).*--grpc-max-connections/);
    // The connections under the cap keep working.
    assert.ok(await liveOn(a, 3));
    assert.ok(await liveOn(b, 3));
    assert.ok(a.isOpen && b.isOpen, 'no busy connection was closed for the newcomer');
    // One closes: a new one fits again.
    a.destroy();
    await a.closed;
    const client = new TestClient(`127.0.0.1:${r.port}`);
    clients.push(client);
    let live: unknown;
    for (let i = 0; i < 50 && live === undefined; i++) {
      live = await client.call('ServerLive', {}).catch(() => undefined);
    }
    assert.deepEqual(live, { live: true });
    b.destroy();
  });

  it('at the cap the connection that did least is closed with GOAWAY NO_ERROR and the newcomer is served; a busy one never is', async () => {
    // The drip attack on the cap, scaled down: 3 places, held by connections that send no call (one of
    // them drips a request it never finishes). A newcomer is served at once instead of being refused
    // until the read deadlines (60 s by default) free a place.
    const r = await start({ maxConnections: 3 });
    const busy = await RawConnection.open(r.port);
    assert.ok(await busyOn(busy, 1));
    const idle = await RawConnection.open(r.port);
    const drip = await RawConnection.open(r.port);
    // A request begun and never finished: some bytes, no whole message.
    drip.write(grpcHeaders(1, SERVER_LIVE), frame(FrameType.DATA, 0, 1, Buffer.from([0, 0, 0])));
    await drip.waitFor(() => false, 300);

    const first = await RawConnection.open(r.port);
    assert.ok(await liveOn(first, 1), 'a fourth client is served at the cap');
    const idleGone = await goneWith(idle);
    assert.equal(idleGone?.code, NO_ERROR, 'the connection that never sent a byte of a call is closed first');
    assert.match(idleGone.debug, /connection limit \(3\).*least active.*--grpc-max-connections/);
    assert.ok(drip.isOpen, 'the dripping one has sent more: it is still open');

    const second = await RawConnection.open(r.port);
    assert.ok(await busyOn(second, 1), 'a fifth client is served');
    assert.equal((await goneWith(drip))?.code, NO_ERROR, 'then the dripping connection is closed');

    // first finished its call: once it has been quiet a moment (ACTIVE_MS) it is the one to go.
    await first.waitFor(() => false, 1_500);
    const third = await RawConnection.open(r.port);
    assert.ok(await busyOn(third, 1), 'a sixth client is served');
    assert.equal((await goneWith(first))?.code, NO_ERROR, 'the quiet connection is closed');

    // Now every connection has a call being served: a newcomer is refused, as before.
    const over = await RawConnection.open(r.port);
    assert.equal(
      (await goneWith(over))?.code,
      ENHANCE_YOUR_CALM,
      'nothing to close: the newcomer is refused',
    );
    for (const c of [busy, second, third]) {
      assert.ok(c.isOpen, 'a connection with a call being served is never closed for a newcomer');
      assert.ok(await liveOn(c, 3), 'and it still works');
    }
    for (const c of [busy, second, third]) c.destroy();
  });

  it('one address holds at most --grpc-max-connections-per-address connections; other addresses still get in', async () => {
    // The drip attack scaled down: one address holding connections that never send a call cannot take the
    // whole cap (3) and starve everyone else until the read deadline.
    const r = await start({ maxConnections: 3, maxConnectionsPerAddress: 2 });
    const a = await RawConnection.open(r.port);
    const b = await RawConnection.open(r.port);
    const over = await RawConnection.open(r.port);
    assert.ok(await over.waitClosed(), 'the third connection of one address is closed');
    const goaways = over.goaways();
    assert.equal(goaways[0]?.code, ENHANCE_YOUR_CALM);
    assert.match(
      goaways[0].debug,
      /client address holds 2 gRPC connections.*--grpc-max-connections-per-address/,
    );
    // Another address gets in and is served, though one address still holds two connections.
    const other = await RawConnection.open(r.port, undefined, '127.0.0.2');
    assert.ok(await liveOn(other, 1), 'a connection from another address is served');
    assert.ok(await liveOn(a, 1));
    // A place given back is free again for that address.
    b.destroy();
    await b.closed;
    let again: RawConnection | undefined;
    for (let i = 0; i < 50; i++) {
      again = await RawConnection.open(r.port);
      if (await liveOn(again, 1)) break;
      again.destroy();
      again = undefined;
    }
    assert.ok(again !== undefined, 'the address gets a connection again once one closed');
    for (const c of [a, other, again]) c.destroy();
  });

  it('a unary call that drips its request is ended with DEADLINE_EXCEEDED after --grpc-request-read-timeout', async () => {
    const r = await start({ requestReadTimeoutMs: 300 });
    const session = http2.connect(`http://127.0.0.1:${r.port}`);
    session.on('error', () => {});
    const req = session.request({
      ':method': 'POST',
      ':path': SERVER_LIVE,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('error', () => {});
    const message = grpcFrame(Buffer.alloc(64, 1));
    let sent = 0;
    const drip = setInterval(() => {
      if (sent < message.length - 1 && !req.closed) req.write(message.subarray(sent, ++sent));
    }, 50);
    const status = await new Promise<{ code: string; message: string }>((resolve) => {
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] !== undefined) {
          resolve({ code: String(h['grpc-status']), message: decodeGrpcMessage(String(h['grpc-message'])) });
        }
      };
      req.on('response', take);
      req.on('trailers', take);
    });
    clearInterval(drip);
    assert.equal(status.code, String(DEADLINE_EXCEEDED));
    assert.match(status.message, /did not arrive within 300 ms \(--grpc-request-read-timeout\)/);
    assert.ok(sent < message.length - 1, `ended after ${sent} of ${message.length} bytes`);
    // The connection itself is kept: another call on it is answered.
    const again = session.request({
      ':method': 'POST',
      ':path': SERVER_LIVE,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    again.end(grpcFrame(Buffer.alloc(0)));
    const code = await new Promise<string>((resolve) => {
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] !== undefined) resolve(String(h['grpc-status']));
      };
      again.on('trailers', take);
      again.on('response', take);
    });
    assert.equal(code, '0');
    session.close();
  });

  it('a connection that starts no call within --grpc-request-read-timeout is closed', async () => {
    const r = await start({ requestReadTimeoutMs: 300 });
    const idle = await RawConnection.open(r.port);
    const busy = await RawConnection.open(r.port);
    assert.ok(await liveOn(busy, 1));
    assert.ok(await idle.waitClosed(), 'the connection without a call is closed');
    assert.ok(idle.goaways().length >= 1, 'after a GOAWAY');
    assert.ok(busy.isOpen, 'a connection that started a call is kept');
    busy.destroy();
  });
});
