// --http-header-forward-pattern and --grpc-header-forward-pattern against a real server: a JavaScript model
// (params_js) and a Python model (the faults fixture, mode 9) report the request parameters they saw.
// Checked: which headers arrive (pattern anywhere in the name, any case; HTTP names as the client wrote
// them; -bin metadata decoded), that a header wins over a body parameter of its name, that streams carry
// their metadata to every request, and that generate, as in Triton, forwards nothing.
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import type { Plain } from '../../src/frontends/grpc/messages.js';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import { makeRepository, removeRepository, ROOT, startServer, type TestServer } from './harness.js';
import { pythonFlags } from './python-support.js';

const f32 = (v: number[]): Buffer => Buffer.from(new Float32Array(v).buffer);
const i32 = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);

/** POST with headers exactly as listed (names keep their case; repeats stay separate lines). */
function rawPost(url: string, headers: string[], body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const all = ['Host', u.host, 'Content-Type', 'application/json', ...headers];
    const req = http.request(url, { method: 'POST', headers: all }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The first BYTES element of an HTTP JSON response's output. */
function jsonOutput(body: string, name: string): string {
  const out = (JSON.parse(body) as { outputs: { name: string; data: string[] }[] }).outputs;
  return out.find((o) => o.name === name)!.data[0];
}

/** The first BYTES element of a gRPC raw output (4-byte length, then the bytes). */
function rawBytes(response: Plain, index: number): string {
  const raw = (response.raw_output_contents as Buffer[])[index];
  return raw.subarray(4, 4 + raw.readUInt32LE(0)).toString('utf8');
}

const PARAMS_BODY = (parameters: object) =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP32', data: [1] }], parameters });

const faultsBody = (parameters: object) =>
  JSON.stringify({
    inputs: [
      { name: 'MODE', shape: [1], datatype: 'INT32', data: [9] },
      { name: 'DATA', shape: [1], datatype: 'FP32', data: [1] },
    ],
    outputs: [{ name: 'INFO' }],
    parameters,
  });

describe('header forwarding', () => {
  let repo: string;
  let s: TestServer;
  let grpc: TestClient;

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(ROOT, 'test/fixtures/javascript/params_js'), path.join(repo, 'params_js'), {
      recursive: true,
    });
    cpSync(path.join(ROOT, 'test/fixtures/python/faults'), path.join(repo, 'faults'), { recursive: true });
    s = await startServer([
      `--model-repository=${repo}`,
      '--http-header-forward-pattern=^x-fwd-',
      '--grpc-header-forward-pattern=^x-fwd-',
      ...pythonFlags(`nereid_fwd_${process.pid}_`),
    ]);
    grpc = new TestClient(`127.0.0.1:${s.running.grpc!.port}`);
  });

  after(async () => {
    grpc?.close();
    await s?.stop();
    removeRepository(repo);
  });

  describe('over HTTP', () => {
    it('gives a JavaScript model the matching headers as string parameters, names as sent', async () => {
      const r = await rawPost(
        `${s.url}/v2/models/params_js/infer`,
        ['X-Fwd-Upper', 'U', 'x-fwd-lower', 'l', 'x-other', 'no', 'my-x-fwd-a', 'no', 'X-FWD-n', '42'],
        PARAMS_BODY({ custom: 5, flag: true }),
      );
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(JSON.parse(jsonOutput(r.body, 'PARAMS')), {
        custom: 5,
        flag: true,
        'X-Fwd-Upper': 'U',
        'x-fwd-lower': 'l',
        'X-FWD-n': '42',
      });
    });

    it('lets a header win over a body parameter of its name, and the last of repeated headers win', async () => {
      const r = await rawPost(
        `${s.url}/v2/models/params_js/infer`,
        ['x-fwd-a', 'header', 'x-fwd-b', 'one', 'x-fwd-b', 'two'],
        PARAMS_BODY({ 'x-fwd-a': 'body', 'X-Fwd-A': 'other case' }),
      );
      assert.deepEqual(JSON.parse(jsonOutput(r.body, 'PARAMS')), {
        'x-fwd-a': 'header',
        'X-Fwd-A': 'other case',
        'x-fwd-b': 'two',
      });
    });

    it('passes UTF-8 header values on as text', async () => {
      const value = Buffer.from('café ✓', 'utf8').toString('latin1');
      const r = await rawPost(`${s.url}/v2/models/params_js/infer`, ['x-fwd-u', value], PARAMS_BODY({}));
      assert.deepEqual(JSON.parse(jsonOutput(r.body, 'PARAMS')), { 'x-fwd-u': 'café ✓' });
    });

    it('forwards nothing on generate, as Triton (its generate endpoint does not forward headers)', async () => {
      const r = await rawPost(
        `${s.url}/v2/models/params_js/generate`,
        ['x-fwd-a', 'header'],
        JSON.stringify({ INPUT0: [1], p: 'body' }),
      );
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(JSON.parse((JSON.parse(r.body) as { PARAMS: string }).PARAMS), { p: 'body' });
    });

    it('gives a Python model the headers through request.parameters()', async () => {
      const r = await rawPost(
        `${s.url}/v2/models/faults/infer`,
        ['X-Fwd-Py', 'from a header', 'x-nope', 'no'],
        faultsBody({ custom: 'body' }),
      );
      assert.equal(r.status, 200, r.body);
      const info = JSON.parse(jsonOutput(r.body, 'INFO')) as { parameters: object };
      assert.deepEqual(info.parameters, { custom: 'body', 'X-Fwd-Py': 'from a header' });
    });
  });

  describe('over gRPC', () => {
    const params = (value: string) => ({ parameter_choice: 'string_param', string_param: value });
    const request = {
      model_name: 'params_js',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
      raw_input_contents: [f32([1])],
      parameters: { 'x-fwd-a': params('body'), custom: { parameter_choice: 'int64_param', int64_param: 3 } },
    };
    const md = () => {
      const m = new Metadata();
      m.add('x-fwd-a', 'header');
      m.add('X-Fwd-Mixed', 'sent in capitals');
      m.add('x-fwd-bin', Buffer.from('bytes é', 'utf8'));
      m.add('x-other', 'no');
      return m;
    };
    const EXPECTED = {
      custom: 3,
      'x-fwd-a': 'header',
      'x-fwd-mixed': 'sent in capitals', // metadata keys are lower-case on the wire
      'x-fwd-bin': 'bytes é',
    };

    it('gives a JavaScript model the matching metadata on ModelInfer, -bin decoded, over the body', async () => {
      const r = await grpc.call('ModelInfer', request, md());
      assert.deepEqual(JSON.parse(rawBytes(r, 0)), EXPECTED);
    });

    it('gives every request of a stream the stream’s metadata', async () => {
      const stream = grpc.stream(md());
      const seen: Plain[] = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on('data', (m: Plain) => seen.push(m));
        stream.on('error', reject);
        stream.on('end', resolve);
      });
      for (let i = 0; i < 3; i++) stream.write({ ...request, id: String(i) });
      stream.end();
      await done;
      assert.equal(seen.length, 3);
      for (const m of seen) {
        assert.equal(m.error_message, '');
        assert.deepEqual(JSON.parse(rawBytes(m.infer_response as Plain, 0)), EXPECTED);
      }
    });

    it('gives a Python model the metadata through request.parameters()', async () => {
      const r = await grpc.call(
        'ModelInfer',
        {
          model_name: 'faults',
          inputs: [
            { name: 'MODE', datatype: 'INT32', shape: [1] },
            { name: 'DATA', datatype: 'FP32', shape: [1] },
          ],
          outputs: [{ name: 'INFO' }],
          raw_input_contents: [i32([9]), f32([1])],
        },
        md(),
      );
      const info = JSON.parse(rawBytes(r, 0)) as { parameters: object };
      assert.deepEqual(info.parameters, {
        'x-fwd-a': 'header',
        'x-fwd-mixed': 'sent in capitals',
        'x-fwd-bin': 'bytes é',
      });
    });
  });
});
