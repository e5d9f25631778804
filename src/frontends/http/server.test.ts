/** The HTTP frontend over real sockets (port 0) against the in-test FakeApi. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { Logger } from '../../common/logger.js';
import { joinBytesElements } from '../../common/tensor.js';
import { FakeApi } from './fake-api.testkit.js';
import { productToken } from '../../common/product.js';
import { OPENAPI_FILE } from './openapi.js';
import { createHttpFrontend, type HttpFrontend } from './server.js';

interface Res {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  reused: boolean;
}

interface ReqOpts {
  headers?: Record<string, string | number>;
  body?: Buffer | string;
  agent?: Agent;
}

let api: FakeApi;
let frontend: HttpFrontend;
let port: number;
const logLines: string[] = [];
const MAX_INPUT = 1 << 20;

before(async () => {
  api = new FakeApi();
  frontend = createHttpFrontend(api, {
    address: '127.0.0.1',
    port: 0,
    maxInputSize: MAX_INPUT,
    log: new Logger({}, (l) => logLines.push(l)),
  });
  ({ port } = await frontend.listen());
});

after(async () => {
  await frontend.close();
});

function send(method: string, path: string, opts: ReqOpts = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: opts.headers, agent: opts.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks),
            reused: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

const json = (r: Res): unknown => JSON.parse(r.body.toString('utf8'));

async function assertLive(): Promise<void> {
  const r = await send('GET', '/v2/health/live');
  assert.equal(r.status, 200, 'server must stay live');
}

function f32(...v: number[]): Buffer {
  const b = Buffer.alloc(4 * v.length);
  v.forEach((x, i) => b.writeFloatLE(x, 4 * i));
  return b;
}

/** Splits a binary-extension response into its JSON header and the bytes after it. */
function splitBinary(r: Res): {
  header: { outputs: { name: string; parameters?: { binary_data_size?: number } }[] };
  rest: Buffer;
} {
  const n = Number(r.headers['inference-header-content-length']);
  assert.ok(Number.isInteger(n) && n > 0, 'Inference-Header-Content-Length present');
  return { header: JSON.parse(r.body.subarray(0, n).toString('utf8')) as never, rest: r.body.subarray(n) };
}

const ADD_SUB = {
  id: 'req-1',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [16], data: Array.from({ length: 16 }, () => 1) },
  ],
};

void test('GET /openapi.yaml serves docs/openapi.yaml as it is', async () => {
  const r = await send('GET', '/openapi.yaml');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/yaml');
  assert.ok(r.body.equals(readFileSync(OPENAPI_FILE)));
  assert.match(r.body.toString('utf8'), /^openapi: 3\.1\.0\n/);
  assert.equal((await send('POST', '/openapi.yaml')).status, 405);
});

void test('server metadata and health', async () => {
  const meta = await send('GET', '/v2');
  assert.equal(meta.status, 200);
  assert.equal(meta.headers['content-type'], 'application/json');
  assert.deepEqual(json(meta), api.serverMetadata());

  for (const path of ['/v2/health/live', '/v2/health/ready']) {
    const r = await send('GET', path);
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 0);
  }
  api.ready = false;
  api.live = false;
  try {
    for (const path of ['/v2/health/live', '/v2/health/ready']) {
      const r = await send('GET', path);
      assert.equal(r.status, 400);
      assert.equal(r.body.length, 0);
    }
  } finally {
    api.ready = true;
    api.live = true;
  }
});

