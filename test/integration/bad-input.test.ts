// Hostile and malformed input: each gets the right status and a clear message, and the server stays healthy.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  binaryBody,
  makeRepository,
  post,
  removeRepository,
  request,
  FIXTURES,
  ROOT,
  startServer,
  type TestServer,
} from './harness.js';

const ADD_SUB = `
name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
`;

const vec = (n = 16): number[] => Array.from({ length: n }, (_, i) => i);

/** Sends raw bytes on a fresh connection and returns whatever comes back before the socket closes. */
function rawExchange(port: number, payload: string | Buffer, endAfterMs = 300): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(port, '127.0.0.1', () => sock.write(payload));
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    setTimeout(() => sock.end(), endAfterMs);
  });
}

describe('bad input', () => {
  let s: TestServer;
  let repo: string;
  let port: number;
  before(async () => {
    repo = makeRepository({
      add_sub: { config: ADD_SUB, onnx: 'add_sub_fp32.onnx' },
      corrupt: {
        config: 'name: "corrupt"\nbackend: "onnxruntime"\nmax_batch_size: 0\n',
        onnx: 'corrupt.onnx',
      },
      broken_config: {
        config: 'name: "broken_config"\nmax_batch_size: 8\ninput [ { name: "X" dimz: [1] } ]\n',
        onnx: 'identity_fp32.onnx',
      },
      wrong_name: { config: 'name: "other"\nbackend: "onnxruntime"\n', onnx: 'identity_fp32.onnx' },
      simple_string: {
        config: readFileSync(path.join(ROOT, 'examples/model_repository/simple_string/config.pbtxt'), 'utf8'),
        onnx: path.relative(
          FIXTURES,
          path.join(ROOT, 'examples/model_repository/simple_string/1/model.onnx'),
        ),
      },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--exit-on-error=false',
      '--strict-readiness=false',
    ]);
    port = Number(new URL(s.url).port);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  const infer = (body: unknown, headers?: Record<string, string>) =>
    post(`${s.url}/v2/models/add_sub/infer`, body, headers);
  const healthy = async (): Promise<void> => {
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    const ok = await infer({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: vec() },
        { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', data: vec() },
      ],
    });
    assert.equal(ok.status, 200);
  };

  it('strings that are not numbers to simple_string are the client mistake: 400, and the server serves on', async () => {
    const strings = (v: string): unknown => ({
      name: v,
      shape: [1, 16],
      datatype: 'BYTES',
      data: Array(16).fill(''),
    });
    const r = await post(`${s.url}/v2/models/simple_string/infer`, {
      inputs: [strings('INPUT0'), strings('INPUT1')],
    });
    assert.equal(r.status, 400, r.body.toString());
    assert.match(r.json<{ error: string }>().error, /not a number/);
    await healthy();
  });
  it('wrong shape, dtype and element count → 400 with the reason', async () => {
    const wrongShape = await infer({
      inputs: [
        { name: 'INPUT0', shape: [2, 8], datatype: 'FP32', data: vec() },
        { name: 'INPUT1', shape: [2, 8], datatype: 'FP32', data: vec() },
      ],
    });
    assert.equal(wrongShape.status, 400);
    assert.match(
      wrongShape.json<{ error: string }>().error,
      /unexpected shape for input 'INPUT0' for model 'add_sub'. Expected \[-1,16\], got \[2,8\]/,
    );
    const wrongType = await infer({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: vec() },
        { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', data: vec() },
      ],
    });
    assert.equal(wrongType.status, 400);
    assert.match(
      wrongType.json<{ error: string }>().error,
      /data-type is 'INT32', but model 'add_sub' expects 'FP32'/,
    );
    const short = await infer({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: vec(15) },
        { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', data: vec() },
      ],
    });
    assert.equal(short.status, 400);
    await healthy();
  });

  it('wrong binary byte size and a binary size past the body → 400', async () => {
    const a = Buffer.alloc(60);
    const b = Buffer.alloc(64);
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', parameters: { binary_data_size: 60 } },
          { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', parameters: { binary_data_size: 64 } },
        ],
      },
      [a, b],
    );
    const r = await request(`${s.url}/v2/models/add_sub/infer`, { method: 'POST', body, headers });
    assert.equal(r.status, 400);
    assert.match(
      r.json<{ error: string }>().error,
      /input byte size mismatch for input 'INPUT0' for model 'add_sub'. Expected 64, got 60/,
    );
    const past = binaryBody(
      {
        inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', parameters: { binary_data_size: 640 } }],
      },
      [Buffer.alloc(64)],
    );
    const r2 = await request(`${s.url}/v2/models/add_sub/infer`, {
      method: 'POST',
      body: past.body,
      headers: past.headers,
    });
    assert.equal(r2.status, 400);
    await healthy();
  });

  it('malformed JSON, deep nesting, and an out-of-range header length → 400', async () => {
    const bad = await infer('{"inputs": [');
    assert.equal(bad.status, 400);
    assert.ok(bad.json<{ error: string }>().error.length > 0);
    const deep = await infer(
      `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":${'['.repeat(150)}1${']'.repeat(150)}}]}`,
    );
    assert.equal(deep.status, 400);
    assert.match(
      deep.json<{ error: string }>().error,
      /JSON nesting depth exceeds maximum allowed limit \(100\)/,
    );
    const hdr = await infer('{}', { 'Inference-Header-Content-Length': '999999' });
    assert.equal(hdr.status, 400);
    await healthy();
  });

  it('unknown model or version → 404 / 400 with Triton-style messages', async () => {
    const unknown = await post(`${s.url}/v2/models/nope/infer`, { inputs: [] });
    assert.equal(unknown.status, 404);
    assert.match(unknown.json<{ error: string }>().error, /nope/);
    const v = await post(`${s.url}/v2/models/add_sub/versions/7/infer`, { inputs: [] });
    assert.ok(v.status === 404 || v.status === 400 || v.status === 503, String(v.status));
    assert.match(v.json<{ error: string }>().error, /add_sub/);
    assert.equal((await request(`${s.url}/v2/models/nope`)).status, 404);
    assert.equal((await request(`${s.url}/v2/models/nope/ready`)).status, 400);
    assert.equal((await request(`${s.url}/v2/nothing-here`)).status, 404);
    assert.equal((await request(`${s.url}/v2/health/live`, { method: 'POST', body: '' })).status, 405);
    await healthy();
  });

  it('a huge Content-Length is refused before the body is read', async () => {
    const reply = await rawExchange(
      port,
      'POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{"inputs":',
    );
    assert.match(reply, /^HTTP\/1\.1 400/);
    await healthy();
  });

  it('a truncated body (client closes mid-request) leaves the server healthy', async () => {
    await rawExchange(
      port,
      'POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"inputs":[',
      100,
    );
    await healthy();
  });

  it('a corrupt model.onnx, a broken config.pbtxt and a mismatched name are UNAVAILABLE with reasons', async () => {
    const index = (await post(`${s.url}/v2/repository/index`, {})).json<
      { name: string; state: string; reason: string }[]
    >();
    const byName = new Map(index.map((e) => [e.name, e]));
    assert.equal(byName.get('corrupt')?.state, 'UNAVAILABLE');
    assert.ok((byName.get('corrupt')?.reason ?? '').length > 0);
    assert.equal(byName.get('broken_config')?.state, 'UNAVAILABLE');
    assert.match(byName.get('broken_config')?.reason ?? '', /config\.pbtxt:3:\d+: unknown field 'dimz'/);
    assert.equal(byName.get('wrong_name')?.state, 'UNAVAILABLE');
    assert.match(byName.get('wrong_name')?.reason ?? '', /other/);
    assert.equal((await request(`${s.url}/v2/models/corrupt/ready`)).status, 400);
    await healthy();
  });

  it('many bad requests in a row do not disturb good ones running beside them', async () => {
    const good = {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: vec() },
        { name: 'INPUT1', shape: [1, 16], datatype: 'FP32', data: vec() },
      ],
    };
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? infer(good) : infer('{"inputs": 7}'))),
    );
    results.forEach((r, i) => assert.equal(r.status, i % 2 === 0 ? 200 : 400));
  });
});
