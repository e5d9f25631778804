import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelConfig } from '../../model-config/model-config.js';
import {
  DEFAULT_SHM_PREFIX,
  DEFAULT_SHM_THRESHOLD,
  pythonBackendOptions,
  pythonModelSettings,
} from './options.js';

void test("defaults are Triton's, plus Nereid's own keys", () => {
  const o = pythonBackendOptions({});
  assert.equal(o.shmDefaultByteSize, 1 << 20);
  assert.equal(o.shmGrowthByteSize, 1 << 20);
  assert.equal(o.stubTimeoutMs, 30_000);
  assert.equal(o.shmRegionPrefix, DEFAULT_SHM_PREFIX);
  assert.equal(o.pythonExecutable, undefined);
  assert.equal(o.shmThreshold, DEFAULT_SHM_THRESHOLD);
  assert.equal(o.shmDisabled, false);
  assert.equal(o.pipelineDepth, 2);
});

void test('values are read and checked', () => {
  const o = pythonBackendOptions({
    'shm-default-byte-size': '4194304',
    'shm-growth-byte-size': '65536',
    'stub-timeout-seconds': '0.5',
    'shm-region-prefix-name': 'my_prefix-1.',
    'python-executable': ' /opt/py/bin/python3 ',
    'shm-tensor-threshold-byte-size': '0',
    'disable-shm': 'true',
    shm_message_queue_size: '10',
    'thread-pool-size': '4',
    'default-max-batch-size': '4',
    'pipeline-depth': '1',
  });
  assert.equal(o.pipelineDepth, 1);
  assert.equal(o.shmDefaultByteSize, 4 << 20);
  assert.equal(o.shmGrowthByteSize, 65536);
  assert.equal(o.stubTimeoutMs, 500);
  assert.equal(o.shmRegionPrefix, 'my_prefix-1.');
  assert.equal(o.pythonExecutable, '/opt/py/bin/python3');
  assert.equal(o.shmThreshold, 0);
  assert.equal(o.shmDisabled, true);

  for (const [key, value, pattern] of [
    ['shm-default-byte-size', '1000', /at least 1048576 bytes/],
    ['shm-default-byte-size', '1e9', /must be an integer/],
    ['shm-growth-byte-size', '0', /at least 1/],
    ['stub-timeout-seconds', '0', /must be a number > 0/],
    ['stub-timeout-seconds', 'soon', /must be a number > 0/],
    ['shm-region-prefix-name', '../etc/', /letters, digits/],
    ['shm-region-prefix-name', '', /letters, digits/],
    ['thread-pool-size', '0', /at least 1/],
    ['disable-shm', 'maybe', /true or false/],
    ['pipeline-depth', '0', /at least 1/],
    ['pipeline-depth', '17', /at most 16/],
  ] as const) {
    assert.throws(
      () => pythonBackendOptions({ [key]: value }),
      (e: Error & { code?: string }) => e.code === 'INVALID_ARG' && pattern.test(e.message),
      `${key}=${value}`,
    );
  }
});

void test('unknown keys are reported, not fatal', () => {
  const warnings: string[] = [];
  pythonBackendOptions({ 'shm-defualt-byte-size': '1' }, (m) => warnings.push(m));
  assert.deepEqual(warnings, ["unknown python backend config key 'shm-defualt-byte-size' is ignored"]);
});

void test('execution timeout, stub memory limit and allowed environment folders', () => {
  const d = pythonBackendOptions({});
  assert.equal(d.executionTimeoutMs, 300_000);
  assert.ok(d.stubMemoryLimitBytes > 0 && d.stubMemoryLimitBytes % (1024 * 1024) === 0);
  assert.deepEqual(d.executionEnvAllowedPaths, []);

  const o = pythonBackendOptions({
    'execution-timeout-seconds': '2.5',
    'stub-memory-limit-mb': '512',
    'execution-env-allowed-paths': '/opt/envs:/srv/conda/',
  });
  assert.equal(o.executionTimeoutMs, 2500);
  assert.equal(o.stubMemoryLimitBytes, 512 * 1024 * 1024);
  assert.deepEqual(o.executionEnvAllowedPaths, ['/opt/envs', '/srv/conda']);
  assert.equal(pythonBackendOptions({ 'execution-timeout-seconds': '0' }).executionTimeoutMs, 0);

  const config = (params: Record<string, string>): ModelConfig =>
    ({
      parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }])),
    }) as unknown as ModelConfig;
  assert.deepEqual(pythonModelSettings(config({}), o), {
    executionTimeoutMs: 2500,
    stubMemoryLimitBytes: 512 * 1024 * 1024,
  });
  assert.deepEqual(
    pythonModelSettings(config({ execution_timeout_seconds: '0', stub_memory_limit_mb: '64' }), o),
    { executionTimeoutMs: 0, stubMemoryLimitBytes: 64 * 1024 * 1024 },
  );

  for (const [key, value, pattern] of [
    ['execution-timeout-seconds', '-1', /seconds >= 0/],
    ['execution-timeout-seconds', 'never', /seconds >= 0/],
    ['stub-memory-limit-mb', '1.5', /whole number of MiB/],
    ['execution-env-allowed-paths', 'relative/dir', /absolute folders/],
  ] as const) {
    assert.throws(
      () => pythonBackendOptions({ [key]: value }),
      (e: Error & { code?: string }) => e.code === 'INVALID_ARG' && pattern.test(e.message),
      `${key}=${value}`,
    );
  }
  assert.throws(
    () => pythonModelSettings(config({ stub_memory_limit_mb: 'lots' }), o),
    /model parameter 'stub_memory_limit_mb'/,
  );
});
