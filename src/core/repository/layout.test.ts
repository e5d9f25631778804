import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import {
  configFilePath,
  fingerprintModel,
  listVersionFolders,
  parseVersionFolderName,
  readConfigFile,
  scanRepositories,
  scanRepositoriesSync,
  validateModelName,
} from './layout.js';
import { removeRepo, tempRepo, writeModel } from './repository.testkit.js';

void test('version folder names: digits without leading zeros; 0 is a version', () => {
  assert.equal(parseVersionFolderName('0'), 0);
  assert.equal(parseVersionFolderName('1'), 1);
  assert.equal(parseVersionFolderName('42'), 42);
  for (const bad of ['01', '007', '1a', 'a1', '-1', '+1', '', ' 1', '1.0', '9007199254740993']) {
    assert.equal(parseVersionFolderName(bad), undefined, bad);
  }
});

void test('scan: every visible folder of every repository is a model; duplicates are set apart', async () => {
  const a = await tempRepo();
  const b = await tempRepo();
  try {
    await writeModel(a, 'alpha');
    await writeModel(a, 'shared');
    await writeModel(b, 'shared');
    await writeModel(b, 'beta');
    await mkdir(path.join(a, '.hidden'));
    await writeFile(path.join(a, 'README.md'), 'not a model');
    const target = await writeModel(b, '.store-gamma');
    await symlink(target, path.join(b, 'gamma'));
    await symlink(path.join(b, 'nowhere'), path.join(b, 'dangling'));

    for (const scan of [await scanRepositories([a, b]), scanRepositoriesSync([a, b])]) {
      assert.deepEqual([...scan.models.keys()].sort(), ['alpha', 'beta', 'gamma']);
      assert.deepEqual([...scan.duplicates], ['shared']);
      assert.equal(scan.models.get('alpha')?.repositoryPath, a);
      assert.equal(scan.models.get('gamma')?.modelDir, path.join(b, 'gamma'));
      assert.deepEqual(scan.errors, []);
    }
    const missing = await scanRepositories([path.join(a, 'no-such-dir')]);
    assert.equal(missing.errors.length, 1);
  } finally {
    await removeRepo(a);
    await removeRepo(b);
  }
});

void test('versions: numeric folders only; leading zeros, names, hidden, files and reserved folders skipped', async () => {
  const repo = await tempRepo();
  try {
    const dir = await writeModel(repo, 'm', { versions: [2, 0, 1, '01', 'abc', '.5', 'configs', 'warmup'] });
    await writeFile(path.join(dir, '3'), 'a file, not a folder');
    const found = await listVersionFolders(dir);
    assert.deepEqual(found.versions, [0, 1, 2]);
    assert.deepEqual([...found.ignored].sort(), ['01', 'abc']);
  } finally {
    await removeRepo(repo);
  }
});

void test('config file: configs/<name>.pbtxt when the name is set and the file exists, else config.pbtxt', async () => {
  const repo = await tempRepo();
  try {
    const dir = await writeModel(repo, 'm', { config: {}, files: { 'configs/gpu.pbtxt': '{}' } });
    assert.equal(await configFilePath(dir, ''), path.join(dir, 'config.pbtxt'));
    assert.equal(await configFilePath(dir, 'gpu'), path.join(dir, 'configs', 'gpu.pbtxt'));
    assert.equal(await configFilePath(dir, 'cpu'), path.join(dir, 'config.pbtxt'));
  } finally {
    await removeRepo(repo);
  }
});

void test('config file reads are capped, regular-file only, UTF-8 only', async () => {
  const repo = await tempRepo();
  try {
    const f = path.join(repo, 'c.pbtxt');
    assert.equal(await readConfigFile(f, 100), undefined);
    await writeFile(f, 'x'.repeat(100));
    assert.equal(await readConfigFile(f, 100), 'x'.repeat(100));
    await writeFile(f, 'x'.repeat(101));
    await assert.rejects(readConfigFile(f, 100), (e: NereidError) => {
      assert.equal(e.code, 'INVALID_ARG');
      assert.match(e.message, /exceeds the maximum size of 100 bytes/);
      return true;
    });
    await writeFile(f, Buffer.from([0x6e, 0x61, 0xff, 0x6d]));
    await assert.rejects(readConfigFile(f, 100), /not valid UTF-8/);
    await mkdir(path.join(repo, 'dir.pbtxt'));
    await assert.rejects(readConfigFile(path.join(repo, 'dir.pbtxt'), 100), /not a regular file/);
    const fifo = path.join(repo, 'fifo.pbtxt');
    execFileSync('mkfifo', [fifo]);
    await assert.rejects(readConfigFile(fifo, 100), /not a regular file/);
  } finally {
    await removeRepo(repo);
  }
});

void test('fingerprint: changes with any visible file, not with hidden ones; symlink loops terminate', async () => {
  const repo = await tempRepo();
  try {
    const dir = await writeModel(repo, 'm', { config: {}, versions: [1] });
    const fp0 = await fingerprintModel(dir);
    assert.equal(await fingerprintModel(dir), fp0);

    await writeFile(path.join(dir, '.swp'), 'editor junk');
    assert.equal(await fingerprintModel(dir), fp0);

    await writeFile(path.join(dir, '1', 'model.bin'), 'changed content, longer than before');
    const fp1 = await fingerprintModel(dir);
    assert.notEqual(fp1, fp0);

    // Same size, only the mtime moves.
    const past = new Date(Date.now() - 60_000);
    await utimes(path.join(dir, 'config.pbtxt'), past, past);
    const fp2 = await fingerprintModel(dir);
    assert.notEqual(fp2, fp1);

    await writeFile(path.join(dir, 'labels.txt'), 'a\nb\n');
    const fp3 = await fingerprintModel(dir);
    assert.notEqual(fp3, fp2);
    await unlink(path.join(dir, 'labels.txt'));
    assert.notEqual(await fingerprintModel(dir), fp3);

    await symlink(dir, path.join(dir, '1', 'loop'));
    assert.match(await fingerprintModel(dir), /^[0-9a-f]{64}$/);
  } finally {
    await removeRepo(repo);
  }
});

void test('model names: Triton traversal rules (plus ".", backslash, NUL)', () => {
  for (const bad of [
    '../etc',
    'a/../b',
    '../../etc/passwd',
    'model/..',
    '..',
    '/etc/passwd',
    'model/subdir',
    'model/',
    ' ..',
    '.. ',
    '.',
    'a\\b',
    'a\0b',
  ]) {
    assert.throws(
      () => validateModelName(bad),
      (e: NereidError) =>
        e.code === 'INVALID_ARG' &&
        e.message.includes('model name must not contain path traversal characters'),
      JSON.stringify(bad),
    );
  }
  for (const empty of ['', '   ']) {
    assert.throws(
      () => validateModelName(empty),
      /Model name cannot be empty. Please enter a valid name to deploy./,
    );
  }
  for (const ok of ['model123', 'model.version1', '...', '..my_model', 'model..1']) validateModelName(ok);
});
