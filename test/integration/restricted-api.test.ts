// --http-restricted-api and --grpc-restricted-protocol against a real server over real sockets: every HTTP
// route and every gRPC rpc, each category restricted (in four groups with different keys). Without the
// header, or with another value, a request gets Triton's refusal (HTTP 403 and its JSON body, gRPC
// UNAVAILABLE and its message); with it, the request is served exactly as a server without restrictions
// serves it (a second server on the same repository answers the same request without any header).
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import type { Plain } from '../../src/frontends/grpc/messages.js';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import { Nereid } from '../../src/index.js';
import type { RouteName } from '../../src/frontends/http/router.js';
import {
  GRPC_METHOD_CATEGORY,
  HTTP_RESTRICTED_CATEGORIES,
  HTTP_ROUTE_ALSO_CATEGORY,
  HTTP_ROUTE_CATEGORY,
  RESTRICTED_CATEGORIES,
  type HttpRestrictedCategory,
} from '../../src/frontends/restricted.js';
import {
  EXAMPLES,
  makeRepository,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';

/** The groups: every category restricted, with four different keys (HTTP keys in mixed case). */
const HTTP_GROUPS: Readonly<Record<string, readonly [string, string]>> = {
  'health,metadata': ['H-Key', 'h-val'],
  inference: ['Infer-Key', 'ik'],
  'shared-memory,model-config': ['s-key', 's=val:1'],
  'model-repository,statistics,trace,logging': ['Admin-Key', 'Secret'],
  dashboard: ['Dash-Key', 'd'],
  // The /v1 API's refusals are OpenAI-shaped; test/integration/openai.test.ts checks them.
  openai: ['Oa-Key', 'o'],
};
const GRPC_GROUPS: Readonly<Record<string, readonly [string, string]>> = {
  'health,metadata': ['h-key', 'h-val'],
  inference: ['infer-key', 'ik'],
  'shared-memory,model-config': ['s-key', 's=val:1'],
  'model-repository,statistics,trace,logging': ['admin-key', 'Secret'],
};

function required(groups: typeof HTTP_GROUPS, prefix: string): Map<HttpRestrictedCategory, [string, string]> {
  const m = new Map<HttpRestrictedCategory, [string, string]>();
  for (const [categories, [key, value]] of Object.entries(groups)) {
    for (const c of categories.split(',')) m.set(c as HttpRestrictedCategory, [prefix + key, value]);
  }
  return m;
}
const HTTP_REQUIRED = required(HTTP_GROUPS, '');
const GRPC_REQUIRED = required(GRPC_GROUPS, 'triton-grpc-protocol-');

const IN = Array.from({ length: 16 }, (_, i) => i);
const INFER_JSON = JSON.stringify({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: IN },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: IN },
  ],
});

interface HttpCase {
  readonly route: RouteName;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
  /** The body changes between two calls (statistics): compare the status only. */
  readonly statusOnly?: boolean;
}

