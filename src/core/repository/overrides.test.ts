import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import {
  materializeOverrides,
  normalizeOverridePath,
  removeStaleOverrides,
  removeTree,
} from './overrides.js';
import { removeRepo, tempRepo } from './repository.testkit.js';

const ESCAPES = [
  '',
  'file:',
  '..',
  '.',
  '../model.onnx',
  'file:../../etc/passwd',
  '1/../../x',
  '1/../x',
  '/etc/passwd',
  'file:/abs',
  '1\\..\\..\\x',
  '1\\model.onnx',
  'a\0b',
  '1//model.onnx',
  '1/./model.onnx',
  '1/',
  'a/'.repeat(40) + 'x',
  `1/${'n'.repeat(256)}.py`,
  `1/${'é'.repeat(128)}`,
  `${'d/'.repeat(20)}${'x'.repeat(1100)}`,
];

void test('override paths that could leave the model folder are INVALID_ARG', () => {
  for (const key of ESCAPES) {
    assert.throws(
      () => normalizeOverridePath(key),
      (e: NereidError) => e.code === 'INVALID_ARG' && e.message.startsWith('Invalid file parameter'),
      JSON.stringify(key),
    );
  }
  assert.equal(normalizeOverridePath('file:1/model.onnx'), '1/model.onnx');
  assert.equal(normalizeOverridePath('2/sub/weights.bin'), '2/sub/weights.bin');
  assert.equal(normalizeOverridePath('labels.txt'), 'labels.txt');
});

void test('materialise: the files alone form the model folder, privately', async () => {
  const tmp = await tempRepo('nereid-tmp-');
  try {
    const m = await materializeOverrides(
      tmp,
      'mymodel',
      new Map([
        ['file:1/model.onnx', Buffer.from('onnx bytes')],
        ['2/sub/w.bin', Buffer.from([1, 2, 3])],
      ]),
    );
    assert.equal(path.dirname(m.modelDir), m.root);
    assert.equal(path.basename(m.modelDir), 'mymodel');
    assert.deepEqual((await readdir(m.modelDir)).sort(), ['1', '2']);
    assert.equal(await readFile(path.join(m.modelDir, '1', 'model.onnx'), 'utf8'), 'onnx bytes');
    assert.deepEqual([...(await readFile(path.join(m.modelDir, '2', 'sub', 'w.bin')))], [1, 2, 3]);
    assert.equal((await stat(m.root)).mode & 0o077, 0, 'temp root is private');
    await removeTree(m.root);
    assert.deepEqual(await readdir(tmp), []);
  } finally {
    await removeRepo(tmp);
  }
});

void test('materialise: a bad path is refused before anything is written; conflicts leave nothing behind', async () => {
  const tmp = await tempRepo('nereid-tmp-');
  try {
    for (const key of ESCAPES) {
      await assert.rejects(
        materializeOverrides(
          tmp,
          'm',
          new Map([
            ['1/ok.bin', Buffer.from('x')],
            [key, Buffer.from('y')],
          ]),
        ),
        (e: NereidError) => e.code === 'INVALID_ARG',
      );
    }
    await assert.rejects(
      materializeOverrides(
        tmp,
        'm',
        new Map([
          ['1', Buffer.from('a file')],
          ['1/model.onnx', Buffer.from('x')],
        ]),
      ),
      /directory has been created as a file/,
    );
    // A path component longer than NAME_MAX: Triton answers 500 from the file system, Nereid a clean 400.
    await assert.rejects(
      materializeOverrides(tmp, 'm', new Map([['A'.repeat(300), Buffer.from('x')]])),
      (e: NereidError) => e.code === 'INVALID_ARG',
    );
    assert.deepEqual(await readdir(tmp), []);
  } finally {
    await removeRepo(tmp);
  }
});

void test('names a file system cannot take are INVALID_ARG, and no error names the private folder', async () => {
  const tmp = await tempRepo('nereid-tmp-');
  try {
    const long = `file:1/${'n'.repeat(300)}.py`;
    await assert.rejects(
      materializeOverrides(tmp, 'm', new Map([[long, Buffer.from('x')]])),
      (e: NereidError) =>
        e.code === 'INVALID_ARG' && /longer than 255 bytes/.test(e.message) && !e.message.includes(tmp),
    );
    await assert.rejects(
      materializeOverrides(tmp, 'm'.repeat(300), new Map([['file:1/model.py', Buffer.from('x')]])),
      (e: NereidError) => e.code === 'INVALID_ARG' && !e.message.includes(tmp),
    );
    // 255 bytes exactly is a valid name.
    const ok = await materializeOverrides(tmp, 'm', new Map([[`1/${'n'.repeat(252)}.py`, Buffer.from('x')]]));
    await removeTree(ok.root);
    await assert.rejects(
      materializeOverrides(path.join(tmp, 'no-such-dir'), 'm', new Map([['1/model.py', Buffer.from('x')]])),
      (e: NereidError) => e.code === 'INTERNAL' && !e.message.includes(tmp),
    );
    assert.deepEqual(await readdir(tmp), []);
  } finally {
    await removeRepo(tmp);
  }
});

void test('override folders a dead server left behind are removed at the next start; others are kept', async () => {
  const tmp = await tempRepo();
  try {
    const deadPid = spawnSync(process.execPath, ['-e', '0']).pid; // exited: no process has this id now
    const stale = path.join(tmp, `nereid-override-${deadPid}-aB3xYz`);
    await mkdir(path.join(stale, 'm', '1'), { recursive: true });
    await writeFile(path.join(stale, 'm', '1', 'model.py'), 'secret code');
    const live = path.join(tmp, `nereid-override-${process.pid}-Qw12er`);
    await mkdir(live);
    const oldForm = path.join(tmp, 'nereid-override-Zx98cv');
    await mkdir(oldForm);
    const outside = path.join(tmp, 'elsewhere');
    await mkdir(outside);
    await writeFile(path.join(outside, 'keep'), 'x');
    const link = path.join(tmp, `nereid-override-${deadPid}-L1nk00`);
    await symlink(outside, link);

    const removed = await removeStaleOverrides(tmp);
    assert.deepEqual(removed, [stale]);
    const left = (await readdir(tmp)).sort();
    assert.deepEqual(
      left,
      ['elsewhere', path.basename(link), path.basename(live), path.basename(oldForm)].sort(),
    );
    assert.equal(await readFile(path.join(outside, 'keep'), 'utf8'), 'x', 'a link is not followed');
    // A live server's own folders use its pid: what materializeOverrides makes is kept by a second start.
    const made = await materializeOverrides(tmp, 'm', new Map([['1/model.py', Buffer.from('x')]]));
    assert.match(path.basename(made.root), new RegExp(`^nereid-override-${process.pid}-`));
    assert.deepEqual(await removeStaleOverrides(tmp), []);
    assert.equal(await removeStaleOverrides(path.join(tmp, 'missing')).then((r) => r.length), 0);
  } finally {
    await removeRepo(tmp);
  }
});
