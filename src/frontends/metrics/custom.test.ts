import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CustomMetricFamily } from '../../backend-api/backend.js';
import type { ModelCustomMetrics } from '../../core/index.js';
import { ReservedNames, isValidMetricName, renderCustomMetrics } from './custom.js';

const reserved = new ReservedNames([
  'nv_inference_count',
  'process_cpu_seconds_total',
  'nodejs_gc_duration_seconds',
]);
const model = (name: string, families: unknown[], version = '1'): ModelCustomMetrics => ({
  model: name,
  version,
  families: families as CustomMetricFamily[],
});

test('counter, gauge and histogram with the labels the model gave, and nothing else', () => {
  const { text, problems } = renderCustomMetrics(
    [
      model('m', [
        {
          name: 'requests_total',
          description: 'Requests seen',
          kind: 'counter',
          metrics: [{ labels: { route: 'a', model: 'm' }, value: 3 }],
        },
        {
          name: 'temperature',
          description: 'Degrees',
          kind: 'gauge',
          metrics: [{ labels: {}, value: -1.5 }],
        },
        {
          name: 'size',
          description: 'Sizes',
          kind: 'histogram',
          metrics: [{ labels: { k: 'v' }, value: 12, buckets: [1, 10], bucketCounts: [1, 2], count: 3 }],
        },
      ]),
    ],
    reserved,
  );
  assert.deepEqual(problems, []);
  assert.equal(
    text,
    [
      '# HELP requests_total Requests seen',
      '# TYPE requests_total counter',
      'requests_total{model="m",route="a"} 3',
      '# HELP size Sizes',
      '# TYPE size histogram',
      'size_count{k="v"} 3',
      'size_sum{k="v"} 12',
      'size_bucket{k="v",le="1"} 1',
      'size_bucket{k="v",le="10"} 2',
      'size_bucket{k="v",le="+Inf"} 3',
      '# HELP temperature Degrees',
      '# TYPE temperature gauge',
      'temperature -1.5',
      '',
    ].join('\n'),
  );
});