void test('model metadata, ready, config, statistics', async () => {
  const meta = await send('GET', '/v2/models/add_sub');
  assert.equal(meta.status, 200);
  assert.deepEqual(json(meta), api.modelMetadata('add_sub'));
  assert.equal((await send('GET', '/v2/models/add_sub/versions/1')).status, 200);

  const missing = await send('GET', '/v2/models/nope');
  assert.equal(missing.status, 404);
  assert.deepEqual(json(missing), { error: "Request for unknown model: 'nope' is not found" });
  assert.equal((await send('GET', '/v2/models/add_sub/versions/7')).status, 404);

  const ready = await send('GET', '/v2/models/add_sub/versions/1/ready');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.length, 0);
  const notReady = await send('GET', '/v2/models/nope/ready');
  assert.equal(notReady.status, 400);
  assert.deepEqual(json(notReady), { error: 'Model version not ready' });

  const config = await send('GET', '/v2/models/add_sub/config');
  assert.equal(config.status, 200);
  assert.deepEqual(json(config), api.modelConfigJson('add_sub'));

  const all = json(await send('GET', '/v2/models/stats')) as { model_stats: { name: string }[] };
  assert.ok(all.model_stats.length > 3);
  const one = json(await send('GET', '/v2/models/add_sub/versions/1/stats')) as {
    model_stats: { name: string }[];
  };
  assert.deepEqual(
    one.model_stats.map((s) => s.name),
    ['add_sub'],
  );
});

void test('percent-encoded model names are decoded', async () => {
  const r = await send('GET', '/v2/models/add%5Fsub/ready');
  assert.equal(r.status, 200);
  const bad = await send('GET', '/v2/models/add%zz/ready');
  assert.equal(bad.status, 400);
  await assertLive();
});

void test('repository index, load, unload', async () => {
  const all = await send('POST', '/v2/repository/index');
  assert.equal(all.status, 200);
  assert.ok((json(all) as { name: string }[]).some((e) => e.name === 'broken'));
  const readyOnly = await send('POST', '/v2/repository/index', { body: '{"ready":true}' });
  assert.ok(!(json(readyOnly) as { name: string }[]).some((e) => e.name === 'broken'));
  assert.equal((await send('POST', '/v2/repository/myrepo/index', { body: '{}' })).status, 200);

  const bad = await send('POST', '/v2/repository/index', { body: '{"ready":"yes"}' });
  assert.equal(bad.status, 400);
  assert.deepEqual(json(bad), { error: "Invalid value for 'ready': expected a boolean" });
  const deep = await send('POST', '/v2/repository/index', {
    body: '{"ready":' + '['.repeat(250000) + 'true' + ']'.repeat(250000) + '}',
  });
  assert.equal(deep.status, 400);
  assert.deepEqual(json(deep), { error: "Invalid value for 'ready': expected a boolean" });

  const load = await send('POST', '/v2/repository/models/add_sub/load', {
    body: JSON.stringify({
      parameters: {
        config: '{"backend":"onnxruntime"}',
        'file:1/model.onnx': Buffer.from('onnx bytes').toString('base64'),
      },
    }),
  });
  assert.equal(load.status, 200);
  assert.equal(load.body.length, 0);
  const last = api.loads[api.loads.length - 1];
  assert.equal(last.name, 'add_sub');
  assert.equal(last.options?.config, '{"backend":"onnxruntime"}');
  assert.deepEqual(last.options?.files?.get('1/model.onnx'), Buffer.from('onnx bytes'));

  assert.equal((await send('POST', '/v2/repository/models/add_sub/load')).status, 200);
  assert.equal(api.loads[api.loads.length - 1].options, undefined);
  assert.equal((await send('POST', '/v2/repository/models/missing/load')).status, 404);
  const badB64 = await send('POST', '/v2/repository/models/x/load', {
    body: '{"parameters":{"file:1/m":"!!!"}}',
  });
  assert.equal(badB64.status, 400);
  assert.deepEqual(json(badB64), { error: "'file:1/m' is not valid base64" });
  const repo = await send('POST', '/v2/repository/r/models/x/load');
  assert.equal(repo.status, 501);
  assert.deepEqual(json(repo), { error: "'repository_name' specification is not supported" });

  const unload = await send('POST', '/v2/repository/models/add_sub/unload', {
    body: '{"parameters":{"unload_dependents":true}}',
  });
  assert.equal(unload.status, 200);
  assert.deepEqual(api.unloads[api.unloads.length - 1], {
    name: 'add_sub',
    options: { unloadDependents: true },
  });
  const badUnload = await send('POST', '/v2/repository/models/add_sub/unload', {
    body: '{"parameters":{"unload_dependents":1}}',
  });
  assert.equal(badUnload.status, 400);
  assert.deepEqual(json(badUnload), {
    error: "Unable to parse 'unload_dependents': attempt to access JSON non-boolean as boolean",
  });
  await assertLive();
});

