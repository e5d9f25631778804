// The category table against the routes and rpcs the frontends actually serve, so a route or rpc added
// later cannot go without a category; the category of each, as Triton's http_server.cc and grpc_server.cc
// give it; and the header check (first occurrence, case, exact value, binary metadata).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLD_RPCS } from './grpc/handlers.js';
import { protoRoot } from './grpc/messages.js';
import { MODEL_INFER_PATH, MODEL_STREAM_INFER_PATH } from './grpc/server.js';
import { matchRoute, type RouteName } from './http/router.js';
import { HANDLERS } from './http/routes.js';
import {
  GRPC_METHOD_CATEGORY,
  HTTP_ROUTE_CATEGORY,
  NEREID_HTTP_CATEGORIES,
  RESTRICTED_CATEGORIES,
  isAllowed,
  restrictionTable,
  type HttpRestrictedCategory,
  type RestrictedCategory,
} from './restricted.js';

/** A path of every route and the category Triton checks for it (http_server.cc, handler by handler). */
const HTTP_PATHS: readonly [string, HttpRestrictedCategory][] = [
  ['/v2', 'metadata'],
  ['/v2/health/live', 'health'],
  ['/v2/health/ready', 'health'],
  ['/v2/models/m', 'metadata'],
  ['/v2/models/m/versions/3', 'metadata'],
  ['/v2/models/m/ready', 'health'],
  ['/v2/models/m/versions/3/ready', 'health'],
  ['/v2/models/m/config', 'model-config'],
  ['/v2/models/m/infer', 'inference'],
  ['/v2/models/m/versions/3/infer', 'inference'],
  ['/v2/models/m/generate', 'inference'],
  ['/v2/models/m/generate_stream', 'inference'],
  ['/v2/models/m/stats', 'statistics'],
  ['/v2/models/stats', 'statistics'],
  ['/v2/repository/index', 'model-repository'],
  ['/v2/repository/r/index', 'model-repository'],
  ['/v2/repository/models/m/load', 'model-repository'],
  ['/v2/repository/models/m/unload', 'model-repository'],
  ['/v2/logging', 'logging'],
  ['/v2/trace/setting', 'trace'],
  ['/v2/models/m/trace/setting', 'trace'],
  ['/v2/cudasharedmemory/status', 'shared-memory'],
  ['/v2/cudasharedmemory/region/r/register', 'shared-memory'],
  ['/v2/cudasharedmemory/region/r/unregister', 'shared-memory'],
  ['/v2/systemsharedmemory/status', 'shared-memory'],
  ['/v2/systemsharedmemory/region/r/register', 'shared-memory'],
  ['/v2/systemsharedmemory/unregister', 'shared-memory'],
  ['/dashboard', 'dashboard'],
  ['/dashboard/', 'dashboard'],
  ['/dashboard/main.js', 'dashboard'],
  ['/dashboard/vendor/uPlot.iife.min.js', 'dashboard'],
  ['/dashboard/api/server', 'dashboard'],
  ['/dashboard/api/metrics', 'dashboard'],
  ['/dashboard/api/logs', 'dashboard'],
  // Nereid's API document (not in Triton): it describes the server, like the metadata routes.
  ['/openapi.yaml', 'metadata'],
];

/** Every rpc of the service and its category (grpc_server.cc: the restricted_keys_.Get of each Register*). */
const GRPC_RPCS: Readonly<Record<string, RestrictedCategory>> = {
  ServerLive: 'health',
  ServerReady: 'health',
  ModelReady: 'health',
  ServerMetadata: 'metadata',
  ModelMetadata: 'metadata',
  ModelInfer: 'inference',
  ModelStreamInfer: 'inference',
  ModelConfig: 'model-config',
  ModelStatistics: 'statistics',
  RepositoryIndex: 'model-repository',
  RepositoryModelLoad: 'model-repository',
  RepositoryModelUnload: 'model-repository',
  SystemSharedMemoryStatus: 'shared-memory',
  SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory',
  CudaSharedMemoryUnregister: 'shared-memory',
  TraceSetting: 'trace',
  LogSettings: 'logging',
};

describe('the category table', () => {
  it('gives every HTTP route a category, and names no route the server does not have', () => {
    assert.deepEqual(Object.keys(HTTP_ROUTE_CATEGORY).sort(), Object.keys(HANDLERS).sort());
    for (const [route, category] of Object.entries(HTTP_ROUTE_CATEGORY)) {
      // Triton's routes in Triton's categories; only Nereid's own routes in Nereid's.
      const own = route.startsWith('dashboard');
      assert.equal(
        (own ? NEREID_HTTP_CATEGORIES : RESTRICTED_CATEGORIES).includes(category as never),
        true,
        route,
      );
    }
  });

  it('puts each HTTP path in Triton’s category, and the paths cover every route', () => {
    const seen = new Set<RouteName>();
    for (const [path, category] of HTTP_PATHS) {
      const match = matchRoute(path);
      assert.ok(match, path);
      seen.add(match.name);
      assert.equal(HTTP_ROUTE_CATEGORY[match.name], category, path);
    }
    assert.deepEqual([...seen].sort(), Object.keys(HANDLERS).sort());
  });

  it('gives every rpc of the .proto services a category, and Triton’s one', () => {
    const root = protoRoot();
    const served: string[] = [];
    for (const service of ['inference.GRPCInferenceService', 'grpc.health.v1.Health']) {
      for (const method of Object.keys(root.lookupService(service).methods)) {
        served.push(`/${service}/${method}`);
      }
    }
    assert.deepEqual([...GRPC_METHOD_CATEGORY.keys()].sort(), served.sort());
    for (const [rpc, category] of Object.entries(GRPC_RPCS)) {
      assert.equal(GRPC_METHOD_CATEGORY.get(`/inference.GRPCInferenceService/${rpc}`), category, rpc);
    }
    assert.equal(GRPC_METHOD_CATEGORY.get('/grpc.health.v1.Health/Check'), 'health');
    assert.equal(Object.keys(GRPC_RPCS).length + 1, GRPC_METHOD_CATEGORY.size);
  });

  it('covers every rpc the gRPC server dispatches', () => {
    for (const path of [...COLD_RPCS.keys(), MODEL_INFER_PATH, MODEL_STREAM_INFER_PATH]) {
      assert.ok(GRPC_METHOD_CATEGORY.has(path), path);
    }
  });
});