test('the same family from several models is one family; equal label sets are summed', () => {
  const counter = (v: number, labels: Record<string, string>): unknown => ({
    name: 'hits_total',
    description: 'Hits',
    kind: 'counter',
    metrics: [{ labels, value: v }],
  });
  const hist = (counts: number[], sum: number, count: number): unknown => ({
    name: 'lat',
    description: 'Latency',
    kind: 'histogram',
    metrics: [{ labels: {}, value: sum, buckets: [1, 2, Infinity], bucketCounts: counts, count }],
  });
  const { text, problems } = renderCustomMetrics(
    [
      model('a', [counter(1, { x: '1' }), hist([1, 1, 2], 3, 2)]),
      model('b', [counter(2, { x: '1' }), counter(5, { x: '2' }), hist([0, 1, 1], 2, 1)]),
    ],
    reserved,
  );
  assert.deepEqual(problems, []);
  assert.match(text, /^hits_total\{x="1"\} 3$/m);
  assert.match(text, /^hits_total\{x="2"\} 5$/m);
  assert.equal(text.match(/# TYPE hits_total counter/g)?.length, 1);
  // The model's own +Inf bound is the exposition's +Inf bucket, written once.
  assert.match(
    text,
    /lat_count 3\nlat_sum 5\nlat_bucket\{le="1"\} 1\nlat_bucket\{le="2"\} 2\nlat_bucket\{le="\+Inf"\} 3\n/,
  );
});

test('a conflicting kind, other bucket bounds and Nereid-owned names are left out and reported', () => {
  const { text, problems } = renderCustomMetrics(
    [
      model('a', [
        { name: 'shared', description: '', kind: 'counter', metrics: [{ labels: {}, value: 1 }] },
        {
          name: 'h',
          description: '',
          kind: 'histogram',
          metrics: [{ labels: {}, value: 1, buckets: [1], bucketCounts: [1], count: 1 }],
        },
        { name: 'nv_inference_count', description: '', kind: 'counter', metrics: [{ labels: {}, value: 9 }] },
        { name: 'nv_anything_new', description: '', kind: 'gauge', metrics: [{ labels: {}, value: 9 }] },
        {
          name: 'process_cpu_seconds_total',
          description: '',
          kind: 'gauge',
          metrics: [{ labels: {}, value: 9 }],
        },
        {
          name: 'nodejs_gc_duration_seconds_sum',
          description: '',
          kind: 'gauge',
          metrics: [{ labels: {}, value: 9 }],
        },
      ]),
      model('b', [
        { name: 'shared', description: '', kind: 'gauge', metrics: [{ labels: {}, value: 100 }] },
        {
          name: 'h',
          description: '',
          kind: 'histogram',
          metrics: [{ labels: {}, value: 1, buckets: [2], bucketCounts: [1], count: 1 }],
        },
        { name: 'h_count', description: '', kind: 'counter', metrics: [{ labels: {}, value: 7 }] },
      ]),
    ],
    reserved,
  );
  assert.match(text, /^shared 1$/m);
  assert.match(text, /^h_count 1$/m);
  assert.doesNotMatch(text, /nv_|process_|nodejs_|100|7\n/);
  assert.equal(problems.length, 7, problems.join('\n'));
  assert.ok(
    problems.some((p) => /'shared' of model 'b' version 1 is a gauge, but model 'a' version 1/.test(p)),
  );
  assert.ok(problems.some((p) => /other bucket bounds/.test(p)));
  assert.ok(problems.some((p) => /'h_count' .* would write 'h_count', which family 'h' writes/.test(p)));
  assert.equal(problems.filter((p) => /Nereid's own metrics/.test(p)).length, 4);
});

test('hostile names and values never reach the exposition unescaped', () => {
  const { text, problems } = renderCustomMetrics(
    [
      model('evil', [
        { name: 'bad name\n# TYPE x counter', description: 'd', kind: 'counter', metrics: [] },
        { name: '0starts_with_digit', description: 'd', kind: 'counter', metrics: [] },
        {
          name: 'ok_total',
          description: 'line1\nline2 \\ end',
          kind: 'counter',
          metrics: [
            { labels: { v: 'quote " backslash \\ newline \n end' }, value: 1 },
            { labels: { 'bad-label': 'x' }, value: 2 },
            { labels: { __reserved: 'x' }, value: 3 },
            { labels: { n: 5 }, value: 4 },
            { labels: {}, value: 'NaN' },
            null,
          ],
        },
        {
          name: 'hist',
          description: '',
          kind: 'histogram',
          metrics: [
            { labels: { le: '1' }, value: 1, buckets: [1], bucketCounts: [1], count: 1 },
            { labels: {}, value: 1, buckets: [2, 1], bucketCounts: [1, 1], count: 1 },
            { labels: {}, value: 1, buckets: [1, 2], bucketCounts: [1], count: 1 },
          ],
        },
        { name: 'weird_kind', description: '', kind: 'summary', metrics: [] },
        'not a family',
      ]),
    ],
    reserved,
  );
  assert.equal(
    text,
    [
      '# HELP ok_total line1\\nline2 \\\\ end',
      '# TYPE ok_total counter',
      'ok_total{v="quote \\" backslash \\\\ newline \\n end"} 1',
      '',
    ].join('\n'),
  );
  assert.equal(problems.length, 12, problems.join('\n'));
  assert.ok(
    problems.every((p) => !p.includes('\n')),
    'problems are single log lines',
  );
  assert.ok(problems.some((p) => p.includes('"bad name\\n# TYPE x counter"')));
});

test('metric names follow Prometheus rules', () => {
  for (const ok of ['a', 'a_b:c', '_x', ':y', 'vllm:prompt_tokens_total'])
    assert.ok(isValidMetricName(ok), ok);
  for (const bad of ['', '1a', 'a-b', 'a b', 'ä', 'a\n']) assert.ok(!isValidMetricName(bad), bad);
});