void test('unknown paths are 404 {"error":"Not Found"}; wrong verbs are 405', async () => {
  for (const path of [
    '/',
    '/v2/',
    '/v2/nothing',
    '/v2/models/m/versions/x/ready',
    '/v2/logging/x',
    '/v2/models/m/generate/x',
  ]) {
    const r = await send('GET', path);
    assert.equal(r.status, 404, path);
    assert.deepEqual(json(r), { error: 'Not Found' });
  }
  const cases: [string, string, string][] = [
    ['POST', '/v2', 'GET'],
    ['DELETE', '/v2/health/live', 'GET'],
    ['POST', '/v2/models/add_sub', 'GET'],
    ['GET', '/v2/models/add_sub/infer', 'POST'],
    ['GET', '/v2/models/add_sub/generate_stream', 'POST'],
    ['PUT', '/v2/models/add_sub/versions/1/infer', 'POST'],
    ['GET', '/v2/repository/index', 'POST'],
    ['GET', '/v2/repository/models/m/load', 'POST'],
  ];
  for (const [method, path, allow] of cases) {
    const r = await send(method, path, method === 'POST' ? { body: '{}' } : {});
    assert.equal(r.status, 405, `${method} ${path}`);
    assert.equal(r.headers.allow, allow);
    assert.deepEqual(json(r), { error: 'Method Not Allowed' });
  }
  // query strings are ignored for routing
  assert.equal((await send('GET', '/v2/health/live?x=1')).status, 200);
});

void test('JSON inference round trip echoes the id', async () => {
  const r = await send('POST', '/v2/models/add_sub/infer', { body: JSON.stringify(ADD_SUB) });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['inference-header-content-length'], undefined);
  const body = json(r) as {
    id: string;
    model_name: string;
    model_version: string;
    outputs: { name: string; data: number[] }[];
  };
  assert.equal(body.id, 'req-1');
  assert.equal(body.model_name, 'add_sub');
  assert.equal(body.model_version, '1');
  assert.deepEqual(
    body.outputs[0].data,
    Array.from({ length: 16 }, (_, i) => i + 1),
  );
  assert.deepEqual(
    body.outputs[1].data,
    Array.from({ length: 16 }, (_, i) => i - 1),
  );
});

void test('binary tensor data both ways, and mixed outputs', async () => {
  const a = f32(1.5, -2, 3.25);
  const head = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], parameters: { binary_data_size: a.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  const r = await send('POST', '/v2/models/identity/infer', {
    headers: { 'Inference-Header-Content-Length': head.length, 'Content-Type': 'application/octet-stream' },
    body: Buffer.concat([head, a]),
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/octet-stream');
  const { header, rest } = splitBinary(r);
  assert.equal(header.outputs[0].parameters?.binary_data_size, 12);
  assert.deepEqual(rest, a);

  // binary in, JSON out
  const head2 = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], parameters: { binary_data_size: 12 } }],
    }),
  );
  const r2 = await send('POST', '/v2/models/identity/infer', {
    headers: { 'Inference-Header-Content-Length': head2.length },
    body: Buffer.concat([head2, a]),
  });
  assert.equal(r2.headers['content-type'], 'application/json');
  assert.deepEqual((json(r2) as { outputs: { data: number[] }[] }).outputs[0].data, [1.5, -2, 3.25]);

  // mixed: binary_data_output on, one output overridden to JSON
  const r3 = await send('POST', '/v2/models/add_sub/infer', {
    body: JSON.stringify({
      ...ADD_SUB,
      parameters: { binary_data_output: true },
      outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1', parameters: { binary_data: false } }],
    }),
  });
  assert.equal(r3.status, 200);
  const split = splitBinary(r3);
  assert.equal(split.header.outputs[0].parameters?.binary_data_size, 64);
  assert.equal(split.rest.length, 64);
  assert.equal(split.rest.readInt32LE(4 * 15), 16);
  assert.deepEqual((split.header.outputs[1] as unknown as { data: number[] }).data.slice(0, 2), [-1, 0]);
});