describe('restrictionTable', () => {
  it('holds only the routes of restricted categories, with Triton’s texts', () => {
    const table = restrictionTable(
      Object.entries(HTTP_ROUTE_CATEGORY) as [RouteName, RestrictedCategory][],
      { 'model-repository': { header: 'Admin-Key', value: 'v' } },
      'http',
    );
    assert.deepEqual([...table.keys()].sort(), ['repositoryIndex', 'repositoryLoad', 'repositoryUnload']);
    const check = table.get('repositoryLoad')!;
    assert.equal(check.name, 'admin-key');
    assert.equal(check.message, "This API is restricted, expecting header 'Admin-Key'");
    const grpc = restrictionTable(
      GRPC_METHOD_CATEGORY,
      { health: { header: 'triton-grpc-protocol-k', value: 'v' } },
      'grpc',
    );
    assert.equal(grpc.size, 4);
    assert.equal(
      grpc.get('/grpc.health.v1.Health/Check')?.message,
      "This protocol is restricted, expecting header 'triton-grpc-protocol-k'",
    );
    assert.equal(restrictionTable(GRPC_METHOD_CATEGORY, undefined, 'grpc').size, 0);
  });
});

describe('isAllowed', () => {
  const httpCheck = restrictionTable(
    [['r', 'health']],
    { health: { header: 'Admin-Key', value: 'Secret' } },
    'http',
  ).get('r')!;
  const grpcCheck = restrictionTable(
    [['r', 'health']],
    { health: { header: 'triton-grpc-protocol-key', value: 'Secret' } },
    'grpc',
  ).get('r')!;
  /** Node's parsed headers: lower-case names, repeats joined with ', '. */
  const parsed = (raw: string[]) => {
    const h: Record<string, string> = {};
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i].toLowerCase();
      h[k] = h[k] === undefined ? raw[i + 1] : `${h[k]}, ${raw[i + 1]}`;
    }
    return h;
  };
  const allowed = (check: typeof httpCheck, raw: string[]) => isAllowed(check, parsed(raw), raw);

  it('wants the exact value; HTTP names in any case', () => {
    assert.equal(allowed(httpCheck, ['admin-key', 'Secret']), true);
    assert.equal(allowed(httpCheck, ['ADMIN-KEY', 'Secret']), true);
    assert.equal(allowed(httpCheck, []), false);
    assert.equal(allowed(httpCheck, ['Admin-Key', 'secret']), false);
    assert.equal(allowed(httpCheck, ['Admin-Key', ' Secret']), false);
    assert.equal(allowed(httpCheck, ['Admin-Key', '']), false);
    assert.equal(allowed(httpCheck, ['Other', 'Secret']), false);
  });

  it('lets the first of repeated headers decide, as Triton does', () => {
    assert.equal(allowed(httpCheck, ['Admin-Key', 'Secret', 'admin-key', 'x']), true);
    assert.equal(allowed(httpCheck, ['Admin-Key', 'x', 'admin-key', 'Secret']), false);
  });

  it('compares a value with non-ASCII bytes as bytes', () => {
    const check = restrictionTable([['r', 'health']], { health: { header: 'k', value: 'clé' } }, 'http').get(
      'r',
    )!;
    // Node presents the UTF-8 bytes of a header value one char per byte.
    const onWire = Buffer.from('clé', 'utf8').toString('latin1');
    assert.equal(allowed(check, ['k', onWire]), true);
    assert.equal(allowed(check, ['k', 'clé']), false);
  });

  it('never matches a gRPC key configured with capitals (metadata keys are lower-case)', () => {
    const check = restrictionTable(
      [['r', 'health']],
      { health: { header: 'triton-grpc-protocol-Key', value: 'v' } },
      'grpc',
    ).get('r')!;
    assert.equal(allowed(check, ['triton-grpc-protocol-key', 'v']), false);
    assert.equal(allowed(grpcCheck, ['triton-grpc-protocol-key', 'Secret']), true);
    assert.equal(allowed(grpcCheck, ['key', 'Secret']), false);
  });

  it('compares -bin metadata after base64 decoding, as gRPC hands it to Triton', () => {
    const check = restrictionTable(
      [['r', 'health']],
      { health: { header: 'triton-grpc-protocol-k-bin', value: 'Secret' } },
      'grpc',
    ).get('r')!;
    assert.equal(
      allowed(check, ['triton-grpc-protocol-k-bin', Buffer.from('Secret').toString('base64')]),
      true,
    );
    assert.equal(allowed(check, ['triton-grpc-protocol-k-bin', 'Secret']), false);
  });
});
