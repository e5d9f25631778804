import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RepositoryIndexEntry } from '../core/index.js';
import { countModels, watchStartup } from './startup-progress.js';

const e = (
  name: string,
  state: RepositoryIndexEntry['state'],
  reason = '',
  version = '1',
): RepositoryIndexEntry => ({
  name,
  version,
  state,
  reason,
});

test('models are counted once each, whatever their versions: ready, failed, loading, waiting', () => {
  const c = countModels([
    e('a', 'READY'),
    e('a', 'UNAVAILABLE', 'unloaded', '2'),
    e('b', 'UNAVAILABLE', 'bad config'),
    e('c', 'LOADING'),
    e('c', 'READY', '', '2'),
    { name: 'd', state: 'UNKNOWN', reason: '' },
  ]);
  assert.deepEqual(c, { total: 4, ready: 1, failed: 1, loading: 2 });
});

test('a slow start says N of M every interval while models load, then one closing line', async () => {
  let entries = [e('a', 'READY'), e('b', 'LOADING'), e('c', 'UNAVAILABLE', 'no backend')];
  const lines: string[] = [];
  let t = 0;
  const w = watchStartup(
    () => entries,
    (l) => lines.push(l),
    5,
    () => t,
  );
  t = 2500;
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(lines.length >= 1, 'a progress line while b loads');
  assert.equal(lines[0], 'loading models: 1 of 3 ready, 1 failed, 1 loading (2.5 s)');
  entries = [e('a', 'READY'), e('b', 'READY'), e('c', 'UNAVAILABLE', 'no backend')];
  await new Promise((r) => setTimeout(r, 50));
  const before = lines.length;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(lines.length, before, 'nothing more once nothing is loading');
  t = 4000;
  assert.equal(w.stop(), '2 of 3 models ready in 4.0 s (1 failed)');
});

test('a repository that cannot be read at the end still closes the start', () => {
  const w = watchStartup(
    () => {
      throw new Error('bucket gone');
    },
    () => undefined,
    1000,
    () => 0,
  );
  assert.equal(w.stop(), 'startup done in 0.0 s');
});
