// The METRICS frame parser (hostile input left out, NaN/Inf spelled as strings) and the merge of a model's
// instances: counters and histograms summed, gauges summed until set() and then the latest setter's value,
// the first description, other kinds and other bucket bounds left out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeStubMetrics, parseMetricsReply, type StubFamily } from './metrics.js';

test('parses what the stub writes and drops what is malformed', () => {
  const families = parseMetricsReply({
    query: 1,
    families: [
      { n: 'c', d: 'a counter', k: 'counter', m: [{ l: { a: 'x' }, v: 2 }, { l: { a: 1 }, v: 3 }, { v: 1 }] },
      { n: 'g', d: 'a gauge', k: 'gauge', m: [{ l: {}, v: 'NaN', s: 17 }] },
      {
        n: 'h',
        d: 'a histogram',
        k: 'histogram',
        m: [
          { l: {}, v: 4.5, b: [1, '+Inf'], bc: [1, 3], c: 3 },
          { l: { z: 'no buckets' }, v: 1 },
        ],
      },
      { n: 'bad', d: 'unknown kind', k: 'summary', m: [] },
      { n: 5, d: 'no name', k: 'counter', m: [] },
      'nonsense',
    ],
  });
  assert.deepEqual(families, [
    {
      name: 'c',
      description: 'a counter',
      kind: 'counter',
      metrics: [{ labels: { a: 'x' }, value: 2, setAt: 0 }],
    },
    { name: 'g', description: 'a gauge', kind: 'gauge', metrics: [{ labels: {}, value: NaN, setAt: 17 }] },
    {
      name: 'h',
      description: 'a histogram',
      kind: 'histogram',
      metrics: [{ labels: {}, value: 4.5, buckets: [1, Infinity], bucketCounts: [1, 3], count: 3, setAt: 0 }],
    },
  ]);
  assert.deepEqual(parseMetricsReply({ query: 1 }), []);
  assert.deepEqual(parseMetricsReply(null), []);
});

test('merges the instances as one shared series per family and labels', () => {
  const a: StubFamily[] = [
    {
      name: 'req',
      description: 'first',
      kind: 'counter',
      metrics: [{ labels: { m: 'x', i: '0' }, value: 2, setAt: 0 }],
    },
    { name: 'moved', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: 3, setAt: 0 }] },
    { name: 'last', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: 10, setAt: 500 }] },
    {
      name: 'lat',
      description: 'h',
      kind: 'histogram',
      metrics: [{ labels: {}, value: 3, buckets: [1, 5], bucketCounts: [1, 2], count: 2, setAt: 0 }],
    },
  ];
  const b: StubFamily[] = [
    // Same labels in another order: the same series.
    {
      name: 'req',
      description: 'second',
      kind: 'counter',
      metrics: [{ labels: { i: '0', m: 'x' }, value: 5, setAt: 0 }],
    },
    { name: 'moved', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: -1, setAt: 0 }] },
    { name: 'last', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: 20, setAt: 400 }] },
    {
      name: 'lat',
      description: 'h',
      kind: 'histogram',
      metrics: [{ labels: {}, value: 7, buckets: [1, 5], bucketCounts: [0, 1], count: 2, setAt: 0 }],
    },
  ];
  const c: StubFamily[] = [
    {
      name: 'req',
      description: 'third',
      kind: 'gauge',
      metrics: [{ labels: { m: 'x', i: '0' }, value: 100, setAt: 0 }],
    },
    { name: 'last', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: 1, setAt: 0 }] },
    {
      name: 'lat',
      description: 'h',
      kind: 'histogram',
      metrics: [{ labels: {}, value: 50, buckets: [2, 5], bucketCounts: [0, 0], count: 1, setAt: 0 }],
    },
  ];
  assert.deepEqual(mergeStubMetrics([a, b, c]), [
    {
      name: 'last',
      description: 'g',
      kind: 'gauge',
      metrics: [{ labels: {}, value: 10 }],
    },
    {
      name: 'lat',
      description: 'h',
      kind: 'histogram',
      metrics: [{ labels: {}, value: 10, buckets: [1, 5], bucketCounts: [1, 3], count: 4 }],
    },
    { name: 'moved', description: 'g', kind: 'gauge', metrics: [{ labels: {}, value: 2 }] },
    {
      name: 'req',
      description: 'first',
      kind: 'counter',
      metrics: [{ labels: { m: 'x', i: '0' }, value: 7 }],
    },
  ]);
  assert.deepEqual(mergeStubMetrics([]), []);
});
