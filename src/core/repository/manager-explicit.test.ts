import { test } from 'node:test';
import assert from 'node:assert/strict';
import { access, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { ModelRepositoryManager } from './manager.js';
import type { RepositoryOptions } from './options.js';
import {
  FakeLoader,
  deferred,
  flush,
  parsers,
  removeRepo,
  tempRepo,
  waitFor,
  writeModel,
} from './repository.testkit.js';

interface Fixture {
  repo: string;
  tmp: string;
  loader: FakeLoader;
  m: ModelRepositoryManager;
}

async function fixture(extra: Partial<RepositoryOptions> = {}): Promise<Fixture> {
  const repo = await tempRepo();
  const tmp = await tempRepo('nereid-tmp-');
  const loader = new FakeLoader();
  const m = new ModelRepositoryManager(
    { repositoryPaths: [repo], controlMode: 'explicit', tempDirectory: tmp, ...parsers, ...extra },
    loader,
  );
  return { repo, tmp, loader, m };
}

async function done(f: Fixture): Promise<void> {
  await f.m.close();
  await removeRepo(f.repo);
  await removeRepo(f.tmp);
}

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

void test('explicit startup loads only --load-model models; others are listed by name only', async () => {
  const f = await fixture({ startupModels: ['a', 'missing', '../x'] });
  try {
    await writeModel(f.repo, 'a', { config: {} });
    await writeModel(f.repo, 'b', { config: {} });
    const failures = await f.m.startup();
    assert.deepEqual(failures, [
      {
        name: '../x',
        reason: "invalid model name '../x', model name must not contain path traversal characters",
      },
      {
        name: 'missing',
        reason:
          "failed to load 'missing', failed to poll from model repository: failed to poll model 'missing': model not found in any model repository.",
      },
    ]);
    assert.deepEqual(f.m.index(false), [
      { name: 'a', version: '1', state: 'READY', reason: '' },
      { name: 'b', state: 'UNKNOWN', reason: '' },
    ]);
    assert.deepEqual(f.m.index(true), [{ name: 'a', version: '1', state: 'READY', reason: '' }]);
    assert.throws(() => f.m.getVersion('b'), /Request for unknown model: 'b' is not found/);
    assert.equal(f.m.allReady(), true, 'models never loaded do not count');
  } finally {
    await done(f);
  }
});

void test('--load-model=* loads everything; "*" with other names is refused', async () => {
  const f = await fixture({ startupModels: ['*'] });
  try {
    await writeModel(f.repo, 'a', { config: {} });
    await writeModel(f.repo, 'b', { config: {} });
    assert.deepEqual(await f.m.startup(), []);
    assert.deepEqual(f.m.modelNames(), ['a', 'b']);
    assert.throws(
      () =>
        new ModelRepositoryManager(
          { repositoryPaths: [f.repo], controlMode: 'explicit', startupModels: ['*', 'a'] },
          f.loader,
        ),
      /Wildcard model name '\*' must be the ONLY startup model if specified at all./,
    );
  } finally {
    await done(f);
  }
});

void test('load: unknown model, bad names; unload of an unknown model is fine', async () => {
  const f = await fixture();
  try {
    await f.m.startup();
    // Triton's INTERNAL by default (NOT_FOUND with loadErrorStatus 'client-error', tested below).
    await assert.rejects(f.m.load('zzz'), (e: NereidError) => {
      assert.equal(e.code, 'INTERNAL');
      assert.ok(e.message.startsWith("failed to load 'zzz', failed to poll from model repository"));
      return true;
    });
    await assert.rejects(f.m.load(''), /Model name cannot be empty/);
    await assert.rejects(f.m.load('a/../b'), /must not contain path traversal characters/);
    await f.m.unload('zzz');
    await f.m.unload('../etc');
  } finally {
    await done(f);
  }
});

void test('load of an unchanged loaded model is a no-op; a changed folder reloads it', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    await f.m.load('m');
    const first = f.m.getVersion('m');
    await f.m.load('m');
    assert.equal(f.m.getVersion('m'), first, 'nothing changed: same version object');
    assert.equal(f.loader.loadsOf('m').length, 1);

    await writeFile(path.join(f.repo, 'm', '1', 'model.bin'), 'new weights, different size');
    await f.m.load('m');
    assert.notEqual(f.m.getVersion('m'), first);
    await f.m.idle();
    assert.equal((first as unknown as { unloaded: boolean }).unloaded, true);
  } finally {
    await done(f);
  }
});

