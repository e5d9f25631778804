import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { NereidClientError } from '../errors.js';
import { HttpTransport, parseBaseUrl } from './transport.js';

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok';

/** A raw server: `onRequest(connectionIndex, requestIndexOnConnection, socket)` answers or resets. */
async function rawServer(
  onRequest: (conn: number, req: number, socket: net.Socket) => void,
): Promise<{ url: string; close: () => Promise<void> }> {
  let conns = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const conn = conns++;
    let reqs = 0;
    sockets.add(socket);
    socket.on('data', (d) => {
      // One small request per packet in these tests: count request heads.
      for (let i = d.indexOf('\r\n\r\n'); i !== -1; i = d.indexOf('\r\n\r\n', i + 4))
        onRequest(conn, reqs++, socket);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

void test('a reset on a reused keep-alive socket is retried once on a fresh socket', async () => {
  const server = await rawServer((conn, req, socket) => {
    if (conn === 0 && req === 1) socket.resetAndDestroy();
    else socket.write(OK);
  });
  const t = new HttpTransport(server.url);
  try {
    assert.equal((await t.request({ method: 'GET', path: '/a' })).body.toString(), 'ok');
    const again = await t.request({ method: 'GET', path: '/b' });
    assert.equal(again.status, 200);
    assert.equal(again.body.toString(), 'ok');
  } finally {
    t.close();
    await server.close();
  }
});

void test('a reset on a fresh socket is an error without status', async () => {
  const server = await rawServer((_conn, _req, socket) => socket.resetAndDestroy());
  const t = new HttpTransport(server.url);
  try {
    await assert.rejects(t.request({ method: 'GET', path: '/' }), (err: unknown) => {
      assert.ok(err instanceof NereidClientError);
      assert.equal(err.status, undefined);
      assert.match(err.message, /ECONNRESET/);
      return true;
    });
  } finally {
    t.close();
    await server.close();
  }
});

void test('a body cut short of its Content-Length is an error', async () => {
  const server = await rawServer((_conn, _req, socket) => {
    socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort');
  });
  const t = new HttpTransport(server.url);
  try {
    await assert.rejects(t.request({ method: 'GET', path: '/' }), NereidClientError);
  } finally {
    t.close();
    await server.close();
  }
});

void test('base URLs: host:port as Triton clients take it, full URLs, base paths', () => {
  assert.equal(parseBaseUrl('localhost:8000').href, 'http://localhost:8000/');
  assert.equal(parseBaseUrl('https://h:1/base/').pathname, '/base/');
  assert.throws(() => parseBaseUrl('ftp://h:1'), /must be http or https/);
  assert.throws(() => parseBaseUrl('http://'), /invalid server URL/);
});
