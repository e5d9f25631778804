import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { ModelRepositoryManager } from './manager.js';
import { FakeLoader, parsers, removeRepo, tempRepo, writeModel } from './repository.testkit.js';

async function fixture(repos = 1) {
  const dirs = await Promise.all(Array.from({ length: repos }, () => tempRepo()));
  const loader = new FakeLoader();
  // repositoryPollSecs 0: no timer; the test drives every cycle with pollOnce().
  const m = new ModelRepositoryManager(
    { repositoryPaths: dirs, controlMode: 'poll', repositoryPollSecs: 0, ...parsers },
    loader,
  );
  return {
    dirs,
    repo: dirs[0],
    loader,
    m,
    async done() {
      await m.close();
      for (const d of dirs) await removeRepo(d);
    },
  };
}

void test('a poll cycle loads added models, reloads changed ones, unloads removed ones', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: {} });
    await writeModel(f.repo, 'b', { config: {} });
    await writeModel(f.repo, 'steady', { config: {} });
    assert.deepEqual(await f.m.startup(), []);
    const a1 = f.m.getVersion('a');
    const steady = f.m.getVersion('steady');
    const callsBefore = f.loader.calls.length;
    assert.deepEqual(await f.m.pollOnce(), { added: [], modified: [], removed: [], failed: [] });
    assert.equal(f.loader.calls.length, callsBefore, 'nothing changed, nothing loaded');

    await writeModel(f.repo, 'c', { config: {} });
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 7 }));
    await rm(path.join(f.repo, 'b'), { recursive: true });
    const summary = await f.m.pollOnce();
    assert.deepEqual(summary, { added: ['c'], modified: ['a'], removed: ['b'], failed: [] });
    await f.m.idle();

    assert.notEqual(f.m.getVersion('a'), a1);
    assert.equal(f.m.getVersion('a').config.max_batch_size, 7);
    assert.equal((a1 as unknown as { unloaded: boolean }).unloaded, true);
    assert.equal(f.m.getVersion('steady'), steady);
    assert.equal(f.m.getVersion('c').version, 1);
    assert.throws(() => f.m.getVersion('b'), /Request for unknown model: 'b' has no available versions/);
    assert.deepEqual(
      f.m.index(false).map((e) => `${e.name}:${e.version}:${e.state}`),
      ['a:1:READY', 'c:1:READY', 'steady:1:READY'],
      'a removed folder leaves the index',
    );
  } finally {
    await f.done();
  }
});

void test('poll: a broken config keeps the loaded version serving; fixing it reloads', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: {} });
    await f.m.startup();
    const a1 = f.m.getVersion('a');
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), '{ broken');
    const s1 = await f.m.pollOnce();
    assert.deepEqual(
      s1.failed.map((x) => x.name),
      ['a'],
    );
    assert.equal(f.m.getVersion('a'), a1);
    assert.deepEqual(f.m.index(false), [{ name: 'a', version: '1', state: 'READY', reason: '' }]);

    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 3 }));
    const s2 = await f.m.pollOnce();
    assert.deepEqual(s2.modified, ['a']);
    assert.equal(f.m.getVersion('a').config.max_batch_size, 3);
  } finally {
    await f.done();
  }
});

void test('poll: a failed load is retried on the next cycle', async () => {
  const f = await fixture();
  try {
    await f.m.startup();
    await writeModel(f.repo, 'c', { config: {} });
    f.loader.failLoad.set('c:1', new NereidError('INTERNAL', 'not yet'));
    const s1 = await f.m.pollOnce();
    assert.deepEqual(s1.failed, [
      { name: 'c', reason: 'version 1 is at UNAVAILABLE state: Internal: not yet;' },
    ]);
    assert.deepEqual(f.m.index(false), [
      { name: 'c', version: '1', state: 'UNAVAILABLE', reason: 'Internal: not yet' },
    ]);
    f.loader.failLoad.delete('c:1');
    const s2 = await f.m.pollOnce();
    assert.deepEqual(s2.added, ['c']);
    assert.equal(f.m.getVersion('c').version, 1);
  } finally {
    await f.done();
  }
});

void test('poll: versions follow the folders; model control API is refused', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', {
      config: { version_policy: { latest: { num_versions: 2 } } },
      versions: [1],
    });
    await f.m.startup();
    await mkdir(path.join(f.repo, 'm', '2'));
    await mkdir(path.join(f.repo, 'm', '3'));
    assert.deepEqual((await f.m.pollOnce()).modified, ['m']);
    await f.m.idle();
    assert.deepEqual(f.m.readyVersions('m'), [2, 3]);
    assert.deepEqual(f.m.versionStates('m')[0], { version: 1, state: 'UNAVAILABLE', reason: 'unloaded' });

    const refused = (e: NereidError): boolean =>
      e.code === 'UNAVAILABLE' &&
      e.message === 'explicit model load / unload is not allowed if polling is enabled';
    await assert.rejects(f.m.load('m'), refused);
    await assert.rejects(f.m.unload('m'), refused);
  } finally {
    await f.done();
  }
});

void test('poll: a model copied into a second repository becomes a duplicate and is unloaded', async () => {
  const f = await fixture(2);
  try {
    await writeModel(f.dirs[0], 'a', { config: {} });
    await f.m.startup();
    await cp(path.join(f.dirs[0], 'a'), path.join(f.dirs[1], 'a'), { recursive: true });
    const s = await f.m.pollOnce();
    assert.deepEqual(s.removed, ['a']);
    assert.deepEqual(s.failed, [
      { name: 'a', reason: "failed to poll model 'a': not unique across all model repositories" },
    ]);
    assert.deepEqual(f.m.index(false), [
      { name: 'a', state: 'UNAVAILABLE', reason: 'model appears in two or more repositories' },
    ]);
    assert.throws(() => f.m.getVersion('a'), /has no available versions/);
  } finally {
    await f.done();
  }
});

void test('poll: a repository that cannot be listed keeps its models serving', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: {} });
    await f.m.startup();
    const a = f.m.getVersion('a');
    const hidden = f.repo + '.away';
    await rename(f.repo, hidden);
    try {
      const s = await f.m.pollOnce();
      assert.deepEqual(s.removed, []);
      assert.equal(f.m.getVersion('a'), a);
    } finally {
      await rename(hidden, f.repo);
    }
    assert.deepEqual(await f.m.pollOnce(), { added: [], modified: [], removed: [], failed: [] });
  } finally {
    await f.done();
  }
});