void test('a binary reply larger than the size joined into one buffer arrives whole', async () => {
  // 20,000 FP32 = 80,000 bytes: past the 64 KiB up to which the JSON header and outputs are one Buffer.
  const a = f32(...Array.from({ length: 20_000 }, (_, i) => i * 0.5 - 7));
  const head = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [20_000], parameters: { binary_data_size: a.length } },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  for (let i = 0; i < 2; i++) {
    const r = await send('POST', '/v2/models/identity/infer', {
      headers: { 'Inference-Header-Content-Length': head.length },
      body: Buffer.concat([head, a]),
    });
    assert.equal(r.status, 200);
    assert.equal(Number(r.headers['content-length']), r.body.length);
    const { header, rest } = splitBinary(r);
    assert.equal(header.outputs[0].parameters?.binary_data_size, a.length);
    assert.ok(rest.equals(a), 'the output bytes are the input bytes');
  }
});

void test('every reply carries one Server header, whichever path wrote it', async () => {
  const token = productToken(api.serverMetadata().version);
  const sixteen = (v: number): number[] => new Array<number>(16).fill(v);
  const binaryAddSub = JSON.stringify({ ...ADD_SUB, parameters: { binary_data_output: true } });
  const replies: [string, Res][] = [
    ['metadata', await send('GET', '/v2')],
    ['health', await send('GET', '/v2/health/ready')],
    ['JSON infer', await send('POST', '/v2/models/add_sub/infer', { body: JSON.stringify(ADD_SUB) })],
    ['binary infer', await send('POST', '/v2/models/add_sub/infer', { body: binaryAddSub })],
    [
      'gzip infer',
      await send('POST', '/v2/models/add_sub/infer', {
        body: binaryAddSub,
        headers: { 'Accept-Encoding': 'gzip' },
      }),
    ],
    ['404', await send('GET', '/v2/nothing')],
    ['405', await send('GET', '/v2/models/add_sub/infer')],
    ['400', await send('POST', '/v2/models/add_sub/infer', { body: '{not json' })],
    ['unknown model', await send('POST', '/v2/models/nope/infer', { body: '{}' })],
    [
      'generate_stream',
      await send('POST', '/v2/models/add_sub/generate_stream', {
        body: JSON.stringify({ INPUT0: sixteen(1), INPUT1: sixteen(2) }),
      }),
    ],
    ['generate_stream refused', await send('POST', '/v2/models/nope/generate_stream', { body: '{}' })],
  ];
  for (const [what, r] of replies) {
    const servers = r.rawHeaders.filter((_, i) => i % 2 === 0 && r.rawHeaders[i].toLowerCase() === 'server');
    assert.equal(servers.length, 1, `${what}: one Server header (${r.rawHeaders.join(' | ')})`);
    assert.equal(r.headers.server, token, what);
  }
  assert.equal(replies[9][1].status, 200);
  assert.match(replies[9][1].headers['content-type'] ?? '', /^text\/event-stream/);
  assert.equal(replies[10][1].status, 404);
});

void test('BYTES: JSON strings in, length-prefixed binary and JSON out', async () => {
  const r = await send('POST', '/v2/models/bytes_many/infer', {
    body: JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [2], data: ['héllo', ''] }],
      parameters: { binary_data_output: true },
    }),
  });
  const { rest } = splitBinary(r);
  assert.deepEqual(rest, joinBytesElements(['héllo', '']));
  const j = await send('POST', '/v2/models/bytes_many/infer', {
    body: JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [2], data: ['héllo', ''] }],
    }),
  });
  assert.deepEqual((json(j) as { outputs: { data: string[] }[] }).outputs[0].data, ['héllo', '']);
});

