import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CustomMetricFamily } from '../../backend-api/backend.js';
import { collectCustomMetrics, type CustomMetricsProvider } from './custom-metrics.js';

const family: CustomMetricFamily = {
  name: 'n_total',
  description: 'n',
  kind: 'counter',
  metrics: [{ labels: {}, value: 1 }],
};

const provider = (
  modelName: string,
  version: number,
  answer: () => Promise<readonly CustomMetricFamily[]>,
): CustomMetricsProvider => ({ modelName, version, customMetrics: answer });

test('answers come ordered by model and version; a failing model reports its error and no families', async () => {
  const out = await collectCustomMetrics([
    provider('b', 1, () => Promise.resolve([family])),
    provider('a', 2, () => Promise.reject(new Error('worker gone'))),
    provider('a', 1, () => Promise.resolve([])),
  ]);
  assert.deepEqual(
    out.map((o) => [o.model, o.version, o.families.length, o.error]),
    [
      ['a', '1', 0, undefined],
      ['a', '2', 0, 'worker gone'],
      ['b', '1', 1, undefined],
    ],
  );
});

test('a model that never answers is reported after the timeout, and the others are kept', async () => {
  const start = Date.now();
  const out = await collectCustomMetrics(
    [
      provider('stuck', 1, () => new Promise(() => undefined)),
      provider('quick', 1, () => Promise.resolve([family])),
    ],
    100,
  );
  const took = Date.now() - start;
  assert.ok(took >= 90, `gave up after ${took} ms, before the 100 ms timeout`);
  assert.deepEqual(
    out.map((o) => [o.model, o.families.length, o.error]),
    [
      ['quick', 1, undefined],
      ['stuck', 0, 'no answer within 100 ms'],
    ],
  );
});
