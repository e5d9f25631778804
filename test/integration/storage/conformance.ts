/**
 * The repository-conformance suite, run unchanged against local disk and each real storage server: layout
 * rules, version policies, `configs/`, label files, a Python and a JavaScript model with extra files and an
 * ensemble (one server in `none` mode); poll mode noticing added, changed and removed models while
 * requests keep succeeding (reloading only what changed); explicit load and unload, `file:` overrides, and
 * model copies removed on unload and at stop.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FIXTURES, post, request, waitFor } from '../harness.js';
import {
  ensembleModel,
  identityConfig,
  identityModel,
  infer,
  javascriptModel,
  modelReady,
  pythonModel,
  readyVersions,
  repositoryIndex,
  startWith,
  type Files,
  type StoreServer,
} from './models.js';
import { startStore, unavailable, type StoreKind, type TestStore } from './stores.js';

/** The identity config with a label file on its output. */
const labelled = (config: string): string =>
  config.replace(
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] label_filename: "labels.txt" } ]',
  );

let prefixes = 0;
/** A fresh folder of the store for one server. */
export async function seed(store: TestStore, files: Files): Promise<string> {
  const prefix = `repo${++prefixes}-${process.pid}`;
  const keys = Object.entries(files);
  for (let i = 0; i < keys.length; i += 4) {
    await Promise.all(keys.slice(i, i + 4).map(([k, v]) => store.put(`${prefix}/${k}`, v)));
  }
  return prefix;
}

/** Every file below `dir` (paths relative to it). */
export function filesBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)));
}

/** Sends requests to `model` until `done()` resolves; returns every status. */
async function traffic(url: string, model: string, done: Promise<void>): Promise<number[]> {
  const statuses: number[] = [];
  let stop = false;
  void done.finally(() => (stop = true));
  await Promise.all(
    [0, 1].map(async () => {
      while (!stop) {
        const r = await infer(url, model, [1, 2, 3]);
        statuses.push(r.status);
        if (r.status === 200) assert.deepEqual(r.data, [1, 2, 3]);
      }
    }),
  );
  return statuses;
}

