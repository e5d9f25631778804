import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import { matchRoute } from './router.js';

void test('server, health and model routes', () => {
  assert.deepEqual(matchRoute('/v2'), { name: 'serverMetadata', method: 'GET' });
  assert.deepEqual(matchRoute('/openapi.yaml'), { name: 'openApi', method: 'GET' });
  assert.equal(matchRoute('/openapi.json'), undefined);
  assert.equal(matchRoute('/v2/openapi.yaml'), undefined);
  assert.deepEqual(matchRoute('/v2/health/live'), { name: 'serverLive', method: 'GET' });
  assert.deepEqual(matchRoute('/v2/health/ready'), { name: 'serverReady', method: 'GET' });
  assert.deepEqual(matchRoute('/v2/models/stats'), { name: 'allModelStats', method: 'GET' });
  assert.deepEqual(matchRoute('/v2/models/simple'), {
    name: 'modelMetadata',
    method: 'GET',
    model: 'simple',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/simple/versions/12'), {
    name: 'modelMetadata',
    method: 'GET',
    model: 'simple',
    version: '12',
  });
  assert.deepEqual(matchRoute('/v2/models/simple/versions/3/infer'), {
    name: 'modelInfer',
    method: 'POST',
    model: 'simple',
    version: '3',
  });
  assert.deepEqual(matchRoute('/v2/models/simple/ready'), {
    name: 'modelReady',
    method: 'GET',
    model: 'simple',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/simple/config'), {
    name: 'modelConfig',
    method: 'GET',
    model: 'simple',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/simple/stats'), {
    name: 'modelStats',
    method: 'GET',
    model: 'simple',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/simple/generate'), {
    name: 'modelGenerate',
    method: 'POST',
    model: 'simple',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/simple/versions/2/generate_stream'), {
    name: 'modelGenerateStream',
    method: 'POST',
    model: 'simple',
    version: '2',
  });
  // a model named "stats" is reachable through its sub-resources
  assert.deepEqual(matchRoute('/v2/models/stats/ready'), {
    name: 'modelReady',
    method: 'GET',
    model: 'stats',
    version: undefined,
  });
});

void test('model names are percent-decoded; malformed escapes are a 400', () => {
  assert.equal(matchRoute('/v2/models/my%20model%2Fx/ready')?.model, 'my model/x');
  assert.throws(
    () => matchRoute('/v2/models/bad%zz/ready'),
    (err: unknown) =>
      err instanceof NereidError && err.code === 'INVALID_ARG' && /percent-encoding/.test(err.message),
  );
});

void test('repository routes, with and without ${REPO}', () => {
  assert.deepEqual(matchRoute('/v2/repository/index'), {
    name: 'repositoryIndex',
    method: 'POST',
    repository: undefined,
  });
  assert.deepEqual(matchRoute('/v2/repository/r1/index'), {
    name: 'repositoryIndex',
    method: 'POST',
    repository: 'r1',
  });
  assert.deepEqual(matchRoute('/v2/repository/models/m/load'), {
    name: 'repositoryLoad',
    method: 'POST',
    model: 'm',
    repository: undefined,
  });
  assert.deepEqual(matchRoute('/v2/repository/models/m/unload'), {
    name: 'repositoryUnload',
    method: 'POST',
    model: 'm',
    repository: undefined,
  });
  assert.deepEqual(matchRoute('/v2/repository/r1/models/m/load'), {
    name: 'repositoryLoad',
    method: 'POST',
    model: 'm',
    repository: 'r1',
  });
  // like Triton's regex, "models" is then a repository name
  assert.deepEqual(matchRoute('/v2/repository/models/index'), {
    name: 'repositoryIndex',
    method: 'POST',
    repository: 'models',
  });
});

