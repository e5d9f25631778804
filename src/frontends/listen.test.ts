import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import net from 'node:net';
import { describe, it } from 'node:test';
import { NereidError } from '../common/errors.js';
import { decodeLogMessage, Logger } from '../common/logger.js';
import { listen, listenError } from './listen.js';

const close = (server: net.Server): Promise<void> =>
  new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });

/** Whether this machine can bind the IPv6 loopback (containers without IPv6 cannot). */
async function hasIpv6(): Promise<boolean> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(0, '::1', () => resolve());
    });
    return true;
  } catch {
    return false;
  } finally {
    await close(probe);
  }
}

describe('listen', () => {
  it('resolves with the address and the port the kernel picked for port 0, and leaves no error listener', async () => {
    const server = createHttpServer();
    // node:http adds listeners of its own; the helper's must be gone once it resolves.
    const errorListeners = server.listenerCount('error');
    const listeningListeners = server.listenerCount('listening');
    try {
      const bound = await listen(server, 'HTTP', { address: '127.0.0.1', port: 0 });
      assert.equal(bound.address, '127.0.0.1');
      assert.ok(bound.port > 0);
      assert.equal(bound.port, (server.address() as net.AddressInfo).port);
      assert.equal(server.listenerCount('error'), errorListeners);
      assert.equal(server.listenerCount('listening'), listeningListeners);
    } finally {
      await close(server);
    }
  });

  it("with a logger, logs a listening server's later errors (a refused accept) and keeps serving", async () => {
    const lines: string[] = [];
    const server = createHttpServer((_req, res) => res.end('ok'));
    try {
      const bound = await listen(
        server,
        'HTTP',
        { address: '127.0.0.1', port: 0 },
        new Logger({}, (l) => lines.push(l)),
      );
      // What node:net does when accept() fails after listening: without a listener this throws.
      const accept = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' });
      assert.doesNotThrow(() => server.emit('error', accept));
      assert.equal(lines.length, 1);
      assert.match(decodeLogMessage(lines[0]), /^E.* HTTP server error: accept EMFILE$/);
      const res = await fetch(`http://127.0.0.1:${bound.port}/`);
      assert.equal(await res.text(), 'ok');
    } finally {
      await close(server);
    }
  });

  it('refuses a port in use with "Socket ... already in use" (UNAVAILABLE) and leaves the server unbound', async () => {
    const holder = net.createServer();
    const { port } = await listen(holder, 'holder', { address: '127.0.0.1', port: 0 });
    const server = createHttp2Server();
    const listeningListeners = server.listenerCount('listening');
    try {
      await assert.rejects(listen(server, 'GRPC', { address: '127.0.0.1', port }), (err: unknown) => {
        assert.ok(err instanceof NereidError);
        assert.equal(err.code, 'UNAVAILABLE');
        assert.equal(err.message, `Socket '127.0.0.1:${port}' already in use`);
        return true;
      });
      assert.equal(server.listening, false);
      assert.equal(server.listenerCount('listening'), listeningListeners);
    } finally {
      await close(server);
      await close(holder);
    }
  });

  it('names the service and the address as given for any other bind failure', async () => {
    const server = net.createServer();
    // 192.0.2.0/24 is TEST-NET-1: never an address of this machine, so the bind fails with EADDRNOTAVAIL.
    await assert.rejects(listen(server, 'Metrics', { address: '192.0.2.1', port: 0 }), (err: unknown) => {
      assert.ok(err instanceof NereidError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.match(err.message, /^failed to start the Metrics service at 192\.0\.2\.1:0: .*EADDRNOTAVAIL/);
      return true;
    });
    assert.equal(server.listening, false);
  });

  it('passes the backlog through (a server listening with one accepts a connection)', async () => {
    const server = net.createServer((socket) => socket.end('ok'));
    try {
      const { port } = await listen(server, 'HTTP', { address: '127.0.0.1', port: 0, backlog: 7 });
      const reply = await new Promise<string>((resolve, reject) => {
        const c = net.connect(port, '127.0.0.1');
        let text = '';
        c.on('data', (d: Buffer) => (text += d.toString()));
        c.on('end', () => resolve(text));
        c.on('error', reject);
      });
      assert.equal(reply, 'ok');
    } finally {
      await close(server);
    }
  });

  it('binds an IPv6 literal and prints it without brackets, as today', async (t) => {
    if (!(await hasIpv6())) {
      t.skip('no IPv6 loopback on this machine');
      return;
    }
    const server = net.createServer();
    try {
      const bound = await listen(server, 'HTTP', { address: '::1', port: 0 });
      assert.equal(bound.address, '::1');
      const second = net.createServer();
      await assert.rejects(listen(second, 'HTTP', { address: '::1', port: bound.port }), {
        message: `Socket '::1:${bound.port}' already in use`,
      });
      await close(second);
    } finally {
      await close(server);
    }
  });
});

describe('listenError', () => {
  const table: { code: string | undefined; message: string; expected: string }[] = [
    { code: 'EADDRINUSE', message: 'listen EADDRINUSE', expected: "Socket '0.0.0.0:8000' already in use" },
    {
      code: 'EACCES',
      message: 'listen EACCES: permission denied',
      expected: 'failed to start the HTTP health service at 0.0.0.0:8000: listen EACCES: permission denied',
    },
    {
      code: undefined,
      message: 'something else',
      expected: 'failed to start the HTTP health service at 0.0.0.0:8000: something else',
    },
  ];
  for (const row of table) {
    it(`${row.code ?? 'no code'} → ${row.expected}`, () => {
      const err = listenError('HTTP health', { address: '0.0.0.0', port: 8000 }, row);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.equal(err.message, row.expected);
    });
  }
});