void test('raw binary request (Inference-Header-Content-Length: 0)', async () => {
  const a = f32(0, 1, 2, 3, 4, 5, 6, 7);
  const r = await send('POST', '/v2/models/identity/infer', {
    headers: { 'Inference-Header-Content-Length': 0 },
    body: a,
  });
  assert.equal(r.status, 200);
  const { header, rest } = splitBinary(r);
  assert.equal(header.outputs[0].name, 'OUTPUT0');
  assert.deepEqual(rest, a);
  const bytes = await send('POST', '/v2/models/raw_bytes/infer', {
    headers: { 'Inference-Header-Content-Length': 0 },
    body: '427',
  });
  assert.equal(splitBinary(bytes).rest.subarray(4).toString(), '427');
  const many = await send('POST', '/v2/models/bytes_many/infer', {
    headers: { 'Inference-Header-Content-Length': 0 },
    body: '427',
  });
  assert.equal(many.status, 400);
  assert.deepEqual(json(many), {
    error:
      "[request id: <id_unknown>] For BYTE datatype raw input 'INPUT0', the model must have input shape [1]",
  });
  const multi = await send('POST', '/v2/models/three_inputs/infer', {
    headers: { 'Inference-Header-Content-Length': 0 },
    body: f32(...new Array<number>(24).fill(0)),
  });
  assert.equal(multi.status, 400);
  assert.match(
    (json(multi) as { error: string }).error,
    /^\[request id: <id_unknown>\] Raw request must only have 1 input \(found 1\) to be deduced but got 3 inputs in/,
  );
  // An empty body without the header is one too: its header length is its content length, 0.
  const empty = await send('POST', '/v2/models/three_inputs/infer', { body: '' });
  assert.equal(empty.status, 400);
  assert.match(
    (json(empty) as { error: string }).error,
    /^\[request id: <id_unknown>\] Raw request must only have 1 input/,
  );
});