void test('config override replaces the file config and always reloads; a plain load goes back to the files', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: { max_batch_size: 4 } });
    await f.m.startup();
    await f.m.load('m');
    await f.m.load('m', { config: JSON.stringify({ max_batch_size: 16 }) });
    assert.equal(f.loader.rawSeen.get('m')?.max_batch_size, 16);
    assert.equal(f.m.getVersion('m').config.max_batch_size, 16);
    await f.m.load('m', { config: JSON.stringify({ max_batch_size: 16 }) });
    assert.equal(f.loader.loadsOf('m').length, 3, 'an override always reloads');
    await f.m.load('m');
    assert.equal(f.m.getVersion('m').config.max_batch_size, 4);

    await assert.rejects(f.m.load('m', { config: '{oops' }), (e: NereidError) => {
      assert.equal(e.code, 'INTERNAL', "Triton's status for a config override that is not JSON");
      assert.match(
        e.message,
        /^failed to load 'm', failed to poll from model repository: Invalid config override: /,
      );
      return true;
    });
    await assert.rejects(
      f.m.load('m', { config: JSON.stringify({ name: 'other' }) }),
      /unexpected directory name 'm' for model 'other', directory name must equal model name/,
    );
    assert.equal(f.m.getVersion('m').config.max_batch_size, 4, 'a refused override changes nothing');
  } finally {
    await done(f);
  }
});

void test('file overrides form the whole model folder in a private temp dir, removed on unload', async () => {
  const f = await fixture();
  try {
    await f.m.startup();
    await f.m.load('ov', {
      config: JSON.stringify({ version_policy: { all: {} } }),
      files: new Map([
        ['file:1/model.bin', Buffer.from('one')],
        ['file:2/model.bin', Buffer.from('two')],
      ]),
    });
    const loc = f.loader.locations.get('ov');
    assert.ok(loc);
    assert.ok(loc.modelDir.startsWith(f.tmp + path.sep), 'materialised under the temp directory');
    assert.equal(path.basename(loc.modelDir), 'ov');
    assert.deepEqual((await readdir(loc.modelDir)).sort(), ['1', '2']);
    assert.equal(await readFile(path.join(loc.modelDir, '2', 'model.bin'), 'utf8'), 'two');
    assert.deepEqual(f.m.readyVersions('ov'), [1, 2]);
    assert.deepEqual(
      f.m.index(true).map((e) => `${e.name}:${e.version}`),
      ['ov:1', 'ov:2'],
      'override models appear in the index',
    );
    await f.m.unload('ov');
    assert.equal(await exists(loc.modelDir), false, 'temp copy removed with the last version');
    assert.deepEqual(await readdir(f.tmp), []);
  } finally {
    await done(f);
  }
});

void test('file override over a repository model; a plain load returns to the repository and drops the copy', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {}, versions: [1] });
    await f.m.startup();
    await f.m.load('m');
    const fromRepo = f.m.getVersion('m');
    await f.m.load('m', { config: '{}', files: new Map([['file:5/model.bin', Buffer.from('x')]]) });
    assert.equal(f.m.getVersion('m').version, 5);
    await f.m.idle();
    assert.equal((fromRepo as unknown as { unloaded: boolean }).unloaded, true);
    assert.equal((await readdir(f.tmp)).length, 1);

    await f.m.load('m');
    await f.m.idle();
    assert.equal(f.m.getVersion('m').version, 1);
    assert.deepEqual(await readdir(f.tmp), [], 'override copy removed after its versions drained');
  } finally {
    await done(f);
  }
});

