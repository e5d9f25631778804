/** Framing a strict server refuses (issue 33 low items), over raw sockets against the in-test FakeApi. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Logger } from '../../../common/logger.js';
import { FakeApi } from '../fake-api.testkit.js';
import { createHttpFrontend, type HttpFrontend } from '../server.js';

let frontend: HttpFrontend;
let port: number;

before(async () => {
  frontend = createHttpFrontend(new FakeApi(), {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => undefined),
  });
  ({ port } = await frontend.listen());
});

after(async () => {
  await frontend.close();
});

/** Sends `bytes` on a new connection and returns everything the server wrote until it closed it. */
function exchange(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

const statuses = (text: string): string[] => [...text.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => m[1]);

test('two Host headers are refused with 400 and the connection closed', async () => {
  const got = await exchange('GET /v2/health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n');
  assert.deepEqual(statuses(got), ['400']);
  assert.match(got, /more than one Host header/);
  assert.match(got, /Connection: close/i);
});

test('a Transfer-Encoding other than plain chunked is refused with 400 (gzip, chunked)', async () => {
  const body = '{"inputs":[]}';
  const chunk = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  const got = await exchange(
    `POST /v2/models/identity/infer HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${chunk}`,
  );
  assert.deepEqual(statuses(got), ['400']);
  assert.match(got, /unsupported Transfer-Encoding 'gzip, chunked'/);
  // Plain chunked still works (a known model, a body it refuses on its merits: 400 from the decoder).
  const ok = await exchange(
    `GET /v2/health/live HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
  );
  assert.deepEqual(statuses(ok), ['200']);
});

test('a request pipelined behind an Upgrade request is not left waiting: the connection closes', async () => {
  const got = await exchange(
    'GET /v2/health/live HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' +
      'GET /v2/health/live HTTP/1.1\r\nHost: a\r\n\r\n',
  );
  // The Upgrade request is answered, with Connection: close; the close tells the client the second was not.
  assert.deepEqual(statuses(got), ['200']);
  assert.match(got, /Connection: close/i);
  // One Host header and no Upgrade: kept alive, both answered.
  const two = await exchange(
    'GET /v2/health/live HTTP/1.1\r\nHost: a\r\n\r\nGET /v2/health/live HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
  );
  assert.deepEqual(statuses(two), ['200', '200']);
});
