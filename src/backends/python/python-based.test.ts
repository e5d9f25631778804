// The rules of Python-based backends, on real folders: where a backend is found, which script a model's
// `runtime` names, the venv root and key, and which interpreter runs the stubs.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { Logger } from '../../common/logger.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { parseModelConfigText } from '../../model-config/index.js';
import { backendVenv, backendVenvRoot, requirementsKey, INSTALLED_MARKER } from './backend-venv.js';
import { pythonBackendOptions } from './options.js';
import {
  backendPackageName,
  chooseBackendInterpreter,
  findBackendFolder,
  runtimeScript,
  type BackendFolder,
} from './python-based.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-pbb-unit-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function folder(...parts: string[]): string {
  const dir = path.join(tmp, ...parts);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function file(p: string, text = ''): string {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, text);
  return p;
}

const log = new Logger({}, () => {});

describe('findBackendFolder', () => {
  const first = folder('find', 'first');
  const second = folder('find', 'second');
  const bundled = folder('find', 'bundled');
  file(path.join(first, 'both', 'model.py'));
  file(path.join(second, 'both', 'model.py'));
  file(path.join(second, 'only_second', 'other.py'));
  file(path.join(bundled, 'both', 'model.py'));
  file(path.join(bundled, 'mine', 'model.py'));
  file(path.join(first, 'native', 'libtriton_native.so'));
  const options = { backendDirectories: [first, second], venvRoot: tmp, bundledDirectory: bundled };

  it('searches each --backend-directory in order, then the bundled backends', async () => {
    assert.equal((await findBackendFolder('both', options))?.dir, path.join(first, 'both'));
    assert.equal((await findBackendFolder('only_second', options))?.dir, path.join(second, 'only_second'));
    assert.equal((await findBackendFolder('mine', options))?.dir, path.join(bundled, 'mine'));
  });

  it('finds nothing for a folder without Python, an unknown name, a path or python itself', async () => {
    assert.equal(await findBackendFolder('native', options), undefined);
    assert.equal(await findBackendFolder('missing', options), undefined);
    for (const name of ['../find/first/both', 'first/both', '..', '.', '', 'python', 'a\0b']) {
      assert.equal(await findBackendFolder(name, options), undefined, name);
    }
  });
});

describe('runtimeScript', () => {
  const backend: BackendFolder = { name: 'b', dir: '/backends/b' };
  it('is model.py unless the config names another .py file of the folder', () => {
    assert.equal(runtimeScript(backend, '', 'm'), '/backends/b/model.py');
    assert.equal(runtimeScript(backend, 'other.py', 'm'), '/backends/b/other.py');
  });
  it('refuses native libraries and paths out of the folder', () => {
    assert.throws(() => runtimeScript(backend, 'libtriton_b.so', 'm'), /names a native backend library/);
    for (const bad of ['../x.py', 'sub/x.py', '/abs/x.py', '.hidden.py']) {
      assert.throws(
        () => runtimeScript(backend, bad, 'm'),
        /must be a file name in the backend's folder/,
        bad,
      );
    }
  });
});

describe('venv root and key', () => {
  it('takes the flag, then NEREID_BACKEND_VENVS, then the checkout, then the home cache', () => {
    const checkout = folder('root', 'checkout');
    mkdirSync(path.join(checkout, '.git'));
    const installed = folder('root', 'installed');
    assert.equal(backendVenvRoot('/flag', { NEREID_BACKEND_VENVS: '/env' }, checkout), '/flag');
    assert.equal(backendVenvRoot(undefined, { NEREID_BACKEND_VENVS: '/env' }, checkout), '/env');
    assert.equal(backendVenvRoot(undefined, {}, checkout), path.join(checkout, '.cache', 'backends'));
    assert.equal(
      backendVenvRoot(undefined, {}, installed),
      path.join(os.homedir(), '.cache', 'nereid', 'backends'),
    );
  });
  it('names the venv after the sha256 of requirements.txt', () => {
    const text = 'numpy==2.2.6\n';
    const key = createHash('sha256').update(text).digest('hex').slice(0, 12);
    assert.equal(requirementsKey(text), key);
    assert.equal(backendVenv('/r', 'fil', key).dir, `/r/fil-${key}`);
    assert.notEqual(requirementsKey('numpy==2.2.5\n'), key);
  });
  it('imports each backend under a package name of its own', () => {
    assert.equal(backendPackageName('fil'), 'nereid_backend_fil');
    assert.equal(backendPackageName('my-backend.v2'), 'nereid_backend_my_backend_v2');
  });
});

