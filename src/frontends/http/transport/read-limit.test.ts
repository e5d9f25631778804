/**
 * The per-connection read limit (read-limit.ts) over real sockets: a raw client that pipelines requests
 * and never reads its answers stops being read, while other connections are served; a pipelining client
 * that does read gets every answer.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { request as httpRequest } from 'node:http';
import { Logger } from '../../../common/logger.js';
import type { ServerMetadata } from '../../../common/metadata.js';
import { FakeApi } from '../fake-api.testkit.js';
import { createHttpFrontend, type HttpFrontend } from '../server.js';

/** GET /v2 answers with a 32 KiB body, so a client that does not read fills the socket buffers fast. */
class BigMetadataApi extends FakeApi {
  metadataCalls = 0;
  override serverMetadata(): ServerMetadata {
    this.metadataCalls++;
    return { name: 'triton', version: '0.1.0', extensions: ['x'.repeat(32 << 10)] };
  }
}

const MAX_PENDING = 8;
let api: BigMetadataApi;
let frontend: HttpFrontend;
let port: number;

before(async () => {
  api = new BigMetadataApi();
  frontend = createHttpFrontend(api, {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => {}),
    readLimit: { maxPendingRequests: MAX_PENDING, maxPendingBytes: 64 << 10 },
  });
  ({ port } = await frontend.listen());
  api.metadataCalls = 0;
});

after(async () => {
  await frontend.close();
});

/** One pipelined GET /v2 of about 512 bytes (a padding header). */
const REQUEST = Buffer.from(`GET /v2 HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(470)}\r\n\r\n`);

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Resolves once `read()` has not changed for `quietPolls` polls in a row. */
async function settle(read: () => number, quietPolls = 15): Promise<number> {
  let last = -1;
  let quiet = 0;
  while (quiet < quietPolls) {
    await new Promise((r) => setTimeout(r, 40));
    const now = read();
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a connection that pipelines and never reads stops being read; other connections are served', async () => {
  const flooder = await open();
  flooder.pause(); // never reads an answer
  const sent = 4000; // 2 MB of requests, 128 MB of answers if they were all read
  for (let i = 0; i < sent; i++) flooder.write(REQUEST);
  const served = await settle(() => api.metadataCalls);
  // Bounded by the limit, one read of requests (64 KiB / 512 B) and what the kernel's buffers took.
  assert.ok(served < sent / 4, `the server read ${served} of ${sent} pipelined requests`);
  assert.ok(served >= MAX_PENDING, `served ${served}`);

  const live = await get('/v2/health/live');
  assert.equal(live.status, 200);
  const before = api.metadataCalls;
  const meta = await get('/v2');
  assert.equal(meta.status, 200);
  assert.equal(api.metadataCalls, before + 1);
  // Still held: the flooder's requests stay unread.
  assert.equal(await settle(() => api.metadataCalls, 5), before + 1);
  flooder.destroy();
});

test('a pipelining client that reads its answers gets every one', async () => {
  const client = await open();
  const n = 200;
  let received = 0;
  let text = '';
  const done = new Promise<void>((resolve) => {
    client.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      // Count status lines as they come; keep only the tail that may hold a split one.
      let i;
      while ((i = text.indexOf('HTTP/1.1 200 OK')) !== -1) {
        received++;
        text = text.slice(i + 15);
      }
      if (text.length > 64) text = text.slice(-64);
      if (received === n) resolve();
    });
  });
  client.write(Buffer.concat(Array.from({ length: n }, () => REQUEST)));
  await done;
  assert.equal(received, n);
  client.destroy();
});

/** Loads wait for the test to open a gate: every pipelined load stays in flight until then. */
class GatedLoadApi extends FakeApi {
  calls = 0;
  private opened = false;
  private gate: (() => void)[] = [];
  override loadModel(): Promise<void> {
    this.calls++;
    if (this.opened) return Promise.resolve();
    return new Promise((resolve) => this.gate.push(resolve));
  }
  open(): void {
    this.opened = true;
    for (const w of this.gate.splice(0)) w();
  }
}

test(
  'requests that stay in flight: the connection is read no further than the limit, and health answers',
  { timeout: 60_000 },
  async (t) => {
    const gated = new GatedLoadApi();
    const server = createHttpFrontend(gated, {
      address: '127.0.0.1',
      port: 0,
      log: new Logger({}, () => {}),
      readLimit: { maxPendingRequests: MAX_PENDING, maxPendingBytes: 64 << 10 },
    });
    const gatedPort = (await server.listen()).port;
    const flooder = await new Promise<Socket>((resolve, reject) => {
      const s = connect(gatedPort, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
    t.after(async () => {
      flooder.destroy();
      gated.open();
      await server.close();
    });
    flooder.setTimeout(50_000, () => flooder.destroy());
    flooder.pause();
    // ~512-byte small requests; none is answered until the gate opens.
    const load = Buffer.from(
      `POST /v2/repository/models/m/load HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nX-Pad: ${'p'.repeat(430)}\r\n\r\n`,
    );
    const sent = 4000;
    for (let i = 0; i < sent; i++) flooder.write(load);
    const inFlight = await settle(() => gated.calls);
    // The limit, plus what one socket read (64 KiB = 128 requests) had already handed the parser.
    assert.ok(inFlight >= MAX_PENDING, `in flight: ${inFlight}`);
    assert.ok(inFlight <= MAX_PENDING + 160, `the server took ${inFlight} of ${sent} requests in flight`);

    const health = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: gatedPort, path: '/v2/health/live', agent: false, timeout: 20_000 },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('timeout', () => req.destroy(new Error('health check timed out')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(health, 200);
    assert.equal(await settle(() => gated.calls, 5), inFlight, 'still held');

    // Answered: the connection is read again (its answers fit the byte limit as the client is not reading
    // them, so it is not read to the end, but further than before).
    gated.open();
    const later = await settle(() => gated.calls);
    assert.ok(later > inFlight, `read on after its requests were answered (${later} > ${inFlight})`);
  },
);
