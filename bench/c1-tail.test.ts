import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cycles, parseGcLog, quantile, requestTimestamps, tailReport } from './c1-tail.js';

/** A traced HTTP request starting at `t0` µs whose parts last the given µs (gap: until the next one). */
function request(id: number, t0: number, parts: [number, number, number, number, number]) {
  const names = [
    'HTTP_RECV_START',
    'COMPUTE_START',
    'COMPUTE_INPUT_END',
    'COMPUTE_OUTPUT_START',
    'COMPUTE_END',
    'HTTP_SEND_END',
  ];
  let t = t0;
  const times = [t, ...parts.map((p) => (t += p))];
  // As the server writes them: one event per timestamp, not in time order.
  return names.map((name, i) => ({ id, timestamps: [{ name, ns: times[i] * 1000 }] })).reverse();
}

test('each cycle is split into its parts, the gap running to the next request', () => {
  const events = [...request(1, 0, [10, 20, 30, 40, 50]), ...request(2, 200, [1, 1, 1, 1, 1])];
  const c = cycles(requestTimestamps(events));
  assert.equal(c.length, 1, 'the last request ends no cycle');
  assert.deepEqual(c[0].parts, { pre: 10, to_stub: 20, model: 30, from_stub: 40, post: 50, gap: 50 });
  assert.equal(c[0].total, 200);
});

test('a request missing a compute timestamp (an error reply) ends no cycle', () => {
  const broken = request(2, 100, [1, 1, 1, 1, 1]).filter((e) => e.timestamps[0].name !== 'COMPUTE_END');
  const events = [...request(1, 0, [1, 1, 1, 1, 1]), ...broken, ...request(3, 200, [1, 1, 1, 1, 1])];
  const c = cycles(requestTimestamps(events));
  assert.deepEqual(
    c.map((x) => x.total),
    [100],
  );
});

test('the slowest cycle is blamed on the part that grew, and a collection inside it is counted', () => {
  const events = [];
  let t0 = 0;
  for (let i = 0; i < 200; i++) {
    const parts: [number, number, number, number, number] = [10, i === 150 ? 900 : 20, 30, 40, 50];
    events.push(...request(i + 1, t0, parts));
    t0 += parts.reduce((a, b) => a + b, 0) + 50;
  }
  const all = cycles(requestTimestamps(events));
  const slow = all.find((c) => c.parts.to_stub > 100)!;
  const gcs = parseGcLog(`${slow.startNs + 5000n} 700000 1\n${all[10].startNs + 1n} 500000 1\n`);
  const r = tailReport(all, gcs);
  assert.equal(r.top.count, 2, 'the slowest 1 % of 199 cycles, rounded up');
  assert.equal(r.top.threshold, 200);
  assert.equal(r.grewMost.to_stub, 1);
  assert.equal(r.gc!.collections, 2);
  assert.equal(r.gc!.topWithGc, 1);
  assert.equal(r.gc!.allWithGc, 2);
  assert.equal(r.gc!.pauseUsPerRequest, 1200 / 199);
});

test('quantile is the nearest rank; no values give NaN', () => {
  assert.equal(quantile([5, 1, 3, 2, 4], 0.5), 3);
  assert.equal(quantile([5, 1, 3, 2, 4], 0.99), 5);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});