export function conformanceSuite(kind: StoreKind): void {
  const skip = unavailable(kind);
  describe(`model repository conformance on ${kind}`, { skip }, () => {
    let store: TestStore;
    let mount: string;
    before(async () => {
      store = await startStore(kind);
      mount = mkdtempSync(path.join(os.tmpdir(), 'nereid-mount-'));
    });
    after(async () => {
      await store?.stop();
      rmSync(mount, { recursive: true, force: true });
    });
    const settings = (): TestStore['cloudStorage'] => ({
      ...store.cloudStorage,
      mountDirectories: { s3: mount, gs: mount, as: mount },
    });

    describe('layout, versions, configs/, labels, Python, JavaScript, ensemble (none mode)', () => {
      let s: StoreServer;
      let repo: string;
      before(async () => {
        const prefix = await seed(store, {
          ...identityModel('ident', [1, 2]),
          'ident/config.pbtxt': labelled(identityConfig('ident')),
          'ident/labels.txt': 'zero\none\ntwo\n',
          'ident/configs/alt.pbtxt': labelled(identityConfig('ident', 'version_policy: { all { } }')),
          'ident/007/model.onnx': readFileSync(path.join(FIXTURES, 'identity_fp32.onnx')),
          'ident/notes/readme.txt': 'not a version',
          'ident/.swp': 'editor file',
          ...identityModel('policy_all', [1, 2, 3], 'version_policy: { all { } }'),
          ...identityModel('policy_latest', [1, 2, 3], 'version_policy: { latest { num_versions: 2 } }'),
          ...identityModel(
            'policy_specific',
            [1, 2, 3],
            'version_policy: { specific { versions: [ 1, 3, 9 ] } }',
          ),
          ...identityModel('default_policy', [1, 2, 10]),
          'wrong_name/config.pbtxt': identityConfig('other'),
          'wrong_name/1/model.onnx': readFileSync(path.join(FIXTURES, 'identity_fp32.onnx')),
          ...identityModel('.hidden_model'),
          'README.md': 'not a model',
          ...pythonModel('py_extra'),
          ...javascriptModel('js_extra'),
          ...ensembleModel('ens', 'policy_all'),
        });
        repo = store.url(prefix);
        s = await startWith(settings(), [
          `--model-repository=${repo}`,
          '--model-config-name=alt',
          '--exit-on-error=false',
          '--strict-readiness=false',
        ]);
      });
      after(async () => {
        await s?.stop();
      });

      it('finds the model folders; hidden folders and plain files are not models', async () => {
        const names = [...new Set((await repositoryIndex(s.url)).map((e) => e.name))].sort();
        assert.deepEqual(names, [
          'default_policy',
          'ens',
          'ident',
          'js_extra',
          'policy_all',
          'policy_latest',
          'policy_specific',
          'py_extra',
          'wrong_name',
        ]);
      });

      it('a config whose name is not its folder name fails with the reason, the others serve', async () => {
        const entry = (await repositoryIndex(s.url)).find((e) => e.name === 'wrong_name');
        assert.equal(entry?.state, 'UNAVAILABLE');
        assert.match(entry?.reason ?? '', /unexpected directory name 'wrong_name' for model 'other'/);
      });

      it('version policies pick the versions; malformed version folders are ignored', async () => {
        assert.deepEqual(await readyVersions(s.url, 'policy_all'), [1, 2, 3]);
        assert.deepEqual(await readyVersions(s.url, 'policy_latest'), [2, 3]);
        assert.deepEqual(await readyVersions(s.url, 'policy_specific'), [1, 3]);
        assert.deepEqual(await readyVersions(s.url, 'default_policy'), [10]);
        const missing = (await repositoryIndex(s.url)).find(
          (e) => e.name === 'policy_specific' && e.version === '9',
        );
        assert.equal(missing?.state, 'UNAVAILABLE');
        assert.equal((await infer(s.url, 'policy_latest', [4, 5], { version: '2' })).status, 200);
        assert.match(
          (await infer(s.url, 'policy_latest', [4, 5], { version: '1' })).error ?? '',
          /version 1/,
        );
      });

      it('--model-config-name takes configs/<name>.pbtxt (its policy: every version, 007 and notes ignored)', async () => {
        const index = JSON.stringify((await repositoryIndex(s.url)).filter((e) => e.name === 'ident'));
        assert.deepEqual(await readyVersions(s.url, 'ident'), [1, 2], index);
        assert.deepEqual(await infer(s.url, 'ident', [1.5, -2]), {
          status: 200,
          data: [1.5, -2],
          error: undefined,
        });
      });

      it('label files are read from the model folder (classification answers with labels)', async () => {
        const res = await post(`${s.url}/v2/models/ident/infer`, {
          inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: 'FP32', data: [0.1, 0.9, 0.5] }],
          outputs: [{ name: 'OUTPUT0', parameters: { classification: 2 } }],
        });
        assert.equal(res.status, 200, res.body.toString());
        const out = res.json<{ outputs: { data: string[] }[] }>();
        assert.deepEqual(out.outputs[0].data, ['0.900000:1:one', '0.500000:2:two']);
      });

      it('a Python model reads extra files of its version folder and model folder', async () => {
        assert.deepEqual(await infer(s.url, 'py_extra', [1, 2]), {
          status: 200,
          data: [103, 106],
          error: undefined,
        });
      });

      it('a TypeScript model imports a module from a sub-folder of its version folder', async () => {
        assert.deepEqual(await infer(s.url, 'js_extra', [1, 2]), {
          status: 200,
          data: [7, 14],
          error: undefined,
        });
      });

      it('an ensemble loads after its member and serves through it', async () => {
        assert.deepEqual(await infer(s.url, 'ens', [8, 9], { input: 'IN', output: 'OUT' }), {
          status: 200,
          data: [8, 9],
          error: undefined,
        });
      });
    });

    describe('poll mode', () => {
      let s: StoreServer;
      let prefix: string;
      before(async () => {
        prefix = await seed(store, { ...identityModel('a'), ...identityModel('b') });
        s = await startWith(settings(), [
          `--model-repository=${store.url(prefix)}`,
          '--model-control-mode=poll',
          '--repository-poll-secs=1',
        ]);
      });
      after(async () => {
        await s?.stop();
      });

      it('loads added models, reloads changed ones (only them, serving throughout), unloads removed ones', async () => {
        // Added.
        for (const [k, v] of Object.entries(identityModel('c'))) await store.put(`${prefix}/${k}`, v);
        await waitFor(() => modelReady(s.url, 'c'), 60_000);

        // Changed, while requests run: a new config and a new version.
        const loadsOfB = (): number => s.logs.filter((l) => l.includes('loading: b:')).length;
        const bLoads = loadsOfB();
        let changed!: () => void;
        const done = new Promise<void>((r) => (changed = r));
        const statuses = traffic(s.url, 'a', done);
        await store.put(`${prefix}/a/2/model.onnx`, readFileSync(path.join(FIXTURES, 'identity_fp32.onnx')));
        await store.put(`${prefix}/a/config.pbtxt`, identityConfig('a', 'version_policy: { all { } }'));
        await waitFor(async () => (await readyVersions(s.url, 'a')).join() === '1,2', 60_000);
        changed();
        const seen = await statuses;
        assert.ok(seen.length > 0);
        assert.deepEqual(
          seen.filter((c) => c !== 200),
          [],
          'no request failed while a reloaded',
        );
        assert.equal(loadsOfB(), bLoads, 'b did not change and was not reloaded');

        // Removed.
        for (const k of Object.keys(identityModel('c'))) await store.remove(`${prefix}/${k}`);
        await waitFor(async () => !(await modelReady(s.url, 'c')), 60_000);
        assert.ok(await modelReady(s.url, 'b'));
      });
    });

    describe('explicit mode: load, unload, file overrides, local copies', () => {
      let s: StoreServer;
      before(async () => {
        const prefix = await seed(store, { ...identityModel('x', [1, 2]), ...pythonModel('py') });
        s = await startWith(settings(), [
          `--model-repository=${store.url(prefix)}`,
          '--model-control-mode=explicit',
          '--exit-on-error=false',
        ]);
      });
      after(async () => {
        await s?.stop();
      });
      const copies = (): string[] =>
        store.kind === 'local'
          ? []
          : readdirSync(mount)
              .filter((d) => d.startsWith('nereid-models-'))
              .flatMap((d) => filesBelow(path.join(mount, d)));

      it('the index lists the store’s models before any is loaded', async () => {
        const index = await repositoryIndex(s.url);
        assert.deepEqual(
          index.map((e) => [e.name, e.state]),
          [
            ['py', undefined],
            ['x', undefined],
          ],
        );
      });

      it('load copies the model (only the versions it serves), unload removes the copy', async () => {
        assert.equal((await post(`${s.url}/v2/repository/models/x/load`, {})).status, 200);
        assert.deepEqual(await readyVersions(s.url, 'x'), [2]);
        if (store.kind !== 'local') {
          const files = copies().map((f) => f.split(path.sep).slice(1).join('/'));
          assert.deepEqual(files.sort(), ['x/2/model.onnx', 'x/config.pbtxt']);
          // The copy is reported: what is coming, then the total and the time it took.
          assert.ok(
            s.logs.some((l) => /downloading \S+\/x: 1 file, [\d.]+ (B|KiB)/.test(l)),
            'a progress line announces the download',
          );
          assert.ok(
            s.logs.some((l) => /downloaded \S+\/x: [\d.]+ (B|KiB) in [\d.]+ s, /.test(l)),
            'a progress line reports the finished download',
          );
        }
        assert.equal((await post(`${s.url}/v2/repository/models/py/load`, {})).status, 200);
        assert.deepEqual(await infer(s.url, 'py', [0]), { status: 200, data: [100], error: undefined });
        assert.equal((await post(`${s.url}/v2/repository/models/x/unload`, {})).status, 200);
        await waitFor(async () => !(await modelReady(s.url, 'x')));
        if (store.kind !== 'local') {
          await waitFor(() => copies().every((f) => !f.includes(`${path.sep}x${path.sep}`)));
          assert.ok(
            copies().some((f) => f.endsWith(path.join('py', '1', 'model.py'))),
            'py still has its copy',
          );
        }
      });

      it('a load with a config and file: overrides serves the override files, not the store', async () => {
        const res = await post(`${s.url}/v2/repository/models/x/load`, {
          parameters: {
            config: JSON.stringify({
              name: 'x',
              backend: 'onnxruntime',
              max_batch_size: 0,
              input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1, -1] }],
              output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1, -1] }],
              version_policy: { specific: { versions: [5] } },
            }),
            'file:5/model.onnx': readFileSync(path.join(FIXTURES, 'identity_fp32.onnx')).toString('base64'),
          },
        });
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(await readyVersions(s.url, 'x'), [5]);
        assert.deepEqual(await infer(s.url, 'x', [3]), { status: 200, data: [3], error: undefined });
      });

      it('an unknown model fails to load with Triton’s reason', async () => {
        const res = await post(`${s.url}/v2/repository/models/nope/load`, {});
        assert.notEqual(res.status, 200);
        assert.match(res.body.toString(), /model not found in any model repository/);
      });

      it('stopping the server removes every copy', async () => {
        assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
        await s.stop();
        if (store.kind !== 'local') {
          assert.deepEqual(
            readdirSync(mount).filter((d) => d.startsWith('nereid-models-')),
            [],
          );
        }
      });
    });
  });
}
