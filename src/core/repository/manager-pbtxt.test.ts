import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import { ModelRepositoryManager } from './manager.js';
import { FakeLoader, removeRepo, tempRepo, writeModel } from './repository.testkit.js';

// The manager with its default parsers (model-config's pbtxt and JSON readers) on real config text.
void test('real config.pbtxt files: names, version policies, ensemble steps, JSON overrides', async () => {
  const repo = await tempRepo();
  const tmp = await tempRepo('nereid-tmp-');
  const loader = new FakeLoader();
  const m = new ModelRepositoryManager(
    { repositoryPaths: [repo], controlMode: 'explicit', startupModels: ['*'], tempDirectory: tmp },
    loader,
  );
  try {
    await writeModel(repo, 'simple', {
      config: 'name: "simple"\nmax_batch_size: 8\nversion_policy: { specific: { versions: [1, 3] } }\n',
      versions: [1, 2, 3],
    });
    await writeModel(repo, 'unnamed', { config: 'max_batch_size: 0\n', versions: [1, 2] });
    await writeModel(repo, 'ens', {
      config: [
        'platform: "ensemble"',
        'ensemble_scheduling {',
        '  step [ { model_name: "simple" model_version: 3 }, { model_name: "unnamed" model_version: -1 } ]',
        '}',
      ].join('\n'),
    });
    await writeModel(repo, 'wrong', { config: 'name: "right"\n' });
    await writeModel(repo, 'garbage', { config: 'max_batch_size: "eight"\n' });

    const failures = await m.startup();
    assert.deepEqual(
      failures.map((f) => f.name),
      ['garbage', 'wrong'],
    );
    assert.equal(
      failures[1].reason,
      "unexpected directory name 'wrong' for model 'right', directory name must equal model name",
    );
    assert.deepEqual(m.readyVersions('simple'), [1, 3]);
    assert.deepEqual(m.readyVersions('unnamed'), [2]);
    assert.equal(loader.rawSeen.get('unnamed')?.name, 'unnamed');
    assert.deepEqual(m.readyVersions('ens'), [1]);
    const order = loader.calls.filter((c) => c.startsWith('load:'));
    assert.ok(order.indexOf('load:ens:1') > order.indexOf('load:simple:3'));

    await m.load('simple', {
      config: JSON.stringify({ max_batch_size: 2, version_policy: { latest: { num_versions: 1 } } }),
    });
    assert.deepEqual(m.readyVersions('simple'), [3]);
    assert.equal(m.getVersion('simple').config.max_batch_size, 2);
    await assert.rejects(
      m.load('simple', { config: '{"max_batch_size": "x"}' }),
      (e: NereidError) => e.code === 'INTERNAL' && e.message.includes('Invalid config override'),
    );
  } finally {
    await m.close();
    await removeRepo(repo);
    await removeRepo(tmp);
  }
});
