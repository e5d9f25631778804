import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CkmsQuantiles, TimeWindowQuantiles } from './quantiles.js';

const TARGETS = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.99, error: 0.001 },
];

/** A fixed shuffle of 1..n (a linear congruential generator, so the test is repeatable). */
function shuffled(n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i + 1);
  let seed = 12345;
  for (let i = n - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

describe('CkmsQuantiles', () => {
  it('is NaN before any observation', () => {
    assert.ok(Number.isNaN(new CkmsQuantiles(TARGETS).get(0.5)));
  });

  it('stays within each target rank error over many observations', () => {
    const n = 20_000;
    const q = new CkmsQuantiles(TARGETS);
    for (const v of shuffled(n)) q.insert(v);
    assert.equal(q.count, n);
    for (const t of TARGETS) {
      const got = q.get(t.quantile);
      // Values are their own ranks here, so the rank error is the value error.
      const allowed = t.error * n + 1;
      assert.ok(
        Math.abs(got - t.quantile * n) <= allowed,
        `q${t.quantile}: ${got} vs ${t.quantile * n} ± ${allowed}`,
      );
    }
  });

  it('keeps far fewer samples than observations', () => {
    const q = new CkmsQuantiles([{ quantile: 0.5, error: 0.05 }]);
    for (const v of shuffled(50_000)) q.insert(v);
    // Reach into the estimate's size through its accuracy: a coarse target answers from a small summary.
    const inner = (q as unknown as { samples: unknown[] }).samples.length;
    assert.ok(inner < 2_000, `kept ${inner} samples`);
  });

  it('answers exactly for a single value', () => {
    const q = new CkmsQuantiles(TARGETS);
    q.insert(42);
    assert.equal(q.get(0.5), 42);
    assert.equal(q.get(0.99), 42);
  });
});

describe('TimeWindowQuantiles', () => {
  it('forgets observations older than the window', () => {
    let now = 0;
    const w = new TimeWindowQuantiles([{ quantile: 0.5, error: 0.01 }], 60_000, 5, () => now);
    for (let i = 0; i < 100; i++) w.insert(1000);
    assert.equal(w.get(0.5), 1000);
    now = 30_000;
    for (let i = 0; i < 100; i++) w.insert(10);
    // Both halves are in the window.
    assert.ok([10, 1000].includes(w.get(0.5)));
    now = 65_000;
    assert.equal(w.get(0.5), 10, 'the old observations aged out');
    now = 200_000;
    assert.ok(Number.isNaN(w.get(0.5)), 'an idle window is empty');
  });
});
