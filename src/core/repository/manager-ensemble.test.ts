import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { ModelRepositoryManager } from './manager.js';
import type { ModelControlMode } from './options.js';
import {
  FakeLoader,
  ensembleConfig,
  parsers,
  removeRepo,
  tempRepo,
  writeModel,
} from './repository.testkit.js';

async function fixture(controlMode: ModelControlMode = 'explicit') {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = new ModelRepositoryManager(
    { repositoryPaths: [repo], controlMode, repositoryPollSecs: 0, ...parsers },
    loader,
  );
  return {
    repo,
    loader,
    m,
    states(): string[] {
      return m
        .index(false)
        .map((e) => `${e.name}:${e.state}${e.reason && e.state !== 'UNKNOWN' ? `(${e.reason})` : ''}`);
    },
    async done() {
      await m.close();
      await removeRepo(repo);
    },
  };
}

void test('loading an ensemble loads its members first; unloading it alone leaves them', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'pre', { config: {} });
    await writeModel(f.repo, 'infer', { config: {} });
    await writeModel(f.repo, 'ens', { config: ensembleConfig(['pre', 'infer']) });
    await f.m.startup();
    await f.m.load('ens');
    assert.deepEqual(f.states(), ['ens:READY', 'infer:READY', 'pre:READY']);
    const order = f.loader.calls.filter((c) => c.startsWith('load:'));
    assert.equal(order[order.length - 1], 'load:ens:1', 'the ensemble loads after its members');

    await f.m.unload('ens');
    assert.deepEqual(f.states(), ['ens:UNAVAILABLE(unloaded)', 'infer:READY', 'pre:READY']);
  } finally {
    await f.done();
  }
});

void test('unload_dependents also unloads the members the ensemble pulled in, but not explicitly loaded ones', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'pre', { config: {} });
    await writeModel(f.repo, 'infer', { config: {} });
    await writeModel(f.repo, 'ens', { config: ensembleConfig(['pre', 'infer']) });
    await f.m.startup();
    await f.m.load('infer');
    await f.m.load('ens');
    await f.m.unload('ens', { unloadDependents: true });
    assert.deepEqual(f.states(), ['ens:UNAVAILABLE(unloaded)', 'infer:READY', 'pre:UNAVAILABLE(unloaded)']);
  } finally {
    await f.done();
  }
});

void test('a member shared by two ensembles stays while the other ensemble needs it', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'shared', { config: {} });
    await writeModel(f.repo, 'e1', { config: ensembleConfig(['shared']) });
    await writeModel(f.repo, 'e2', { config: ensembleConfig(['shared']) });
    await f.m.startup();
    await f.m.load('e1');
    await f.m.load('e2');
    await f.m.unload('e1', { unloadDependents: true });
    assert.deepEqual(f.states(), ['e1:UNAVAILABLE(unloaded)', 'e2:READY', 'shared:READY']);
    await f.m.unload('e2', { unloadDependents: true });
    assert.deepEqual(f.states(), [
      'e1:UNAVAILABLE(unloaded)',
      'e2:UNAVAILABLE(unloaded)',
      'shared:UNAVAILABLE(unloaded)',
    ]);
  } finally {
    await f.done();
  }
});

void test('unloading a member unloads the ensembles that need it (first); they return when it does', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await writeModel(f.repo, 'ens', { config: ensembleConfig(['m']) });
    await writeModel(f.repo, 'outer', { config: ensembleConfig(['ens']) });
    await f.m.startup();
    await f.m.load('outer');
    assert.deepEqual(f.states(), ['ens:READY', 'm:READY', 'outer:READY']);
    const member = f.loader.latest('m', 1);
    const ens = f.loader.latest('ens', 1);
    assert.ok(member && ens);
    // An ensemble request in flight keeps the member alive until it drains.
    const endEnsembleRequest = ens.begin();
    const unloading = f.m.unload('m');
    await new Promise((r) => setImmediate(r));
    assert.equal(member.unloadCalls, 0, 'the member waits for its ensembles to drain');
    endEnsembleRequest();
    await unloading;
    assert.deepEqual(f.states(), [
      'ens:UNAVAILABLE(unloaded)',
      'm:UNAVAILABLE(unloaded)',
      'outer:UNAVAILABLE(unloaded)',
    ]);

    await f.m.load('m');
    assert.deepEqual(f.states(), ['ens:READY', 'm:READY', 'outer:READY'], 'suspended ensembles come back');
  } finally {
    await f.done();
  }
});