void test('file overrides: missing config, escaping paths and failed loads leave nothing behind', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    await f.m.load('m');
    const serving = f.m.getVersion('m');

    await assert.rejects(
      f.m.load('m', { files: new Map([['file:1/model.bin', Buffer.from('x')]]) }),
      (e: NereidError) => {
        assert.equal(e.code, 'INTERNAL');
        assert.equal(
          e.message,
          "failed to load 'm', failed to poll from model repository: Load parameter 'config' must be specified for model file override",
        );
        return true;
      },
    );
    for (const key of [
      'file:../evil',
      'file:/etc/passwd',
      'file:1/../../evil',
      'file:1\\x',
      'file:1/\0x',
      'file:1//x',
    ]) {
      await assert.rejects(
        f.m.load('m', { config: '{}', files: new Map([[key, Buffer.from('x')]]) }),
        (e: NereidError) => e.code === 'INTERNAL' && e.message.includes('Invalid file parameter'),
        key,
      );
    }
    f.loader.failLoad.set('m:3', new NereidError('INTERNAL', 'cannot load'));
    await assert.rejects(
      f.m.load('m', { config: '{}', files: new Map([['file:3/model.bin', Buffer.from('x')]]) }),
      /load failed for model 'm': version 3 is at UNAVAILABLE state: Internal: cannot load;/,
    );
    assert.deepEqual(await readdir(f.tmp), []);
    assert.equal(f.m.getVersion('m'), serving, 'the repository version kept serving');
    assert.ok(!(await exists(path.join(f.repo, '..', 'evil'))));
  } finally {
    await done(f);
  }
});

void test('a reload keeps serving: getVersion never fails while new versions load; old drains after swap', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    await f.m.load('m');
    const old = f.loader.latest('m', 1);
    assert.ok(old);
    const endRequest = old.begin();

    const gate = deferred();
    f.loader.gates.set('m:1', gate.promise);
    const reloading = f.m.load('m', { config: JSON.stringify({ max_batch_size: 8 }) });
    await waitFor(() => f.loader.loadsOf('m').length === 2, 'the reload to reach the loader');
    for (let i = 0; i < 5; i++) {
      await flush(2);
      assert.equal(f.m.getVersion('m'), old);
      assert.deepEqual(f.m.index(false), [{ name: 'm', version: '1', state: 'READY', reason: '' }]);
      assert.equal(f.m.allReady(), true);
    }
    gate.resolve();
    await reloading;
    const fresh = f.m.getVersion('m');
    assert.notEqual(fresh, old);
    assert.equal(fresh.config.max_batch_size, 8);
    assert.equal(old.unloadCalls, 1, 'old version asked to unload after the swap');
    assert.equal(old.unloaded, false, 'but it drains the accepted request first');
    let idle = false;
    const idling = f.m.idle().then(() => (idle = true));
    await flush();
    assert.equal(idle, false);
    endRequest();
    await idling;
    assert.equal(old.unloaded, true);
  } finally {
    await done(f);
  }
});

void test('a failed reload keeps the old version serving and reports the error', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    await f.m.load('m');
    const old = f.m.getVersion('m');
    f.loader.failLoad.set('m:1', new NereidError('INTERNAL', 'model file is corrupt'));
    await assert.rejects(f.m.load('m', { config: '{}' }), (e: NereidError) => {
      assert.equal(e.code, 'INVALID_ARG');
      assert.equal(
        e.message,
        "load failed for model 'm': version 1 is at UNAVAILABLE state: Internal: model file is corrupt;\n",
      );
      return true;
    });
    assert.equal(f.m.getVersion('m'), old);
    assert.deepEqual(f.m.index(false), [{ name: 'm', version: '1', state: 'READY', reason: '' }]);
  } finally {
    await done(f);
  }
});

void test('a new version folder under latest 1: new one READY, old one UNLOADING until drained, then "unloaded"', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {}, versions: [1] });
    await f.m.startup();
    await f.m.load('m');
    const v1 = f.loader.latest('m', 1);
    assert.ok(v1);
    const end = v1.begin();
    await mkdir(path.join(f.repo, 'm', '2'));
    await f.m.load('m');
    assert.equal(f.m.getVersion('m').version, 2);
    assert.deepEqual(f.m.versionStates('m'), [
      { version: 1, state: 'UNLOADING', reason: '' },
      { version: 2, state: 'READY', reason: '' },
    ]);
    assert.throws(() => f.m.getVersion('m', '1'), /version 1 is not at ready state/);
    assert.equal(f.m.loadedVersions().length, 2, 'a draining version is still reported');
    end();
    await f.m.idle();
    assert.deepEqual(f.m.versionStates('m')[0], { version: 1, state: 'UNAVAILABLE', reason: 'unloaded' });
    assert.equal(f.m.allReady(), true);
  } finally {
    await done(f);
  }
});