/** One request per route (several for some), each answered by the route's handler when allowed. */
const HTTP_CASES: readonly HttpCase[] = [
  { route: 'serverMetadata', method: 'GET', path: '/v2' },
  { route: 'serverLive', method: 'GET', path: '/v2/health/live' },
  { route: 'serverReady', method: 'GET', path: '/v2/health/ready' },
  { route: 'modelMetadata', method: 'GET', path: '/v2/models/simple' },
  { route: 'modelReady', method: 'GET', path: '/v2/models/simple/ready' },
  { route: 'modelReady', method: 'GET', path: '/v2/models/missing/versions/2/ready' },
  { route: 'modelConfig', method: 'GET', path: '/v2/models/simple/config' },
  { route: 'modelInfer', method: 'POST', path: '/v2/models/simple/infer', body: INFER_JSON },
  { route: 'modelGenerate', method: 'POST', path: '/v2/models/simple/generate', body: '{}' },
  { route: 'modelGenerateStream', method: 'POST', path: '/v2/models/simple/generate_stream', body: '{}' },
  { route: 'modelStats', method: 'GET', path: '/v2/models/simple/stats', statusOnly: true },
  { route: 'allModelStats', method: 'GET', path: '/v2/models/stats', statusOnly: true },
  { route: 'repositoryIndex', method: 'POST', path: '/v2/repository/index', body: '{}' },
  { route: 'repositoryLoad', method: 'POST', path: '/v2/repository/models/params_js/load', body: '{}' },
  { route: 'repositoryUnload', method: 'POST', path: '/v2/repository/models/missing/unload', body: '{}' },
  { route: 'logging', method: 'GET', path: '/v2/logging' },
  { route: 'traceSetting', method: 'GET', path: '/v2/trace/setting' },
  { route: 'traceSetting', method: 'POST', path: '/v2/models/simple/trace/setting', body: '{}' },
  { route: 'cudaSharedMemoryStatus', method: 'GET', path: '/v2/cudasharedmemory/status' },
  {
    route: 'cudaSharedMemoryRegister',
    method: 'POST',
    path: '/v2/cudasharedmemory/region/r/register',
    body: '{"raw_handle":{"b64":"AA=="},"device_id":0,"byte_size":16}',
  },
  { route: 'cudaSharedMemoryUnregister', method: 'POST', path: '/v2/cudasharedmemory/unregister' },
  { route: 'systemSharedMemoryStatus', method: 'GET', path: '/v2/systemsharedmemory/status' },
  {
    route: 'systemSharedMemoryRegister',
    method: 'POST',
    path: '/v2/systemsharedmemory/region/r/register',
    body: '{"key":"/nereid-no-such-region","byte_size":16}',
  },
  { route: 'systemSharedMemoryUnregister', method: 'POST', path: '/v2/systemsharedmemory/unregister' },
  // Nereid's dashboard: the page, one of its files, and its three reads (which also need a second category).
  { route: 'dashboardPage', method: 'GET', path: '/dashboard/' },
  { route: 'dashboardPage', method: 'GET', path: '/dashboard/vendor/uPlot.iife.min.js' },
  { route: 'dashboardServer', method: 'GET', path: '/dashboard/api/server', statusOnly: true },
  { route: 'dashboardMetrics', method: 'GET', path: '/dashboard/api/metrics', statusOnly: true },
  { route: 'dashboardLogs', method: 'GET', path: '/dashboard/api/logs', statusOnly: true },
  { route: 'openApi', method: 'GET', path: '/openapi.yaml' },
];

type GrpcCall = (client: TestClient, md: Metadata) => Promise<Plain>;

const simpleRequest = {
  model_name: 'simple',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
  ],
  raw_input_contents: [Buffer.from(new Int32Array(IN).buffer), Buffer.from(new Int32Array(IN).buffer)],
};

/** One stream with one request; resolves with the first response or rejects with the stream's error. */
function streamOnce(client: TestClient, md: Metadata): Promise<Plain> {
  return new Promise((resolve, reject) => {
    const stream = client.stream(md);
    let first: Plain | undefined;
    stream.on('data', (m: Plain) => (first ??= m));
    stream.on('error', reject);
    stream.on('end', () => resolve(first ?? {}));
    stream.write(simpleRequest);
    stream.end();
  });
}

const unary =
  (rpc: string, req: object): GrpcCall =>
  (client, md) =>
    client.call(rpc, req, md);

/** One call per rpc; `statusOnly` rpcs answer differently from call to call (statistics). */
const GRPC_CASES: Readonly<Record<string, { call: GrpcCall; statusOnly?: boolean }>> = {
  '/inference.GRPCInferenceService/ServerLive': { call: unary('ServerLive', {}) },
  '/inference.GRPCInferenceService/ServerReady': { call: unary('ServerReady', {}) },
  '/inference.GRPCInferenceService/ModelReady': { call: unary('ModelReady', { name: 'simple' }) },
  '/grpc.health.v1.Health/Check': { call: unary('Check', {}) },
  '/inference.GRPCInferenceService/ServerMetadata': { call: unary('ServerMetadata', {}) },
  '/inference.GRPCInferenceService/ModelMetadata': { call: unary('ModelMetadata', { name: 'simple' }) },
  '/inference.GRPCInferenceService/ModelInfer': { call: unary('ModelInfer', simpleRequest) },
  '/inference.GRPCInferenceService/ModelStreamInfer': { call: streamOnce },
  '/inference.GRPCInferenceService/ModelConfig': { call: unary('ModelConfig', { name: 'simple' }) },
  '/inference.GRPCInferenceService/ModelStatistics': {
    call: unary('ModelStatistics', { name: 'simple' }),
    statusOnly: true,
  },
  '/inference.GRPCInferenceService/RepositoryIndex': { call: unary('RepositoryIndex', {}) },
  '/inference.GRPCInferenceService/RepositoryModelLoad': {
    call: unary('RepositoryModelLoad', { model_name: 'params_js' }),
  },
  '/inference.GRPCInferenceService/RepositoryModelUnload': {
    call: unary('RepositoryModelUnload', { model_name: 'missing' }),
  },
  '/inference.GRPCInferenceService/SystemSharedMemoryStatus': { call: unary('SystemSharedMemoryStatus', {}) },
  '/inference.GRPCInferenceService/SystemSharedMemoryRegister': {
    call: unary('SystemSharedMemoryRegister', { name: 'r', key: '/nereid-no-such-region', byte_size: 16 }),
  },
  '/inference.GRPCInferenceService/SystemSharedMemoryUnregister': {
    call: unary('SystemSharedMemoryUnregister', {}),
  },
  '/inference.GRPCInferenceService/CudaSharedMemoryStatus': { call: unary('CudaSharedMemoryStatus', {}) },
  '/inference.GRPCInferenceService/CudaSharedMemoryRegister': {
    call: unary('CudaSharedMemoryRegister', { name: 'r', device_id: 0, byte_size: 16 }),
  },
  '/inference.GRPCInferenceService/CudaSharedMemoryUnregister': {
    call: unary('CudaSharedMemoryUnregister', {}),
  },
  '/inference.GRPCInferenceService/TraceSetting': { call: unary('TraceSetting', {}) },
  '/inference.GRPCInferenceService/LogSettings': { call: unary('LogSettings', {}) },
};

