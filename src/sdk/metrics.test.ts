import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CustomMetricFamily } from '../common/metric-family.js';
import { MetricFamily, MetricRegistry } from './metrics.js';

test('a registry snapshot is what the backend contract carries: cumulative histogram buckets, labels as given', () => {
  const registry = new MetricRegistry();
  const h = new MetricFamily({ name: 'sizes', description: 'Sizes', kind: 'histogram' }, registry);
  const c = new MetricFamily({ name: 'calls_total', description: 'Calls', kind: 'counter' }, registry);
  const m = h.metric({ model: 'x' }, { buckets: [1, 5] });
  for (const v of [0.5, 3, 9]) m.observe(v);
  c.metric({ b: '2', a: '1' }).increment(2);
  c.metric({ a: '1', b: '2' }).increment(); // the same label set, whatever the order
  const snapshot: CustomMetricFamily[] = registry.snapshot();
  assert.deepEqual(snapshot, [
    {
      name: 'sizes',
      description: 'Sizes',
      kind: 'histogram',
      metrics: [{ labels: { model: 'x' }, value: 12.5, buckets: [1, 5], bucketCounts: [1, 2], count: 3 }],
    },
    {
      name: 'calls_total',
      description: 'Calls',
      kind: 'counter',
      metrics: [{ labels: { b: '2', a: '1' }, value: 3 }],
    },
  ]);
});

test('names Prometheus would refuse are refused when the family or metric is made', () => {
  const registry = new MetricRegistry();
  assert.throws(() => new MetricFamily({ name: 'bad name', description: '', kind: 'counter' }, registry));
  const f = new MetricFamily({ name: 'ok', description: '', kind: 'gauge' }, registry);
  assert.throws(() => f.metric({ 'bad-label': 'x' }));
  assert.throws(
    () => new MetricFamily({ name: 'ok', description: '', kind: 'counter' }, registry),
    /already exists/,
  );
});
