import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StopMatcher } from './stop.js';

function run(stops: string[], pieces: string[]): { out: string[]; done: boolean } {
  const m = new StopMatcher(stops);
  const out = pieces.map((p) => m.push(p));
  out.push(m.flush());
  return { out, done: m.done };
}

test('without stop sequences every piece passes through', () => {
  assert.deepEqual(run([], ['a', ' b']), { out: ['a', ' b', ''], done: false });
});

test('a stop sequence inside one piece cuts there and drops the rest', () => {
  assert.deepEqual(run(['is'], ['This', ' is', ' it']), { out: ['Th', '', '', ''], done: true });
});

test('a stop sequence split over pieces is held back, never partly sent', () => {
  const r = run(['END'], ['one E', 'N', 'D two']);
  assert.deepEqual(r.out, ['one ', '', '', '']);
  assert.equal(r.done, true);
});

test('a held prefix that does not complete is released', () => {
  const r = run(['END'], ['one E', 'X', ' two E']);
  assert.equal(r.out.join(''), 'one EX two E');
  assert.equal(r.done, false);
});

test('the earliest of several stop sequences wins', () => {
  assert.equal(run(['c', 'ab'], ['xabc']).out.join(''), 'x');
});