void test('everything else is not found', () => {
  for (const path of [
    '/',
    '/v1',
    '/v2/',
    '/v2x',
    '/v22',
    '/v2/health',
    '/v2/health/live/',
    '/v2/health/dead',
    '/v2/models',
    '/v2/models/',
    '/v2/models//ready',
    '/v2/models/m/versions',
    '/v2/models/m/versions/',
    '/v2/models/m/versions/1a',
    '/v2/models/m/versions/-1/infer',
    '/v2/models/m/ready/',
    '/v2/models/m/generate/',
    '/v2/models/m/versions/1/generate_stream/x',
    '/v2/models/m/trace/setting/x',
    '/v2/models/m/constructor',
    '/v2/models/m/toString',
    '/v2/repository',
    '/v2/repository/models/m',
    '/v2/repository/models/m/reload',
    '/v2/repository/a/b/index',
    '/v2/repository//models/m/load',
    '/v2/systemsharedmemory',
    '/v2/systemsharedmemory/region/status',
    '/v2/systemsharedmemory/region//status',
    '/v2/systemsharedmemory/regions/r/status',
    '/v2/systemsharedmemory/region/r/x/status',
    '/v2/systemsharedmemory/region/r/delete',
    '/v2/systemsharedmemory/constructor',
    '/v2/logging/x',
  ]) {
    assert.equal(matchRoute(path), undefined, path);
  }
});

void test('settings and CUDA shared-memory routes', () => {
  assert.deepEqual(matchRoute('/v2/logging'), { name: 'logging', method: 'GET,POST' });
  assert.deepEqual(matchRoute('/v2/trace/setting'), { name: 'traceSetting', method: 'GET,POST' });
  assert.deepEqual(matchRoute('/v2/models/m/trace/setting'), {
    name: 'traceSetting',
    method: 'GET,POST',
    model: 'm',
  });
  assert.throws(() => matchRoute('/v2/models/m/versions/1/trace/setting'), /per model, not per version/);
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/status'), {
    name: 'cudaSharedMemoryStatus',
    method: 'GET',
  });
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/region/r%2F1/status'), {
    name: 'cudaSharedMemoryStatus',
    method: 'GET',
    region: 'r/1',
  });
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/region/r/register'), {
    name: 'cudaSharedMemoryRegister',
    method: 'POST',
    region: 'r',
  });
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/region/r/unregister'), {
    name: 'cudaSharedMemoryUnregister',
    method: 'POST',
    region: 'r',
  });
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/unregister'), {
    name: 'cudaSharedMemoryUnregister',
    method: 'POST',
  });
  // Triton answers 400 "'region name' is necessary ...", not 404: the handler refuses it.
  assert.deepEqual(matchRoute('/v2/cudasharedmemory/register'), {
    name: 'cudaSharedMemoryRegister',
    method: 'POST',
  });
  assert.equal(matchRoute('/v2/cudasharedmemory/region/r/open'), undefined);
  assert.equal(matchRoute('/v2/cudasharedmemory/region/status'), undefined);
});

void test('system shared-memory routes', () => {
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/status'), {
    name: 'systemSharedMemoryStatus',
    method: 'GET',
  });
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/region/in%2F0/status'), {
    name: 'systemSharedMemoryStatus',
    method: 'GET',
    region: 'in/0',
  });
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/region/r/register'), {
    name: 'systemSharedMemoryRegister',
    method: 'POST',
    region: 'r',
  });
  // Triton answers a register without a region with INVALID_ARG, so the route matches.
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/register'), {
    name: 'systemSharedMemoryRegister',
    method: 'POST',
  });
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/unregister'), {
    name: 'systemSharedMemoryUnregister',
    method: 'POST',
  });
  assert.deepEqual(matchRoute('/v2/systemsharedmemory/region/r/unregister'), {
    name: 'systemSharedMemoryUnregister',
    method: 'POST',
    region: 'r',
  });
});

void test('matches are remembered per path, frozen, and never for a path that throws', () => {
  const first = matchRoute('/v2/models/remembered/infer');
  assert.equal(matchRoute('/v2/models/remembered/infer'), first, 'the same match object the second time');
  assert.ok(Object.isFrozen(first));
  assert.equal(matchRoute('/v2/nothing-here'), undefined);
  assert.equal(matchRoute('/v2/nothing-here'), undefined, 'a remembered 404 is still a 404');
  for (let i = 0; i < 2; i++) {
    assert.throws(() => matchRoute('/v2/models/bad%zz/infer'), NereidError, `throws every time (${i})`);
  }
  // Many distinct paths (a scan) do not change what a path matches.
  for (let i = 0; i < 1000; i++) matchRoute(`/v2/models/m${i}/ready`);
  assert.deepEqual(matchRoute('/v2/models/remembered/infer'), {
    name: 'modelInfer',
    method: 'POST',
    model: 'remembered',
    version: undefined,
  });
  assert.deepEqual(matchRoute('/v2/models/m999/ready'), {
    name: 'modelReady',
    method: 'GET',
    model: 'm999',
    version: undefined,
  });
});
