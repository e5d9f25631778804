import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { encodeEntry, type CachedResponse } from './codec.js';
import type { CacheKey } from './key.js';
import { LocalResponseCache } from './local.js';

function keyOf(s: string): CacheKey {
  const digest = createHash('sha256').update(s).digest();
  return { digest, hex: digest.toString('hex') };
}

const responseOf = (bytes: number, fill = 1): CachedResponse => ({
  outputs: [{ name: 'OUT', datatype: 'UINT8', shape: [bytes], data: Buffer.alloc(bytes, fill) }],
  parameters: {},
});

/** What one entry costs against the bound: its encoded bytes and its key. */
const costOf = (k: CacheKey, r: CachedResponse): number => encodeEntry(k.digest, r).length + k.hex.length;

describe('LocalResponseCache', () => {
  it('answers what was stored, byte for byte, and counts hits, misses and lookups', () => {
    const cache = new LocalResponseCache(1 << 20);
    const k = keyOf('a');
    assert.equal(cache.lookup(k), undefined);
    assert.equal(cache.insert(k, responseOf(100, 9)), 'stored');
    const hit = cache.lookup(k);
    assert.ok(hit);
    assert.ok(hit.outputs[0].data.equals(Buffer.alloc(100, 9)));
    const m = cache.metrics();
    assert.equal(m.lookups, 2);
    assert.equal(m.hits, 1);
    assert.equal(m.misses, 1);
    assert.equal(m.entries, 1);
    assert.equal(m.errors, 0);
  });

  it('accounts the real encoded size of each entry', () => {
    const cache = new LocalResponseCache(1 << 20);
    const a = keyOf('a');
    const b = keyOf('b');
    cache.insert(a, responseOf(1000));
    cache.insert(b, responseOf(3000));
    assert.equal(cache.usedBytes, costOf(a, responseOf(1000)) + costOf(b, responseOf(3000)));
    assert.equal(cache.metrics().utilization, cache.usedBytes / (1 << 20));
    // Replacing an entry replaces its cost.
    cache.insert(a, responseOf(10));
    assert.equal(cache.usedBytes, costOf(a, responseOf(10)) + costOf(b, responseOf(3000)));
  });

  it('evicts least recently used entries until a new one fits', () => {
    const one = costOf(keyOf('k0'), responseOf(1000));
    const cache = new LocalResponseCache(3 * one);
    const keys = [0, 1, 2, 3].map((i) => keyOf(`k${i}`));
    cache.insert(keys[0], responseOf(1000));
    cache.insert(keys[1], responseOf(1000));
    cache.insert(keys[2], responseOf(1000));
    assert.ok(cache.lookup(keys[0]), 'k0 used: now the most recent');
    cache.insert(keys[3], responseOf(1000));
    assert.equal(cache.lookup(keys[1]), undefined, 'k1 was the least recently used');
    assert.ok(cache.lookup(keys[0]));
    assert.ok(cache.lookup(keys[2]));
    assert.ok(cache.lookup(keys[3]));
    assert.equal(cache.metrics().evictions, 1);
    assert.ok(cache.usedBytes <= 3 * one);
  });

  it('refuses an entry larger than the whole cache and keeps what it holds', () => {
    const small = keyOf('small');
    const cache = new LocalResponseCache(costOf(small, responseOf(100)) + 10);
    assert.equal(cache.insert(small, responseOf(100)), 'stored');
    assert.equal(cache.insert(keyOf('big'), responseOf(100_000)), 'too-large');
    assert.ok(cache.lookup(small));
    assert.equal(cache.metrics().evictions, 0);
  });

  it('stores nothing in a cache too small for any entry, and never breaks', () => {
    const cache = new LocalResponseCache(1);
    assert.equal(cache.insert(keyOf('x'), responseOf(0)), 'too-large');
    assert.equal(cache.lookup(keyOf('x')), undefined);
    assert.equal(cache.usedBytes, 0);
  });

  it('gives every hit its own copy of the tensors', () => {
    const cache = new LocalResponseCache(1 << 20);
    const k = keyOf('a');
    cache.insert(k, responseOf(16, 3));
    cache.lookup(k)!.outputs[0].data.fill(0);
    assert.ok(cache.lookup(k)!.outputs[0].data.equals(Buffer.alloc(16, 3)));
  });

  it('keeps its own copy of what was inserted', () => {
    const cache = new LocalResponseCache(1 << 20);
    const k = keyOf('a');
    const r = responseOf(16, 3);
    cache.insert(k, r);
    r.outputs[0].data.fill(0);
    assert.ok(cache.lookup(k)!.outputs[0].data.equals(Buffer.alloc(16, 3)));
  });
});