void test('gzip/deflate request bodies and gzip/deflate responses', async () => {
  const body = gzipSync(Buffer.from(JSON.stringify(ADD_SUB)));
  const r = await send('POST', '/v2/models/add_sub/infer', {
    headers: { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' },
    body,
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-encoding'], 'gzip');
  const plain = JSON.parse(gunzipSync(r.body).toString()) as { id: string };
  assert.equal(plain.id, 'req-1');

  const r2 = await send('POST', '/v2/models/add_sub/infer', {
    headers: { 'Content-Encoding': 'deflate', 'Accept-Encoding': 'deflate' },
    body: deflateSync(Buffer.from(JSON.stringify(ADD_SUB))),
  });
  assert.equal(r2.headers['content-encoding'], 'deflate');
  assert.equal((JSON.parse(inflateSync(r2.body).toString()) as { id: string }).id, 'req-1');

  // compressed binary response keeps the uncompressed JSON header length
  const r3 = await send('POST', '/v2/models/add_sub/infer', {
    headers: { 'Accept-Encoding': 'gzip' },
    body: JSON.stringify({ ...ADD_SUB, parameters: { binary_data_output: true } }),
  });
  const raw = gunzipSync(r3.body);
  const n = Number(r3.headers['inference-header-content-length']);
  assert.equal(r3.headers['content-type'], 'application/octet-stream');
  assert.equal(raw.length, n + 128);
  assert.ok(JSON.parse(raw.subarray(0, n).toString()));

  const unsupported = await send('POST', '/v2/models/add_sub/infer', {
    headers: { 'Content-Encoding': 'br' },
    body: 'x',
  });
  assert.equal(unsupported.status, 501);
  assert.deepEqual(json(unsupported), { error: 'Unsupported compression type' });

  const bomb = await send('POST', '/v2/models/add_sub/infer', {
    headers: { 'Content-Encoding': 'gzip' },
    body: gzipSync(Buffer.alloc(MAX_INPUT + 1)),
  });
  assert.equal(bomb.status, 400);
  assert.match(
    (json(bomb) as { error: string }).error,
    /^Decompressed data size exceeds the maximum allowed value of 1048576 bytes/,
  );
  await assertLive();
});

void test('error mapping through the one funnel', async () => {
  const before = logLines.length;
  const boom = await send('POST', '/v2/models/boom/infer', { body: '{"id":"b-7","inputs":[]}' });
  assert.equal(boom.status, 500);
  assert.deepEqual(json(boom), { error: 'internal error: kaboom' });
  const logged = logLines.slice(before);
  assert.equal(logged.length, 1, 'unexpected errors are logged once');
  assert.match(
    logged[0],
    /\[request id: b-7\] POST \/v2\/models\/boom\/infer: unexpected error: TypeError: kaboom/,
  );

  const decoupled = await send('POST', '/v2/models/repeat/infer', { body: '{"inputs":[]}' });
  assert.equal(decoupled.status, 501);
  assert.deepEqual(json(decoupled), {
    error: "HTTP end point doesn't support models with decoupled transaction policy",
  });

  assert.equal((await send('POST', '/v2/models/nope/infer', { body: '{"inputs":[]}' })).status, 404);
  const core = await send('POST', '/v2/models/add_sub/infer', {
    body: JSON.stringify({ ...ADD_SUB, outputs: [{ name: 'NOPE' }] }),
  });
  assert.equal(core.status, 400);
  assert.deepEqual(json(core), { error: "unexpected inference output 'NOPE' for model 'add_sub'" });
  assert.equal(logLines.length, before + 1, 'Nereid errors are not logged as errors');
});

void test('bad requests get 400 with a clear message and the server stays live after each', async () => {
  const cases: [string, ReqOpts, number, string | RegExp][] = [
    ['malformed JSON', { body: '{"inputs": [' }, 400, /^failed to parse the request JSON buffer: /],
    [
      'duplicate output',
      { body: JSON.stringify({ ...ADD_SUB, outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }) },
      400,
      "output 'OUTPUT0' already exists in request",
    ],
    [
      'deep nesting',
      {
        body: JSON.stringify({
          inputs: [
            {
              name: 'INPUT0',
              datatype: 'INT32',
              shape: [1, 1],
              data: JSON.parse('['.repeat(120) + '1' + ']'.repeat(120)) as unknown,
            },
          ],
        }),
      },
      400,
      /JSON nesting depth exceeds maximum allowed limit \(100\)/,
    ],
    [
      'FP16 JSON',
      { body: '{"inputs":[{"name":"INPUT0","datatype":"FP16","shape":[1],"data":[1]}]}' },
      400,
      /receiving FP16 data via JSON is not supported/,
    ],
    [
      'header length out of range',
      { headers: { 'Inference-Header-Content-Length': '14' }, body: '{"inputs":[]}' },
      400,
      'inference header size should be in range (0, 13), got: 14',
    ],
    [
      'header length negative',
      { headers: { 'Inference-Header-Content-Length': '-5' }, body: '{"inputs":[]}' },
      400,
      'inference header size should be in range (0, 13), got: -5',
    ],
    [
      'header length beyond int',
      { headers: { 'Inference-Header-Content-Length': '99999999999' }, body: '{"inputs":[]}' },
      400,
      'Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], got: 99999999999',
    ],
    [
      'header length not a number',
      { headers: { 'Inference-Header-Content-Length': 'abc' }, body: '{"inputs":[]}' },
      400,
      'Unable to parse Inference-Header-Content-Length, got: abc',
    ],
    [
      'binary sizes beyond the body',
      {
        headers: { 'Inference-Header-Content-Length': 97 },
        body: Buffer.concat([
          Buffer.from(
            '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4],"parameters":{"binary_data_size":16}}]}',
          ),
          f32(1, 2),
        ]),
      },
      400,
      "unexpected size for input 'INPUT0', expecting 8 additional bytes for model 'identity'",
    ],
    [
      'count mismatch',
      { body: '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[3],"data":[1,2]}]}' },
      400,
      /^unexpected number of elements in 'data' for input 'INPUT0'/,
    ],
    [
      'negative dim',
      { body: '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2,-5],"data":[1]}]}' },
      400,
      /Unable to parse 'shape'/,
    ],
  ];
  for (const [what, opts, status, message] of cases) {
    const r = await send('POST', '/v2/models/identity/infer', opts);
    assert.equal(r.status, status, what);
    const error = (json(r) as { error: string }).error;
    if (typeof message === 'string') assert.equal(error, message, what);
    else assert.match(error, message, what);
    await assertLive();
  }
});

void test('oversized bodies: refused from Content-Length, while streaming, and before 100-continue', async () => {
  const big = Buffer.alloc(MAX_INPUT + 1, 0x20);
  const r = await send('POST', '/v2/models/identity/infer', { body: big });
  assert.equal(r.status, 400);
  assert.equal(r.headers.connection, 'close');
  assert.equal(
    (json(r) as { error: string }).error,
    `request body size of ${MAX_INPUT + 1} bytes exceeds the maximum allowed input size of ${MAX_INPUT} bytes. Use --http-max-input-size to increase the limit.`,
  );

  // chunked: no Content-Length, so the limit is enforced while reading
  const chunked = await new Promise<Res>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: 'POST', path: '/v2/models/identity/infer', agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks),
            reused: false,
          }),
        );
      },
    );
    req.on('error', () => {}); // the server may close while we still write
    for (let i = 0; i < 20; i++) req.write(Buffer.alloc(64 * 1024, 0x20));
    req.end();
    setTimeout(() => reject(new Error('no response')), 5000).unref();
  });
  assert.equal(chunked.status, 400);
  assert.match(
    (json(chunked) as { error: string }).error,
    /^request body exceeds the maximum allowed input size of 1048576 bytes/,
  );

  // Expect: 100-continue is answered with the 400 before any body byte is sent
  const early = await new Promise<string>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(
        `POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${MAX_INPUT * 4}\r\nExpect: 100-continue\r\n\r\n`,
      );
    });
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString()));
    s.on('close', () => resolve(text));
  });
  assert.match(early, /^HTTP\/1\.1 400 /);
  assert.doesNotMatch(early, /100 Continue/);
  await assertLive();
});

