import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import type { RepositoryPort } from '../server.js';
import { ModelRepositoryManager } from './manager.js';
import type { RepositoryOptions } from './options.js';
import { FakeLoader, parsers, removeRepo, tempRepo, writeModel } from './repository.testkit.js';

function manager(
  repos: string[],
  loader: FakeLoader,
  extra: Partial<RepositoryOptions> = {},
): ModelRepositoryManager {
  return new ModelRepositoryManager({ repositoryPaths: repos, ...parsers, ...extra }, loader);
}

const codeAndMessage = (code: string, message: string) => (e: NereidError) => {
  assert.equal(e.code, code);
  assert.equal(e.message, message);
  return true;
};

void test('the manager satisfies the server port', () => {
  // Over the versions the server's loader makes (servable ones), the manager is the server's port.
  type Servable = ReturnType<RepositoryPort['getVersion']>;
  const asPort = (m: ModelRepositoryManager<Servable>): RepositoryPort => m;
  assert.equal(typeof asPort, 'function');
  assert.equal(typeof manager(['/tmp'], new FakeLoader()).getVersion, 'function');
});

void test('none mode: loads every model at startup; index shows versions, states and reasons', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader);
  try {
    await writeModel(repo, 'simple', { config: { name: 'simple' }, versions: [1, 2, 3] });
    await writeModel(repo, 'noconfig', { versions: [1] });
    await writeModel(repo, 'allv', { config: { version_policy: { all: {} } }, versions: [0, 1, '01', 'x'] });
    await writeModel(repo, 'broken', { config: { name: 'other' } });
    await writeModel(repo, 'badjson', { config: '{ not json' });
    await writeModel(repo, 'failing', { config: {}, versions: [1, 2] });
    loader.failLoad.set('failing:1', new NereidError('INTERNAL', 'backend exploded'));
    await writeModel(repo, 'failing2', {
      config: { version_policy: { latest: { num_versions: 2 } } },
      versions: [1, 2],
    });
    loader.failLoad.set('failing2:2', new NereidError('INVALID_ARG', 'bad weights'));
    await writeModel(repo, 'noversions', { config: {}, versions: [] });

    const failures = await m.startup();
    assert.deepEqual(
      failures.map((f) => f.name),
      ['badjson', 'broken', 'failing2', 'noversions'],
    );
    assert.equal(
      failures.find((f) => f.name === 'broken')?.reason,
      "unexpected directory name 'broken' for model 'other', directory name must equal model name",
    );
    assert.equal(
      failures.find((f) => f.name === 'failing2')?.reason,
      'version 2 is at UNAVAILABLE state: Invalid argument: bad weights;',
    );

    // 'failing' (latest 1 → version 2) loaded; version 1 is not under the policy, so its failure never happens.
    assert.deepEqual(loader.loadsOf('failing'), ['load:failing:2']);
    assert.equal(loader.rawSeen.get('noconfig'), undefined, 'no config file: raw is undefined');
    assert.equal(loader.rawSeen.get('simple')?.name, 'simple');
    assert.equal(loader.rawSeen.get('allv')?.name, 'allv', 'an empty name takes the folder name');

    assert.deepEqual(m.index(false), [
      { name: 'allv', version: '0', state: 'READY', reason: '' },
      { name: 'allv', version: '1', state: 'READY', reason: '' },
      { name: 'badjson', state: 'UNAVAILABLE', reason: failures.find((f) => f.name === 'badjson')?.reason },
      {
        name: 'broken',
        state: 'UNAVAILABLE',
        reason: "unexpected directory name 'broken' for model 'other', directory name must equal model name",
      },
      { name: 'failing', version: '2', state: 'READY', reason: '' },
      { name: 'failing2', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'failing2', version: '2', state: 'UNAVAILABLE', reason: 'Invalid argument: bad weights' },
      { name: 'noconfig', version: '1', state: 'READY', reason: '' },
      {
        name: 'noversions',
        state: 'UNAVAILABLE',
        reason: "at least one version must be available under the version policy of model 'noversions'",
      },
      { name: 'simple', version: '3', state: 'READY', reason: '' },
    ]);
    assert.deepEqual(
      m.index(true).map((e) => `${e.name}:${e.version}`),
      ['allv:0', 'allv:1', 'failing:2', 'noconfig:1', 'simple:3'],
    );
    // Strict readiness: failing2 has an UNAVAILABLE version and noversions no version at all.
    assert.equal(m.allReady(), false);
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('none mode: model control API and polling are refused with Triton messages', async () => {
  const repo = await tempRepo();
  const m = manager([repo], new FakeLoader());
  try {
    await writeModel(repo, 'a', { config: {} });
    assert.deepEqual(await m.startup(), []);
    const refused = codeAndMessage(
      'UNAVAILABLE',
      'explicit model load / unload is not allowed if polling is enabled',
    );
    await assert.rejects(m.load('a'), refused);
    await assert.rejects(m.unload('a'), refused);
    await assert.rejects(m.pollOnce(), codeAndMessage('UNAVAILABLE', 'polling is disabled'));
    assert.equal(m.allReady(), true);
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('getVersion: default = highest READY; Triton messages for unknown, missing and unready versions', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader);
  try {
    await writeModel(repo, 'm', {
      config: { version_policy: { specific: { versions: [1, 3, 4] } } },
      versions: [1, 2, 3],
    });
    loader.failLoad.set('m:3', new NereidError('INTERNAL', 'nope'));
    await writeModel(repo, 'ok', { config: { version_policy: { all: {} } }, versions: [1, 2] });
    const failures = await m.startup();
    assert.deepEqual(failures, [{ name: 'm', reason: 'version 3 is at UNAVAILABLE state: Internal: nope;' }]);
    // The load is all-or-nothing: version 1 loaded, then was dropped because version 3 failed.
    assert.deepEqual(m.versionStates('m'), [
      { version: 1, state: 'UNAVAILABLE', reason: 'unloaded' },
      { version: 3, state: 'UNAVAILABLE', reason: 'Internal: nope' },
    ]);
    assert.deepEqual(
      m.index(false).filter((e) => e.name === 'm'),
      [
        { name: 'm', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
        { name: 'm', version: '3', state: 'UNAVAILABLE', reason: 'Internal: nope' },
        {
          name: 'm',
          version: '4',
          state: 'UNAVAILABLE',
          reason: "version 4 is specified for model 'm', but the version directory is not present",
        },
      ],
    );

    assert.equal(m.getVersion('ok').version, 2);
    assert.equal(m.getVersion('ok', '').version, 2);
    assert.equal(m.getVersion('ok', '1').version, 1);
    assert.deepEqual(m.readyVersions('ok'), [1, 2]);
    assert.throws(
      () => m.getVersion('nope'),
      codeAndMessage('NOT_FOUND', "Request for unknown model: 'nope' is not found"),
    );
    assert.throws(
      () => m.getVersion('ok', '7'),
      codeAndMessage('NOT_FOUND', "Request for unknown model: 'ok' version 7 is not found"),
    );
    assert.throws(
      () => m.getVersion('m', '3'),
      codeAndMessage('UNAVAILABLE', "Request for unknown model: 'm' version 3 is not at ready state"),
    );
    assert.throws(
      () => m.getVersion('m'),
      codeAndMessage('NOT_FOUND', "Request for unknown model: 'm' has no available versions"),
    );
    assert.throws(
      () => m.getVersion('ok', 'x1'),
      (e: NereidError) => e.code === 'INVALID_ARG',
    );
    assert.throws(() => m.getVersion('ok', '-1'), /invalid model version specified '-1'/);
    assert.deepEqual(m.modelNames(), ['m', 'ok']);
    assert.equal(m.loadedVersions().length, 2);
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('a model in two repositories is UNAVAILABLE with Triton reason and not loaded', async () => {
  const a = await tempRepo();
  const b = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([a, b], loader);
  try {
    await writeModel(a, 'dup', { config: {} });
    await writeModel(b, 'dup', { config: {} });
    await writeModel(b, 'solo', { config: {} });
    const failures = await m.startup();
    assert.deepEqual(failures, [
      { name: 'dup', reason: "failed to poll model 'dup': not unique across all model repositories" },
    ]);
    assert.deepEqual(m.index(false), [
      { name: 'dup', state: 'UNAVAILABLE', reason: 'model appears in two or more repositories' },
      { name: 'solo', version: '1', state: 'READY', reason: '' },
    ]);
    assert.deepEqual(loader.loadsOf('dup'), []);
    assert.throws(() => m.getVersion('dup'), /'dup' is not found/);
  } finally {
    await m.close();
    await removeRepo(a);
    await removeRepo(b);
  }
});

void test('--model-config-name picks configs/<name>.pbtxt when present', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader, { modelConfigName: 'big' });
  try {
    await writeModel(repo, 'with', {
      config: { max_batch_size: 1 },
      files: { 'configs/big.pbtxt': JSON.stringify({ max_batch_size: 64 }) },
    });
    await writeModel(repo, 'without', { config: { max_batch_size: 2 } });
    assert.deepEqual(await m.startup(), []);
    assert.equal(loader.rawSeen.get('with')?.max_batch_size, 64);
    assert.equal(loader.rawSeen.get('without')?.max_batch_size, 2);
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('oversized config file is refused; auto-complete failure marks the versions with the reason', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader, { maxConfigFileBytes: 64 });
  try {
    await writeModel(repo, 'huge', { config: JSON.stringify({ name: 'huge', platform: 'x'.repeat(100) }) });
    await writeModel(repo, 'nocomplete', { config: {}, versions: [1, 2] });
    loader.failComplete.set('nocomplete', new NereidError('INVALID_ARG', 'unable to auto-complete'));
    const failures = await m.startup();
    assert.match(
      failures.find((f) => f.name === 'huge')?.reason ?? '',
      /exceeds the maximum size of 64 bytes/,
    );
    assert.deepEqual(m.versionStates('nocomplete'), [
      { version: 2, state: 'UNAVAILABLE', reason: 'Invalid argument: unable to auto-complete' },
    ]);
    assert.equal(m.allReady(), false);
    assert.deepEqual(loader.loadsOf('huge'), []);
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('strict readiness follows instance health; startup refuses a repository that is not a folder', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader);
  try {
    await writeModel(repo, 'a', { config: {} });
    await m.startup();
    assert.equal(m.allReady(), true);
    const v = loader.latest('a', 1);
    assert.ok(v);
    v.healthy = false;
    assert.equal(m.allReady(), false);
    await writeFile(path.join(repo, 'file'), 'x');
    const bad = manager([path.join(repo, 'file')], new FakeLoader());
    await assert.rejects(bad.startup(), (e: NereidError) => e.code === 'INVALID_ARG');
  } finally {
    await m.close();
    await removeRepo(repo);
  }
});

void test('close unloads every version and refuses further operations', async () => {
  const repo = await tempRepo();
  const loader = new FakeLoader();
  const m = manager([repo], loader, { controlMode: 'explicit', startupModels: ['*'] });
  try {
    await writeModel(repo, 'a', { config: {} });
    await writeModel(repo, 'b', { config: {} });
    await m.startup();
    assert.equal(m.readyVersions('a').length, 1);
    await m.close();
    assert.ok(loader.versions.every((v) => v.unloaded));
    assert.deepEqual(
      m.index(false).map((e) => `${e.name}:${e.state}:${e.reason}`),
      ['a:UNAVAILABLE:unloaded', 'b:UNAVAILABLE:unloaded'],
    );
    await assert.rejects(m.load('a'), /shut down/);
  } finally {
    await removeRepo(repo);
  }
});
