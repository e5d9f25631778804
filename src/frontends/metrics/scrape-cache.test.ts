/** The /metrics port's scrape cache: fresh renders for an ordinary scraper, one render a window for a crowd. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScrapeCache } from './scrape-cache.js';

function setup(burst = 3, windowMs = 1000) {
  let clock = 0;
  let renders = 0;
  const cache = new ScrapeCache(
    () => {
      renders++;
      return Promise.resolve(`render ${renders}`);
    },
    { burst, windowMs, now: () => clock },
  );
  return {
    cache,
    renders: () => renders,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

test('a scraper under the burst gets a fresh render every time', async () => {
  const s = setup();
  for (let i = 1; i <= 6; i++) {
    assert.equal(await s.cache.scrape(), `render ${i}`);
    s.advance(400); // 2.5 a second: under a burst of 3 per window
  }
  assert.equal(s.renders(), 6);
});

test('past the burst in one window, the last text is reused; the next window renders again', async () => {
  const s = setup();
  const got: string[] = [];
  for (let i = 0; i < 50; i++) {
    got.push(await s.cache.scrape());
    s.advance(10);
  }
  assert.equal(s.renders(), 3, '50 scrapes in half a window: the burst rendered, the rest reused');
  assert.deepEqual(got.slice(0, 3), ['render 1', 'render 2', 'render 3']);
  assert.ok(got.slice(3).every((t) => t === 'render 3'));
  s.advance(1000);
  assert.equal(await s.cache.scrape(), 'render 4');
});

test('overlapping scrapes share one render; a failed render is not kept', async () => {
  let release!: (text: string) => void;
  let calls = 0;
  let fail = true;
  const cache = new ScrapeCache(
    () => {
      calls++;
      if (fail) return Promise.reject(new Error('boom'));
      return new Promise<string>((resolve) => (release = resolve));
    },
    { burst: 100, windowMs: 1000, now: () => 0 },
  );
  await assert.rejects(cache.scrape(), /boom/);
  fail = false;
  const a = cache.scrape();
  const b = cache.scrape();
  release('shared');
  assert.deepEqual(await Promise.all([a, b]), ['shared', 'shared']);
  assert.equal(calls, 2);
});
