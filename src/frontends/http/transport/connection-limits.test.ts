// --http-max-connections-per-address on a real HTTP server and real sockets: the connections of one
// client address over its share are answered 503 with the share's reason and closed, while another
// address (127.0.0.2) is served although the first holds its share; the cap still applies to all.
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

/** One request on a connection of its own from `localAddress`, which stays open afterwards. */
async function get(localAddress: string): Promise<{ status: number; body: string }> {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
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