void test('truncated bodies and malformed HTTP do not hurt the server', async () => {
  // Content-Length larger than what is sent, then the client closes
  await new Promise<void>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(
        'POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"inputs":[',
      );
      setTimeout(() => s.end(), 50);
    });
    s.on('data', () => {});
    s.on('close', () => resolve());
    s.on('error', () => resolve());
  });
  await assertLive();

  const reply = await new Promise<string>((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write('GARBAGE / HTTP/9\r\n\r\n'));
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString()));
    s.on('close', () => resolve(text));
    s.on('error', () => resolve(text));
  });
  assert.match(reply, /^HTTP\/1\.1 400 /);
  await assertLive();

  const huge = await send('GET', '/v2/health/live', { headers: { 'X-Big': 'x'.repeat(20000) } });
  assert.equal(huge.status, 431);
  await assertLive();
});

void test('keep-alive: many sequential requests on one connection', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    let reused = 0;
    for (let i = 0; i < 200; i++) {
      const r =
        i % 4 === 0
          ? await send('POST', '/v2/models/add_sub/infer', {
              body: JSON.stringify({ ...ADD_SUB, id: `k${i}` }),
              agent,
            })
          : i % 4 === 1
            ? await send('POST', '/v2/models/add_sub/infer', { body: '{"inputs": [', agent }) // a bad one in between
            : i % 4 === 2
              ? await send('GET', '/v2/nowhere', { agent })
              : await send('GET', '/v2/health/ready', { agent });
      assert.equal(r.status, [200, 400, 404, 200][i % 4], `request ${i}`);
      if (i % 4 === 0) assert.equal((json(r) as { id: string }).id, `k${i}`);
      if (r.reused) reused++;
    }
    assert.equal(reused, 199, 'every request after the first reuses the connection');
  } finally {
    agent.destroy();
  }
});

