/**
 * Large JSON answers over real sockets (issue 33 item 3, scaled down): the answer is formatted as the
 * client takes it, so a client that stops reading holds the server to a slice and its socket buffers, and
 * health checks are answered while the answer is unfinished. No timing is asserted: the proof that the
 * text was not built ahead of the reader is that a change to the output's last elements, made while the
 * reader is paused after the first bytes, shows in the answer it then reads.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { Logger } from '../../common/logger.js';
import type { OutputTensor } from '../../core/index.js';
import { FakeApi } from './fake-api.testkit.js';
import { SLICE_ELEMENTS } from './json-answer.js';
import { createHttpFrontend, type HttpFrontend } from './server.js';

let api: FakeApi;
let frontend: HttpFrontend;
let port: number;

before(async () => {
  api = new FakeApi();
  frontend = createHttpFrontend(api, {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => undefined),
  });
  ({ port } = await frontend.listen());
});

after(async () => {
  await frontend.close();
});

/** 3 M FP32 elements: about 30 MB of JSON text, far beyond what socket buffers hold. */
const N = 3_000_000;
function bigOutput(): OutputTensor {
  const values = new Float32Array(N).fill(0.123456789);
  return { name: 'OUTPUT0', datatype: 'FP32', shape: [N], data: Buffer.from(values.buffer) };
}

const INFER_BODY = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] });

function post(body: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v2/models/fixed_outputs/infer',
        agent: false,
        headers: { 'Content-Type': 'application/json', ...headers },
      },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
}

function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
  });
}

function firstChunk(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    res.once('data', (c: Buffer) => {
      res.pause();
      resolve(c);
    });
  });
}

async function live(): Promise<number> {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v2/health/live', agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
  await readAll(res);
  return res.statusCode ?? 0;
}

interface Answer {
  outputs: { name: string; datatype: string; shape: number[]; data?: number[] }[];
}

test('a large JSON answer is written as the client reads it; health answers while it is unfinished', async () => {
  const out = bigOutput();
  api.fixedOutputs = [out];
  const res = await post(INFER_BODY);
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(res.headers['transfer-encoding'], 'chunked');
  const first = await firstChunk(res); // the reader now stops
  assert.ok(first.length > 0);

  // While the answer waits for its reader, the server answers other requests...
  assert.equal(await live(), 200);
  assert.equal(await live(), 200);
  // ...and has not formatted the answer's tail yet: a change to the last elements shows in what is read.
  const values = new Float32Array(out.data.buffer, out.data.byteOffset, N);
  values.fill(42.5, N - 1000);

  const rest = readAll(res);
  res.resume();
  const answer = JSON.parse(Buffer.concat([first, await rest]).toString('utf8')) as Answer;
  const data = answer.outputs[0].data!;
  assert.equal(data.length, N);
  assert.equal(data[0], 0.12345679104328156);
  assert.equal(data[N - 1001], 0.12345679104328156);
  assert.equal(data[N - 1], 42.5, 'the tail was formatted before the reader asked for it');
  assert.equal(api.released, api.resolved);
});

test('with a reader in another process as fast as the server, the loop turns between slices', async () => {
  // 'drain' can come back from the write itself when the reader keeps up, so an answer that waited only
  // for it was formatted whole in microtasks, the event loop stopped. Count the loop's turns from the
  // model's answer to the reader's last byte: at least one per slice of the answer.
  let turns = 0;
  let counting = false;
  const tick = (): void => {
    turns++;
    if (counting) setImmediate(tick);
  };
  const out = bigOutput();
  Object.defineProperty(api, 'fixedOutputs', {
    configurable: true,
    get: () => {
      counting = true;
      setImmediate(tick);
      return [out];
    },
  });
  const reader = `
    const http = require('node:http');
    const req = http.request({ host: '127.0.0.1', port: ${port}, method: 'POST', path: '/v2/models/fixed_outputs/infer',
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      let n = 0; res.on('data', (c) => { n += c.length; }); res.on('end', () => { console.log(res.statusCode + ' ' + n); });
    });
    req.end(${JSON.stringify(INFER_BODY)});`;
  const child = spawn(process.execPath, ['-e', reader], { stdio: ['ignore', 'pipe', 'inherit'] });
  let printed = '';
  child.stdout.on('data', (d: Buffer) => (printed += d.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  counting = false;
  delete (api as { fixedOutputs?: unknown }).fixedOutputs;
  api.fixedOutputs = [];
  const [status, bytes] = printed.trim().split(' ').map(Number);
  assert.equal(status, 200);
  assert.ok(bytes > 10 * N, `answer of ${bytes} bytes`);
  const slices = Math.ceil(N / SLICE_ELEMENTS);
  assert.ok(turns >= slices, `${turns} loop turns for ${slices} slices: the answer held the event loop`);
});

test('a client that leaves in the middle of a large JSON answer stops it; the server keeps serving', async () => {
  api.fixedOutputs = [bigOutput()];
  const res = await post(INFER_BODY);
  await firstChunk(res);
  res.destroy();
  assert.equal(await live(), 200);
  api.fixedOutputs = [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [2], data: Buffer.from(new Int32Array([3, 4]).buffer) },
  ];
  const small = await post(INFER_BODY);
  const body = JSON.parse((await readAll(small)).toString('utf8')) as Answer;
  assert.deepEqual(body.outputs[0].data, [3, 4]);
});

test('a large JSON answer compressed with gzip, and one with a binary part, read back whole', async () => {
  const n = 200_000;
  const ints = new Int32Array(n).map((_, i) => i - 1000);
  const floats = new Float32Array([1.5, -2.25, 3]);
  api.fixedOutputs = [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [n], data: Buffer.from(ints.buffer) },
    { name: 'RAW', datatype: 'FP32', shape: [3], data: Buffer.from(floats.buffer) },
  ];
  const gz = await post(INFER_BODY, { 'Accept-Encoding': 'gzip' });
  assert.equal(gz.headers['content-encoding'], 'gzip');
  const all = JSON.parse(gunzipSync(await readAll(gz)).toString('utf8')) as Answer;
  assert.equal(all.outputs[0].data!.length, n);
  assert.equal(all.outputs[0].data![n - 1], n - 1001);
  assert.deepEqual(all.outputs[1].data, [1.5, -2.25, 3]);

  const mixedBody = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }],
    outputs: [{ name: 'OUTPUT0' }, { name: 'RAW', parameters: { binary_data: true } }],
  });
  const mixed = await post(mixedBody);
  const bytes = await readAll(mixed);
  const headerLength = Number(mixed.headers['inference-header-content-length']);
  assert.equal(Number(mixed.headers['content-length']), bytes.length);
  const header = JSON.parse(bytes.subarray(0, headerLength).toString('utf8')) as Answer;
  assert.equal(header.outputs[0].data!.length, n);
  assert.deepEqual(
    [...new Float32Array(Uint8Array.from(bytes.subarray(headerLength)).buffer)],
    [1.5, -2.25, 3],
  );
});
