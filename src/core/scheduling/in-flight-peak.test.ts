import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InFlightPeak } from './in-flight-peak.js';

const S = 1_000_000_000n;

test('the peak is the largest number observed in this window and the one before', () => {
  const p = new InFlightPeak(S);
  p.observe(1, 0n);
  p.observe(8, 100n);
  p.observe(3, 200n);
  assert.equal(p.peak(300n), 8);
  // Next window: the 8 is remembered as the previous window's peak.
  p.observe(2, S + 10n);
  assert.equal(p.peak(S + 20n), 8);
  // The window after that: only the 2 of the previous window remains.
  p.observe(1, 2n * S + 10n);
  assert.equal(p.peak(2n * S + 20n), 2);
});

test('a load that grows is followed at once; a quiet gap of two windows forgets everything', () => {
  const p = new InFlightPeak(S);
  p.observe(4, 0n);
  p.observe(32, 5n);
  assert.equal(p.peak(6n), 32);
  assert.equal(p.peak(3n * S), 0);
  p.observe(1, 3n * S + 1n);
  assert.equal(p.peak(3n * S + 2n), 1);
});

test('windows stay aligned when time jumps by more than one window', () => {
  const p = new InFlightPeak(S);
  p.observe(5, 0n);
  p.observe(7, S + S / 2n); // next window, started at S
  p.observe(6, 2n * S + 1n); // the one after: 7 is previous
  assert.equal(p.peak(2n * S + 2n), 7);
});