/** What a call came back with: the response, or the status code and message. */
async function outcome(call: Promise<Plain>): Promise<{ ok?: Plain; code?: number; details?: string }> {
  try {
    return { ok: await call };
  } catch (err) {
    const e = err as ServiceError;
    return { code: e.code, details: e.details };
  }
}

function metadata(entries: [string, string][]): Metadata {
  const md = new Metadata();
  for (const [k, v] of entries) md.add(k, v);
  return md;
}

describe('restricted APIs', () => {
  let repo: string;
  let restricted: TestServer;
  let open: TestServer;
  let restrictedGrpc: TestClient;
  let openGrpc: TestClient;

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(EXAMPLES, 'simple'), path.join(repo, 'simple'), { recursive: true });
    const fixture = path.resolve(EXAMPLES, '../../test/fixtures/javascript/params_js');
    cpSync(fixture, path.join(repo, 'params_js'), { recursive: true });
    const common = [`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=*'];
    restricted = await startServer([
      ...common,
      ...Object.entries(HTTP_GROUPS).map(([c, [k, v]]) => `--http-restricted-api=${c}:${k}=${v}`),
      ...Object.entries(GRPC_GROUPS).map(([c, [k, v]]) => `--grpc-restricted-protocol=${c}:${k}=${v}`),
    ]);
    open = await startServer(common);
    restrictedGrpc = new TestClient(`127.0.0.1:${restricted.running.grpc!.port}`);
    openGrpc = new TestClient(`127.0.0.1:${open.running.grpc!.port}`);
  });

  after(async () => {
    restrictedGrpc?.close();
    openGrpc?.close();
    await restricted?.stop();
    await open?.stop();
    removeRepository(repo);
  });

  it('has a request for every HTTP route and every gRPC rpc, and restricts every category', () => {
    assert.deepEqual(
      [...new Set(HTTP_CASES.map((c) => c.route))].sort(),
      Object.keys(HTTP_ROUTE_CATEGORY).sort(),
    );
    assert.deepEqual(Object.keys(GRPC_CASES).sort(), [...GRPC_METHOD_CATEGORY.keys()].sort());
    assert.deepEqual([...HTTP_REQUIRED.keys()].sort(), [...HTTP_RESTRICTED_CATEGORIES].sort());
    assert.deepEqual([...GRPC_REQUIRED.keys()].sort(), [...RESTRICTED_CATEGORIES].sort());
  });

  describe('over HTTP', () => {
    const send = (server: TestServer, c: HttpCase, headers: Record<string, string> = {}) =>
      request(server.url + c.path, { method: c.method, body: c.body, headers });

    for (const c of HTTP_CASES) {
      const category = HTTP_ROUTE_CATEGORY[c.route];
      it(`${c.method} ${c.path} (${category})`, async () => {
        const [header, value] = HTTP_REQUIRED.get(category)!;
        const refusal = { error: `This API is restricted, expecting header '${header}'` };
        for (const headers of [
          {},
          { [header]: `${value}x` },
          { [header]: value.toUpperCase() === value ? value.toLowerCase() : value.toUpperCase() },
          { [header]: '' },
          // The right value under another category's header.
          { [header === 'Admin-Key' ? 'H-Key' : 'Admin-Key']: value },
        ]) {
          const r = await send(restricted, c, headers);
          assert.equal(r.status, 403, JSON.stringify(headers));
          assert.deepEqual(r.json(), refusal);
          assert.equal(r.headers.get('content-type'), 'application/json');
        }
        // A route that also needs a second category's header: its own header alone is not enough.
        const alsoCategory = HTTP_ROUTE_ALSO_CATEGORY[c.route];
        const also = alsoCategory === undefined ? undefined : HTTP_REQUIRED.get(alsoCategory)!;
        if (also !== undefined) {
          const r = await send(restricted, c, { [header]: value });
          assert.equal(r.status, 403);
          assert.deepEqual(r.json(), { error: `This API is restricted, expecting header '${also[0]}'` });
        }
        const alsoHeaders = also === undefined ? {} : { [also[0]]: also[1] };
        // Allowed (header names are case-insensitive): served exactly as the open server serves it.
        for (const name of [header, header.toLowerCase(), header.toUpperCase()]) {
          const got = await send(restricted, c, { ...alsoHeaders, [name]: value });
          const want = await send(open, c);
          assert.notEqual(got.status, 403);
          assert.equal(got.status, want.status, `${name}: ${got.body.toString()}`);
          if (!c.statusOnly) assert.deepEqual(got.body.toString(), want.body.toString());
        }
      });
    }

    it('refuses before the verb is checked, as Triton does: 403 first, then 405 with the header', async () => {
      const r = await request(`${restricted.url}/v2/health/live`, { method: 'DELETE' });
      assert.equal(r.status, 403);
      const allowed = await request(`${restricted.url}/v2/health/live`, {
        method: 'DELETE',
        headers: { 'h-key': 'h-val' },
      });
      assert.equal(allowed.status, 405);
      const infer = await request(`${restricted.url}/v2/models/simple/infer`);
      assert.equal(infer.status, 403);
      assert.deepEqual(infer.json(), { error: "This API is restricted, expecting header 'Infer-Key'" });
    });

    it('closes the connection after refusing a request with a body, instead of reading the body', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const sockets = new Set<unknown>();
        const send = (headers: Record<string, string>, body?: string) =>
          new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
            const r = http.request(
              `${restricted.url}/v2/models/simple/infer`,
              { method: body === undefined ? 'GET' : 'POST', agent, headers },
              (res) => {
                res.resume();
                res.on('end', () =>
                  resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }),
                );
              },
            );
            r.on('socket', (s) => sockets.add(s));
            r.on('error', reject);
            r.end(body);
          });
        // Refused without a body: the connection is kept.
        assert.deepEqual(await send({}), { status: 403, connection: 'keep-alive' });
        // Refused with a body: answered, then closed.
        assert.deepEqual(await send({ 'content-type': 'application/json' }, INFER_JSON), {
          status: 403,
          connection: 'close',
        });
        // The next request (on a new connection) is served.
        const ok = await send({ 'infer-key': 'ik', 'content-type': 'application/json' }, INFER_JSON);
        assert.equal(ok.status, 200);
        assert.equal(sockets.size, 2);
      } finally {
        agent.destroy();
      }
    });

    it('lets the first of a repeated header decide', async () => {
      // Node's raw header list form sends each value as its own header line.
      const first = (values: string[]) =>
        new Promise<number>((resolve, reject) => {
          const headers = ['Host', '127.0.0.1', ...values.flatMap((v) => ['Admin-Key', v])];
          const r = http.request(`${restricted.url}/v2/logging`, { headers }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          r.on('error', reject);
          r.end();
        });
      assert.equal(await first(['Secret', 'other']), 200);
      assert.equal(await first(['other', 'Secret']), 403);
    });

    it('leaves unknown paths and the metrics port alone', async () => {
      const r = await request(`${restricted.url}/v2/nothing`);
      assert.equal(r.status, 404);
      assert.deepEqual(r.json(), { error: 'Not Found' });
      const metrics = await request(`http://127.0.0.1:${restricted.running.metrics!.port}/metrics`);
      assert.equal(metrics.status, 200);
    });

    it('keeps serving after refusals on the same connection', async () => {
      for (let i = 0; i < 20; i++) {
        assert.equal((await request(`${restricted.url}/v2/health/live`)).status, 403);
      }
      const r = await request(`${restricted.url}/v2/models/simple/infer`, {
        method: 'POST',
        body: INFER_JSON,
        headers: { 'infer-key': 'ik' },
      });
      assert.equal(r.status, 200);
      const out = r.json<{ outputs: { name: string; data: number[] }[] }>().outputs;
      assert.deepEqual(
        out.find((o) => o.name === 'OUTPUT0')?.data,
        IN.map((v) => 2 * v),
      );
    });
  });

  describe('over gRPC', () => {
    for (const [method, { call, statusOnly }] of Object.entries(GRPC_CASES)) {
      const category = GRPC_METHOD_CATEGORY.get(method)!;
      it(`${method.slice(method.lastIndexOf('/') + 1)} (${category})`, async () => {
        const [key, value] = GRPC_REQUIRED.get(category)!;
        const refusal = {
          code: Code.UNAVAILABLE,
          details: `This protocol is restricted, expecting header '${key}'`,
        };
        for (const md of [
          [],
          [[key, `${value}x`]],
          [[key, '']],
          [[key.slice('triton-grpc-protocol-'.length), value]], // the bare key, without Triton's prefix
          [
            [
              key === 'triton-grpc-protocol-admin-key'
                ? 'triton-grpc-protocol-h-key'
                : 'triton-grpc-protocol-admin-key',
              value,
            ],
          ],
        ] as [string, string][][]) {
          assert.deepEqual(await outcome(call(restrictedGrpc, metadata(md))), refusal, JSON.stringify(md));
        }
        const got = await outcome(call(restrictedGrpc, metadata([[key, value]])));
        const want = await outcome(call(openGrpc, new Metadata()));
        assert.notDeepEqual(got, refusal);
        if (statusOnly) assert.equal(got.code, want.code);
        else assert.deepEqual(got, want);
      });
    }

    it('refuses a stream before reading any request, and serves many on an allowed one', async () => {
      const refused = await outcome(
        new Promise<Plain>((resolve, reject) => {
          const stream = restrictedGrpc.stream();
          stream.on('error', reject);
          stream.on('data', resolve);
          // Never writes: the refusal does not wait for a message.
        }),
      );
      assert.deepEqual(refused, {
        code: Code.UNAVAILABLE,
        details: "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'",
      });
      const stream = restrictedGrpc.stream(metadata([['triton-grpc-protocol-infer-key', 'ik']]));
      const messages: Plain[] = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on('data', (m: Plain) => messages.push(m));
        stream.on('error', reject);
        stream.on('end', resolve);
      });
      for (let i = 0; i < 5; i++) stream.write({ ...simpleRequest, id: String(i) });
      stream.end();
      await done;
      assert.deepEqual(
        messages.map((m) => [(m.infer_response as Plain).id, m.error_message]),
        [0, 1, 2, 3, 4].map((i) => [String(i), '']),
      );
    });

    it('answers an unknown method as unknown, restricted or not', async () => {
      const r = await outcome(
        restrictedGrpc.raw('/inference.GRPCInferenceService/Nope', Buffer.alloc(0)).then(() => ({})),
      );
      assert.equal(r.code, Code.UNIMPLEMENTED);
    });
  });
});

