// --http-max-connections-per-address on a real HTTP server and real sockets: the connections of one
// client address over its share are answered 503 with the share's reason and closed, while another
// address (127.0.0.2) is served although the first holds its share; the cap still applies to all.
// At the cap (--http-max-connections) the connection that has done least is closed for a newcomer:
// idle and dripping ones first, never one with a request being served.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { limitConnections } from './connection-limits.js';

const server = createServer();
const limits = limitConnections(server, {
  max: 4,
  maxPerAddress: 2,
  overCapBody: 'cap',
  overShareBody: 'share',
  // Every connection here just finished a request: none may be closed to make room, so the cap refuses.
  activeMs: 3_600_000,
});
server.on('request', (req, res) => {
  const refusal = limits.refusal(req.socket);
  const body = refusal ?? 'ok';
  res.writeHead(refusal === undefined ? 200 : 503, {
    Connection: refusal === undefined ? 'keep-alive' : 'close',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;
const sockets: Socket[] = [];

/** A connection to `to` from `localAddress`, open. */
async function open(localAddress = '127.0.0.1', to = port): Promise<Socket> {
  const socket = connect({ port: to, host: '127.0.0.1', localAddress });
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  return socket;
}

/** One request on a connection of its own from `localAddress`, which stays open afterwards. */
async function get(localAddress: string, to = port): Promise<{ status: number; body: string }> {
  const socket = connect({ port: to, host: '127.0.0.1', localAddress });
  sockets.push(socket);
  await new Promise((r) => socket.once('connect', r));
  socket.write('GET / HTTP/1.1\r\nHost: h\r\n\r\n');
  // A data listener, not `for await`: leaving that loop would destroy the socket (and free its place).
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const m = /^HTTP\/1\.1 (\d+)[^]*?\r\n\r\n([^]*)$/.exec(text);
      const length = /content-length: (\d+)/i.exec(text);
      if (m && length && m[2].length >= Number(length[1])) resolve({ status: Number(m[1]), body: m[2] });
    });
    socket.on('close', () => reject(new Error(`connection closed: ${text}`)));
  });
}

after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

void describe('HTTP connections per address', () => {
  it('one address gets its share, the next connection 503 with the reason; another address is served', async () => {
    assert.deepEqual(await get('127.0.0.1'), { status: 200, body: 'ok' });
    assert.deepEqual(await get('127.0.0.1'), { status: 200, body: 'ok' });
    assert.deepEqual(await get('127.0.0.1'), { status: 503, body: 'share' });
    assert.deepEqual(await get('127.0.0.2'), { status: 200, body: 'ok' });
    assert.deepEqual(await get('127.0.0.2'), { status: 200, body: 'ok' });
    // Four held (two per address): the cap refuses the next, whatever its address.
    assert.deepEqual(await get('127.0.0.3'), { status: 503, body: 'cap' });
  });
});

void describe('HTTP connections at the cap', () => {
  const held: (() => void)[] = [];
  const capped = createServer();
  const caps = limitConnections(capped, { max: 3, overCapBody: 'cap', activeMs: 3_600_000 });
  capped.on('request', (req, res) => {
    const answer = (): void => {
      const refusal = caps.refusal(req.socket);
      const body = refusal ?? 'ok';
      res.writeHead(refusal === undefined ? 200 : 503, { 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    };
    // /hold is answered only when the test says so: a request being served meanwhile.
    if (req.url === '/hold') held.push(answer);
    else answer();
  });
  after(async () => {
    for (const a of held) a();
    await new Promise((r) => capped.close(r));
  });

  it('closes the idle connection, then the dripping one, for newcomers; never one being served', async () => {
    await new Promise<void>((r) => capped.listen(0, '127.0.0.1', r));
    const to = (capped.address() as AddressInfo).port;
    const busy = await open('127.0.0.1', to);
    busy.write('GET /hold HTTP/1.1\r\nHost: h\r\n\r\n');
    while (held.length === 0) await new Promise((r) => setTimeout(r, 10));
    const idle = await open('127.0.0.1', to);
    const drip = await open('127.0.0.1', to);
    drip.write('GET / HTTP/1.1\r\nHo');
    const closed = (s: Socket): Promise<void> => new Promise((r) => (s.destroyed ? r() : s.once('close', r)));

    // The cap is held by one request being served, one idle socket and one dripping its headers.
    assert.deepEqual(await get('127.0.0.1', to), { status: 200, body: 'ok' }, 'a fourth client is served');
    await closed(idle);
    assert.ok(!drip.destroyed, 'the dripping connection sent more than the idle one: it stays');
    assert.deepEqual(await get('127.0.0.1', to), { status: 200, body: 'ok' }, 'a fifth client is served');
    await closed(drip);
    assert.equal(caps.evicted, 2);

    // Left: the request being served and two connections that just finished one (in use): refused.
    assert.deepEqual(await get('127.0.0.1', to), { status: 503, body: 'cap' });
    assert.ok(!busy.destroyed, 'the connection with a request being served is never closed');
    const answered = new Promise<string>((r) => busy.once('data', (d: Buffer) => r(d.toString('latin1'))));
    held.shift()!();
    assert.match(await answered, /^HTTP\/1\.1 200[^]*ok$/);
  });
});
