import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CustomMetricFamily } from '../backend-api/backend.js';
import { labelKey, mergeInstanceMetrics } from './custom-metrics.js';

const counter = (value: number, labels: Record<string, string> = {}): CustomMetricFamily => ({
  name: 'requests_total',
  description: 'Requests',
  kind: 'counter',
  metrics: [{ labels, value }],
});

test('a label set is the same whatever order its labels come in', () => {
  assert.equal(labelKey({ a: '1', b: '2' }), labelKey({ b: '2', a: '1' }));
  assert.notEqual(labelKey({ a: '1' }), labelKey({ a: '2' }));
});

test('counters and gauges of the same family and labels are summed; other label sets stay apart', () => {
  const gauge = (v: number): CustomMetricFamily => ({
    name: 'queue',
    description: 'Queue depth',
    kind: 'gauge',
    metrics: [{ labels: { q: 'x' }, value: v }],
  });
  const merged = mergeInstanceMetrics([
    [counter(3, { model: 'm', route: 'a' }), gauge(2)],
    [counter(4, { route: 'a', model: 'm' }), counter(1, { model: 'm', route: 'b' }), gauge(5)],
  ]);
  assert.deepEqual(
    merged.map((f) => [f.name, f.kind, f.metrics.map((m) => [m.labels, m.value])]),
    [
      [
        'requests_total',
        'counter',
        [
          [{ model: 'm', route: 'a' }, 7],
          [{ model: 'm', route: 'b' }, 1],
        ],
      ],
      ['queue', 'gauge', [[{ q: 'x' }, 7]]],
    ],
  );
});

test('histograms sum bucket counts, sums and counts; different bounds and kinds are left out', () => {
  const histogram = (bounds: number[], counts: number[], sum: number, count: number): CustomMetricFamily => ({
    name: 'latency',
    description: 'Latency',
    kind: 'histogram',
    metrics: [{ labels: {}, value: sum, buckets: bounds, bucketCounts: counts, count }],
  });
  const merged = mergeInstanceMetrics([
    [histogram([1, 5], [1, 2], 4.5, 3)],
    [histogram([1, 5], [0, 1], 3, 1)],
    [histogram([1, 10], [9, 9], 9, 9)],
    [{ name: 'latency', description: 'x', kind: 'counter', metrics: [{ labels: {}, value: 100 }] }],
  ]);
  assert.equal(merged.length, 1);
  assert.deepEqual(merged[0].metrics, [
    { labels: {}, value: 7.5, buckets: [1, 5], bucketCounts: [1, 3], count: 4 },
  ]);
});

test('merging leaves the inputs untouched', () => {
  const a: CustomMetricFamily = {
    name: 'h',
    description: '',
    kind: 'histogram',
    metrics: [{ labels: {}, value: 1, buckets: [1], bucketCounts: [1], count: 1 }],
  };
  mergeInstanceMetrics([[a], [a]]);
  assert.deepEqual(a.metrics[0].bucketCounts, [1]);
});
