import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { LocalFileSystem } from './local.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'nereid-local-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function readError(model: string): Promise<NereidError> {
  const view = await new LocalFileSystem(root).openFolder(path.join(root, model));
  try {
    await view.readText('config.pbtxt', 1024 * 1024);
  } catch (err) {
    assert.ok(err instanceof NereidError);
    return err;
  }
  assert.fail(`${model}: expected an error`);
}

void test('a config.pbtxt linked outside its model folder is refused before a byte is read', async () => {
  const secret = path.join(root, 'secret');
  writeFileSync(secret, 'root:$6$hash:19000:0:99999:7:::\n');
  mkdirSync(path.join(root, 'linked'));
  symlinkSync(secret, path.join(root, 'linked', 'config.pbtxt'));
  mkdirSync(path.join(root, 'dangling'));
  symlinkSync('/nonexistent/elsewhere', path.join(root, 'dangling', 'config.pbtxt'));
  for (const model of ['linked', 'dangling']) {
    const err = await readError(model);
    assert.equal(err.code, 'INVALID_ARG');
    assert.equal(
      err.message,
      `'config.pbtxt' of model folder '${model}' leads outside the model folder through a symbolic link`,
    );
    assert.ok(!err.message.includes('root'), 'nothing of the file is echoed');
  }
});

void test('links inside the model folder (a ConfigMap layout) are followed', async () => {
  const dir = path.join(root, 'configmap');
  mkdirSync(path.join(dir, '..data'), { recursive: true });
  writeFileSync(path.join(dir, '..data', 'config.pbtxt'), 'name: "configmap"\n');
  symlinkSync('..data/config.pbtxt', path.join(dir, 'config.pbtxt'));
  const view = await new LocalFileSystem(root).openFolder(dir);
  assert.equal(await view.readText('config.pbtxt', 1024), 'name: "configmap"\n');
  assert.equal(await view.readText('missing.pbtxt', 1024), undefined);
});

void test('a FIFO as config.pbtxt is refused without blocking', async () => {
  mkdirSync(path.join(root, 'fifo'));
  execFileSync('mkfifo', [path.join(root, 'fifo', 'config.pbtxt')]);
  const err = await readError('fifo');
  assert.equal(err.code, 'INVALID_ARG');
  assert.match(err.message, /is not a regular file/);
});
