import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEADER_CACHE_MAX_BYTES, HeaderCache } from './header-cache.js';

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');

void test('a remembered header is found by equal bytes only', () => {
  const cache = new HeaderCache();
  const doc = { inputs: [] };
  cache.set(bytes('{"inputs":[]}'), doc);
  assert.equal(cache.get(bytes('{"inputs":[]}')), doc);
  assert.equal(cache.get(bytes('{"inputs":[ ]}')), undefined, 'other bytes');
  assert.equal(cache.get(bytes('{"inputs":{}}')), undefined, 'same length, other bytes');
});

void test('the cache is bounded: a few slots reused in turn, large headers never kept', () => {
  const cache = new HeaderCache();
  const header = (i: number): Buffer => bytes(`{"id":"${i}"}`);
  for (let i = 0; i < 9; i++) cache.set(header(i), i);
  assert.equal(cache.get(header(0)), undefined, 'the oldest slot went to the ninth header');
  for (let i = 1; i < 9; i++) assert.equal(cache.get(header(i)), i);

  const large = Buffer.alloc(HEADER_CACHE_MAX_BYTES + 1, 0x20);
  cache.set(large, 'large');
  assert.equal(cache.get(large), undefined);
  assert.equal(cache.get(header(1)), 1, 'a refused large header takes no slot');
});