void test('ensemble errors: missing member, failing member, required version, cycle', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'ghostly', { config: ensembleConfig(['ghost', 'real']) });
    await writeModel(f.repo, 'real', { config: {} });
    await writeModel(f.repo, 'bad', { config: {} });
    await writeModel(f.repo, 'usesbad', { config: ensembleConfig(['bad']) });
    await writeModel(f.repo, 'pinned', { config: ensembleConfig([['real', 2]]) });
    await writeModel(f.repo, 'x', { config: ensembleConfig(['y']) });
    await writeModel(f.repo, 'y', { config: ensembleConfig(['x']) });
    f.loader.failLoad.set('bad:1', new NereidError('INTERNAL', 'boom'));
    await f.m.startup();

    await assert.rejects(f.m.load('ghostly'), (e: NereidError) => {
      assert.equal(e.code, 'INVALID_ARG');
      assert.equal(
        e.message,
        "load failed for model 'ghostly': ensemble ghostly contains models that are not available or ambiguous: ghost\n",
      );
      return true;
    });
    assert.equal(f.m.readyVersions('real').length, 1, 'the members that exist were loaded');
    assert.throws(() => f.m.getVersion('ghostly'), /'ghostly' is not found/);

    await assert.rejects(
      f.m.load('usesbad'),
      (e: NereidError) =>
        e.message ===
        "load failed for model 'usesbad': ensemble 'usesbad' depends on 'bad' which has no loaded version. Model 'bad' loading failed with error: version 1 is at UNAVAILABLE state: Internal: boom;\n",
    );
    await assert.rejects(
      f.m.load('pinned'),
      /ensemble 'pinned' depends on 'real' whose required version 2 is not loaded\./,
    );
    await assert.rejects(f.m.load('x'), /circular dependency between ensembles: x -> \.\.\. -> y -> x/);

    const index = f.states();
    assert.ok(
      index.includes(
        'ghostly:UNAVAILABLE(ensemble ghostly contains models that are not available or ambiguous: ghost)',
      ),
    );
    assert.ok(index.includes('bad:UNAVAILABLE(Internal: boom)'));
  } finally {
    await f.done();
  }
});

void test('none mode: a member with a broken config makes its ensemble fail with Triton wording', async () => {
  const f = await fixture('none');
  try {
    await writeModel(f.repo, 'member', { config: '{ broken' });
    await writeModel(f.repo, 'ens', { config: ensembleConfig(['member']) });
    await writeModel(f.repo, 'fine', { config: {} });
    const failures = await f.m.startup();
    assert.deepEqual(
      failures.map((x) => x.name),
      ['ens', 'member'],
    );
    assert.match(
      failures[0].reason,
      /^ensemble 'ens' depends on 'member' which is not valid\. Model 'member' failed with error: failed to parse/,
    );
    assert.equal(f.m.readyVersions('fine').length, 1);
  } finally {
    await f.done();
  }
});

void test('poll mode: a removed member takes its ensemble down; putting it back brings both back', async () => {
  const f = await fixture('poll');
  try {
    await writeModel(f.repo, 'member', { config: {} });
    await writeModel(f.repo, 'ens', { config: ensembleConfig(['member']) });
    assert.deepEqual(await f.m.startup(), []);
    assert.deepEqual(f.states(), ['ens:READY', 'member:READY']);

    await rm(path.join(f.repo, 'member'), { recursive: true });
    const s1 = await f.m.pollOnce();
    assert.deepEqual(s1.removed, ['member']);
    assert.deepEqual(f.states(), ['ens:UNAVAILABLE(unloaded)']);

    await writeModel(f.repo, 'member', { config: {} });
    const s2 = await f.m.pollOnce();
    assert.ok(s2.added.includes('member'));
    assert.deepEqual(f.states(), ['ens:READY', 'member:READY']);

    // Editing the ensemble's config reloads just the ensemble.
    const loadsBefore = f.loader.loadsOf('member').length;
    await writeFile(
      path.join(f.repo, 'ens', 'config.pbtxt'),
      JSON.stringify({ ...ensembleConfig(['member']), max_batch_size: 2 }),
    );
    assert.deepEqual((await f.m.pollOnce()).modified, ['ens']);
    assert.equal(f.loader.loadsOf('member').length, loadsBefore);
  } finally {
    await f.done();
  }
});