void test('a client that disconnects aborts its request signal', async () => {
  const before = api.waiting.length;
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/v2/models/wait/infer',
    agent: false,
  });
  req.on('error', () => {});
  req.end('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[1]}]}');
  for (let i = 0; i < 200 && api.waiting.length === before; i++) await new Promise((r) => setTimeout(r, 5));
  const signal = api.waiting[before];
  assert.ok(signal !== undefined, 'request reached the api');
  assert.equal(signal.aborted, false);
  req.destroy();
  for (let i = 0; i < 200 && !signal.aborted; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(signal.aborted, true);
  await assertLive();
});

void test('close() lets in-flight requests finish and stops accepting', async () => {
  const fe = createHttpFrontend(new FakeApi(), {
    address: '127.0.0.1',
    port: 0,
    log: new Logger({}, () => {}),
  });
  const { port: p } = await fe.listen();
  const agent = new Agent({ keepAlive: true });
  const inFlight = new Promise<Res>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: p, method: 'POST', path: '/v2/models/sleep/infer', agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks),
            reused: false,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[4]}]}');
  });
  await new Promise((r) => setTimeout(r, 50));
  const closed = fe.close();
  const r = await inFlight;
  assert.equal(r.status, 200);
  assert.equal(r.headers.connection, 'close');
  assert.deepEqual((JSON.parse(r.body.toString()) as { outputs: { data: number[] }[] }).outputs[0].data, [4]);
  await closed;
  await assert.rejects(
    new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: p, method: 'GET', path: '/v2/health/live', agent: false },
        resolve,
      );
      req.on('error', reject);
      req.end();
    }),
  );
  agent.destroy();
});

void test('listen on a busy port fails with UNAVAILABLE', async () => {
  const fe = createHttpFrontend(new FakeApi(), { address: '127.0.0.1', port, log: new Logger({}, () => {}) });
  await assert.rejects(fe.listen(), /Socket '127\.0\.0\.1:\d+' already in use/);
  await fe.close();
});

void test('every model handle an inference request takes is released, whatever the outcome', async () => {
  const fake = new FakeApi();
  const fe = createHttpFrontend(fake, { address: '127.0.0.1', port: 0, log: new Logger({}, () => {}) });
  const { port: p } = await fe.listen();
  const post = async (path: string, body: string): Promise<number> => {
    const r = await fetch(`http://127.0.0.1:${p}${path}`, { method: 'POST', body });
    await r.arrayBuffer();
    return r.status;
  };
  const sixteen = (v: number): number[] => new Array<number>(16).fill(v);
  const addSub = JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [16], datatype: 'INT32', data: sixteen(1) },
      { name: 'INPUT1', shape: [16], datatype: 'INT32', data: sixteen(2) },
    ],
  });
  const generate = JSON.stringify({ INPUT0: sixteen(1), INPUT1: sixteen(2) });
  try {
    assert.equal(await post('/v2/models/add_sub/infer', addSub), 200);
    assert.equal(await post('/v2/models/repeat/infer', '{}'), 501, 'decoupled: refused');
    assert.equal(await post('/v2/models/add_sub/infer', '{"inputs": 7}'), 400, 'a body that does not parse');
    assert.equal(
      await post('/v2/models/add_sub/infer', '{"inputs": []}'),
      400,
      'a request the model refuses',
    );
    assert.equal(await post('/v2/models/nope/infer', addSub), 404, 'unknown: nothing resolved');
    assert.equal(await post('/v2/models/add_sub/generate', generate), 200);
    assert.equal(await post('/v2/models/add_sub/generate_stream', generate), 200);
    assert.equal(await post('/v2/models/add_sub/generate', '{"INPUT0": "x"}'), 400);
    assert.equal(fake.resolved, 7, 'one lookup per request that named a known model');
    assert.equal(fake.released, fake.resolved);
  } finally {
    await fe.close();
  }
});