describe('an embedded server (Nereid.start) takes the same flags', () => {
  it('restricts and forwards on the frontends it attaches', async () => {
    const repo = makeRepository({});
    cpSync(path.resolve(EXAMPLES, '../../test/fixtures/javascript/params_js'), path.join(repo, 'params_js'), {
      recursive: true,
    });
    const server = await Nereid.start({
      modelRepository: repo,
      log: false,
      flags: [
        '--http-restricted-api=health:k=v',
        '--grpc-restricted-protocol=health:k=v',
        '--http-header-forward-pattern=^x-fwd-',
        '--grpc-header-forward-pattern=^x-fwd-',
      ],
    });
    const client = new TestClient(`127.0.0.1:${(await server.listenGrpc()).port}`);
    try {
      const url = `http://127.0.0.1:${(await server.listenHttp()).port}`;
      assert.equal((await request(`${url}/v2/health/live`)).status, 403);
      assert.equal((await request(`${url}/v2/health/live`, { headers: { k: 'v' } })).status, 200);
      const r = await request(`${url}/v2/models/params_js/infer`, {
        method: 'POST',
        body: JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP32', data: [1] }] }),
        headers: { 'x-fwd-a': 'from a header' },
      });
      const out = r.json<{ outputs: { data: string[] }[] }>().outputs[0].data[0];
      assert.deepEqual(JSON.parse(out), { 'x-fwd-a': 'from a header' });
      assert.deepEqual(await outcome(client.call('ServerLive', {})), {
        code: Code.UNAVAILABLE,
        details: "This protocol is restricted, expecting header 'triton-grpc-protocol-k'",
      });
      assert.deepEqual(
        await outcome(client.call('ServerLive', {}, metadata([['triton-grpc-protocol-k', 'v']]))),
        { ok: { live: true } },
      );
    } finally {
      client.close();
      await server.close();
      removeRepository(repo);
    }
  });
});
