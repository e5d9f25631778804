import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { Logger } from '../../common/logger.js';
import { ModelRepositoryManager } from './manager.js';
import { FakeLoader, parsers, removeRepo, tempRepo, waitFor, writeModel } from './repository.testkit.js';

// Generous deadlines: these wait for file events and loads on a loaded machine; nothing here measures speed.
const DEADLINE_MS = 60_000;

async function fixture(extra: { watchMaxDirectories?: number } = {}) {
  const repo = await tempRepo('nereid-watch-');
  const loader = new FakeLoader();
  const lines: string[] = [];
  // repositoryPollSecs 0: no timer, so every poll here was triggered by a file event (or by the test).
  const m = new ModelRepositoryManager(
    {
      repositoryPaths: [repo],
      controlMode: 'poll',
      repositoryPollSecs: 0,
      watch: true,
      ...extra,
      ...parsers,
      log: new Logger({}, (l) => lines.push(l)),
    },
    loader,
  );
  return {
    repo,
    loader,
    m,
    lines,
    count: (re: RegExp) => lines.filter((l) => re.test(l)).length,
    async done() {
      await m.close();
      await removeRepo(repo);
    },
  };
}

void test('watch: an edited model reloads without a poll timer; a new model folder loads', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: { max_batch_size: 1 } });
    assert.deepEqual(await f.m.startup(), []);
    const a1 = f.m.getVersion('a');
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 2 }));
    await waitFor(() => f.m.getVersion('a').config.max_batch_size === 2, 'the edit to reload a', DEADLINE_MS);
    assert.notEqual(f.m.getVersion('a'), a1);

    // A file deep in a version folder counts too (the version folders are watched).
    const a2 = f.m.getVersion('a');
    await writeFile(path.join(f.repo, 'a', '1', 'model.bin'), 'new weights');
    await waitFor(() => f.m.getVersion('a') !== a2, 'the weights edit to reload a', DEADLINE_MS);

    await writeModel(f.repo, 'b', { config: {} });
    await waitFor(() => f.m.readyVersions('b').length === 1, 'b to load', DEADLINE_MS);
  } finally {
    await f.done();
  }
});

void test('watch: a failed reload keeps the last good version, is not retried until the files change, then a fix loads', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: { max_batch_size: 1 } });
    await f.m.startup();
    const good = f.m.getVersion('a');
    f.loader.failLoad.set('a:1', new NereidError('INTERNAL', 'SyntaxError in model'));
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 2 }));
    await waitFor(() => f.count(/--watch: 'a' failed to load/) === 1, 'the failure report', DEADLINE_MS);
    assert.equal(f.m.getVersion('a'), good, 'the last good version keeps serving');
    assert.equal(f.count(/failed to load 'a' version 1: .*SyntaxError in model/), 1);
    const loadsAfterFailure = f.loader.loadsOf('a').length;
    const reportsAfterFailure = f.count(/failed to load 'a'/);

    // More polls with the files unchanged (explicit ones, and one caused by another model's edit): the
    // broken model is left alone and its error is not logged again.
    assert.deepEqual((await f.m.pollOnce()).failed, []);
    await writeModel(f.repo, 'other', { config: {} });
    await waitFor(() => f.m.readyVersions('other').length === 1, 'other to load', DEADLINE_MS);
    assert.deepEqual((await f.m.pollOnce()).failed, []);
    assert.equal(f.loader.loadsOf('a').length, loadsAfterFailure, 'no retry while the files are the same');
    assert.equal(f.count(/failed to load 'a'/), reportsAfterFailure, 'the error is reported once per change');

    // The fix: the files change again, the model reloads.
    f.loader.failLoad.delete('a:1');
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 3 }));
    await waitFor(() => f.m.getVersion('a').config.max_batch_size === 3, 'the fix to load', DEADLINE_MS);
  } finally {
    await f.done();
  }
});

void test('watch: a config that does not parse is reported once per change and left alone meanwhile', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'a', { config: { max_batch_size: 1 } });
    await f.m.startup();
    const good = f.m.getVersion('a');
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), '{ broken');
    await waitFor(() => f.count(/Poll failed for model directory 'a'/) === 1, 'the parse error', DEADLINE_MS);
    await f.m.pollOnce();
    await f.m.pollOnce();
    assert.equal(f.count(/Poll failed for model directory 'a'/), 1);
    assert.equal(f.m.getVersion('a'), good);
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), '{ still broken');
    await waitFor(
      () => f.count(/Poll failed for model directory 'a'/) === 2,
      'the second report',
      DEADLINE_MS,
    );
    await writeFile(path.join(f.repo, 'a', 'config.pbtxt'), JSON.stringify({ max_batch_size: 4 }));
    await waitFor(() => f.m.getVersion('a').config.max_batch_size === 4, 'the fix to load', DEADLINE_MS);
  } finally {
    await f.done();
  }
});

void test('watch: a model that never loaded waits for a change too (plain poll mode would retry it)', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'c', { config: {} });
    f.loader.failLoad.set('c:1', new NereidError('INTERNAL', 'not yet'));
    const failures = await f.m.startup();
    assert.deepEqual(
      failures.map((x) => x.name),
      ['c'],
    );
    f.loader.failLoad.delete('c:1');
    await f.m.pollOnce();
    assert.deepEqual(f.m.readyVersions('c'), [], 'not retried: the files are the ones that failed');
    await writeFile(path.join(f.repo, 'c', '1', 'model.bin'), 'fixed');
    await waitFor(() => f.m.readyVersions('c').length === 1, 'c to load after the change', DEADLINE_MS);
  } finally {
    await f.done();
  }
});

void test('watch: the watchers are bounded: a symlink loop is watched once, and a folder cap warns', async () => {
  const f = await fixture({ watchMaxDirectories: 4 });
  try {
    const dir = await writeModel(f.repo, 'a', { config: {} });
    await symlink(dir, path.join(dir, '1', 'loop'));
    await symlink(f.repo, path.join(dir, 'up'));
    for (const n of ['b', 'c', 'd', 'e']) await mkdir(path.join(f.repo, n));
    await f.m.startup();
    const watching = f.lines.find((l) => l.includes('watching '));
    assert.match(watching ?? '', /watching 4 folder\(s\)/);
    assert.equal(f.count(/more than 4 folders \(--watch-max-directories\)/), 1);
  } finally {
    await f.done();
  }
});

void test('watch: refused outside poll mode and for object-store repositories', () => {
  const loader = new FakeLoader();
  assert.throws(
    () =>
      new ModelRepositoryManager({ repositoryPaths: ['/tmp'], controlMode: 'explicit', watch: true }, loader),
    /--watch needs --model-control-mode=poll/,
  );
  assert.throws(
    () =>
      new ModelRepositoryManager(
        { repositoryPaths: ['/tmp', 's3://bucket/models'], controlMode: 'poll', watch: true },
        loader,
      ),
    /--watch works on local folders only; 's3:\/\/bucket\/models' is an object store/,
  );
});