describe('chooseBackendInterpreter', () => {
  const venvRoot = folder('interp', 'venvs');
  const modelDir = folder('interp', 'model');
  const needy = { name: 'needy', dir: folder('interp', 'backends', 'needy') };
  file(path.join(needy.dir, 'model.py'));
  file(path.join(needy.dir, 'requirements.txt'), 'numpy\n');
  const plain = { name: 'plain', dir: folder('interp', 'backends', 'plain') };
  file(path.join(plain.dir, 'model.py'));
  const env = folder('interp', 'model', 'env');
  chmodSync(file(path.join(env, 'bin', 'python3'), '#!/bin/sh\n'), 0o755);

  const config = (params: Record<string, string> = {}): ModelConfig => ({
    ...parseModelConfigText('name: "m"', 'm'),
    parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }])),
  });
  const choose = (
    backend: BackendFolder,
    opts: {
      params?: Record<string, string>;
      own?: Record<string, string>;
      host?: Record<string, string>;
    } = {},
  ): ReturnType<typeof chooseBackendInterpreter> =>
    chooseBackendInterpreter({
      backend,
      modelName: 'm',
      modelDir,
      config: config(opts.params),
      backendConfig: opts.own ?? {},
      hostOptions: pythonBackendOptions(opts.host ?? {}),
      venvRoot,
      files: undefined,
      log,
    });

  it("fails a backend whose venv is missing, naming the install command and not the server's folders", async () => {
    await assert.rejects(choose(needy), (err: unknown) => {
      assert.ok(err instanceof NereidError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.match(err.message, /backend 'needy' of model 'm' is not installed/);
      assert.match(err.message, /'npx nereid backends install needy'/);
      assert.ok(!err.message.includes(venvRoot));
      return true;
    });
  });

  it("uses the venv once it holds the marker, and the backend's python-executable over it", async () => {
    const venv = backendVenv(venvRoot, 'needy', requirementsKey('numpy\n'));
    file(venv.python);
    await assert.rejects(choose(needy), /not installed/, 'no marker: not finished');
    file(path.join(venv.dir, INSTALLED_MARKER));
    assert.equal((await choose(needy)).executable, venv.python);
    const own = await choose(needy, { own: { 'python-executable': '/opt/py/bin/python' } });
    assert.equal(own.executable, '/opt/py/bin/python');
    // The python backend's interpreter is not the backend's: its venv still wins.
    const host = await choose(needy, { host: { 'python-executable': '/usr/bin/python3' } });
    assert.equal(host.executable, venv.python);
  });

  it("takes the model's EXECUTION_ENV_PATH first, with the python backend's confinement", async () => {
    const chosen = await choose(needy, {
      params: { EXECUTION_ENV_PATH: '$$TRITON_MODEL_DIRECTORY/env' },
      own: { 'python-executable': '/opt/py/bin/python' },
    });
    assert.equal(chosen.executable, path.join(env, 'bin', 'python3'));
    await assert.rejects(
      choose(needy, { params: { EXECUTION_ENV_PATH: '/usr' } }),
      /outside the model folder/,
    );
  });

  it("runs a backend without requirements.txt on the python backend's interpreter", async () => {
    const chosen = await choose(plain, { host: { 'python-executable': '/usr/bin/python3' } });
    assert.equal(chosen.executable, '/usr/bin/python3');
  });
});
