// ServerCall's AbortSignal on a real HTTP/2 connection: taken from the pool only when asked for, aborted
// even when asked for after the client cancelled, and given back to the pool by a clean finish.
import assert from 'node:assert/strict';
import http2, { type ClientHttp2Session, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { idleControllers, takeController } from '../../signal-pool.js';
import { ServerCall } from './call.js';
import { GrpcStatusError, Status } from './status.js';

let server: Http2Server;
let client: ClientHttp2Session;
const calls: ServerCall[] = [];
const waiting: ((call: ServerCall) => void)[] = [];

before(async () => {
  server = http2.createServer();
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const call = new ServerCall(stream, '/inference.GRPCInferenceService/ModelInfer', headers, {
      maxMessageSize: 1 << 20,
      maxDecompressedSize: 1 << 20,
    });
    const next = waiting.shift();
    if (next) next(call);
    else calls.push(call);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

after(async () => {
  client.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Opens a call from the client; resolves with the client stream and the server's ServerCall. */
async function open(): Promise<{ stream: http2.ClientHttp2Stream; call: ServerCall }> {
  const stream = client.request({
    ':method': 'POST',
    ':path': '/inference.GRPCInferenceService/ModelInfer',
    'content-type': 'application/grpc',
  });
  stream.on('error', () => {});
  const call = await new Promise<ServerCall>((resolve) => {
    const ready = calls.shift();
    if (ready) resolve(ready);
    else waiting.push(resolve);
  });
  return { stream, call };
}

test('a signal asked for after the client cancelled is already aborted, with CANCELLED', async () => {
  const { stream, call } = await open();
  const closed = new Promise<void>((resolve) => call.stream.once('close', () => resolve()));
  stream.close(http2.constants.NGHTTP2_CANCEL);
  await closed;
  assert.equal(call.finished, true);
  const signal = call.signal;
  assert.equal(signal.aborted, true);
  const reason: unknown = signal.reason;
  assert.ok(reason instanceof GrpcStatusError);
  assert.equal(reason.code, Status.CANCELLED);
});

test('a signal taken before the cancel is aborted by it, and not given back to the pool', async () => {
  while (idleControllers() > 0) takeController();
  const { stream, call } = await open();
  const signal = call.signal;
  const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
  stream.close(http2.constants.NGHTTP2_CANCEL);
  await aborted;
  call.finishOk(); // a late finish after the abort changes nothing
  assert.equal(signal.aborted, true);
  assert.equal(idleControllers(), 0);
});

test('a clean finish gives the signal back to the pool; a failed call keeps its aborted signal', async () => {
  while (idleControllers() > 0) takeController();
  const ok = await open();
  const used = ok.call.signal;
  ok.call.finishOk();
  assert.equal(idleControllers(), 1);
  assert.equal(used.aborted, false);
  ok.stream.close();

  // The next call reuses that very signal; failing it aborts it, and it stays out of the pool.
  const bad = await open();
  const signal = bad.call.signal;
  assert.equal(signal, used);
  assert.equal(idleControllers(), 0);
  bad.call.fail(Status.DEADLINE_EXCEEDED, 'Deadline Exceeded');
  assert.equal(signal.aborted, true);
  assert.equal(bad.call.signal, signal);
  assert.equal(idleControllers(), 0);
  bad.stream.close();
});