void test('unload: UNLOADING while requests drain, then UNAVAILABLE "unloaded"; load brings it back', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    await f.m.load('m');
    const v = f.loader.latest('m', 1);
    assert.ok(v);
    const end = v.begin();
    let finished = false;
    const unloading = f.m.unload('m').then(() => (finished = true));
    await flush();
    assert.equal(finished, false);
    assert.deepEqual(f.m.index(false), [{ name: 'm', version: '1', state: 'UNLOADING', reason: '' }]);
    assert.throws(() => f.m.getVersion('m'), /'m' has no available versions/);
    end();
    await unloading;
    assert.deepEqual(f.m.index(false), [
      { name: 'm', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);
    assert.equal(f.m.allReady(), true, '"unloaded" does not spoil strict readiness');
    await f.m.load('m');
    assert.equal(f.m.getVersion('m').version, 1);
    assert.notEqual(f.m.getVersion('m'), v);
  } finally {
    await done(f);
  }
});

void test('concurrent load / unload / load of one model run one at a time, in order', async () => {
  const f = await fixture();
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    const events: string[] = [];
    const gate = deferred();
    f.loader.gates.set('m:1', gate.promise);
    const l1 = f.m.load('m').then(() => events.push('load1'));
    const u = f.m.unload('m').then(() => events.push('unload'));
    const l2 = f.m.load('m').then(() => events.push('load2'));
    await waitFor(() => f.loader.loadsOf('m').length > 0, 'the first load');
    await flush();
    assert.deepEqual(f.loader.loadsOf('m'), ['load:m:1'], 'the unload and second load wait');
    assert.equal(f.loader.versions.length, 0);
    f.loader.gates.delete('m:1');
    gate.resolve();
    await Promise.all([l1, u, l2]);
    assert.deepEqual(events, ['load1', 'unload', 'load2']);
    assert.deepEqual(f.loader.loadsOf('m'), ['load:m:1', 'load:m:1']);
    const [first, second] = f.loader.versions.filter((v) => v.modelName === 'm');
    assert.equal(first.unloaded, true);
    assert.equal(second.unloaded, false);
    assert.equal(f.m.getVersion('m'), second);
  } finally {
    await done(f);
  }
});

void test('loads run in parallel up to modelLoadThreadCount', async () => {
  const f = await fixture({ startupModels: ['*'], modelLoadThreadCount: 2 });
  try {
    const gate = deferred();
    for (const n of ['a', 'b', 'c', 'd', 'e']) {
      await writeModel(f.repo, n, { config: {} });
      f.loader.gates.set(`${n}:1`, gate.promise);
    }
    const starting = f.m.startup();
    await waitFor(() => f.loader.active === 2, 'two loads in flight');
    await flush();
    assert.equal(f.loader.active, 2, 'no third load starts while two run');
    gate.resolve();
    assert.deepEqual(await starting, []);
    assert.equal(f.loader.maxActive, 2);
    assert.deepEqual(f.m.modelNames(), ['a', 'b', 'c', 'd', 'e']);
  } finally {
    await done(f);
  }
});

void test("loadErrorStatus 'client-error': a refused load request answers the client's mistake", async () => {
  const f = await fixture({ loadErrorStatus: 'client-error' });
  try {
    await writeModel(f.repo, 'm', { config: {} });
    await f.m.startup();
    const codeOf = (p: Promise<unknown>): Promise<string> =>
      p.then(
        () => 'resolved',
        (e: NereidError) => e.code,
      );
    assert.equal(await codeOf(f.m.load('zzz')), 'NOT_FOUND');
    assert.equal(await codeOf(f.m.load('m', { config: '{oops' })), 'INVALID_ARG');
    assert.equal(
      await codeOf(f.m.load('m', { files: new Map([['file:1/model.bin', Buffer.from('x')]]) })),
      'INVALID_ARG',
    );
    assert.equal(
      await codeOf(
        f.m.load('m', { config: '{}', files: new Map([['file:' + 'A'.repeat(256), Buffer.from('a')]]) }),
      ),
      'INVALID_ARG',
    );
  } finally {
    await done(f);
  }
});
