import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, readdirSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Logger } from '../../common/logger.js';
import { StubShmFiles } from './shm.js';

const quiet = (lines: string[]): Logger => new Logger({}, (l) => lines.push(l));

void test('the files are created, unlinked on request, and move bytes both ways', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-shm-'));
  try {
    const files = StubShmFiles.create(
      { prefix: 'p_', initialSize: 100, growth: 64, dir },
      quiet([]),
      'm_0_0',
    );
    assert.ok(files);
    assert.equal(readdirSync(dir).length, 2);
    files.unlink();
    assert.deepEqual(readdirSync(dir), []);

    const arena = files.toStub;
    const a = await arena.write(Buffer.from('first'));
    const b = await arena.write(Buffer.alloc(300, 7));
    assert.equal(a, 0);
    assert.equal(b, 64, 'allocations are 64-byte aligned');
    arena.reset();
    assert.equal(await arena.write(Buffer.from('again')), 0, 'reset reuses the space');

    // What the stub would write into its file, the host reads back.
    const [, fromFd] = files.fds;
    writeSync(fromFd, Buffer.from('output bytes'), 0, 12, 128);
    assert.equal((await files.fromStub.read(128, 12)).toString(), 'output bytes');
    await assert.rejects(files.fromStub.read(1 << 20, 4), /outside its shared-memory file/);
    files.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('an unusable /dev/shm means inline tensors and one actionable warning', () => {
  const lines: string[] = [];
  const files = StubShmFiles.create(
    { prefix: 'p_', initialSize: 100, growth: 64, dir: '/nonexistent/shm' },
    quiet(lines),
    'm_0_0',
  );
  assert.equal(files, undefined);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /cannot use \/nonexistent\/shm for the tensors of 'm_0_0' \(ENOENT\).*--shm-size/);
});

void test('a failed write (a full /dev/shm) switches to inline once, with a warning', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-shm-'));
  const lines: string[] = [];
  try {
    const files = StubShmFiles.create(
      { prefix: 'p_', initialSize: 100, growth: 64, dir },
      quiet(lines),
      'm_0_0',
    );
    assert.ok(files);
    files.unlink();
    // Make writes fail as they would on ENOSPC: the descriptor goes away under the arena.
    const [toFd] = files.fds;
    closeSync(toFd);
    assert.equal(await files.toStub.write(Buffer.from('x')), undefined);
    assert.equal(await files.toStub.write(Buffer.from('y')), undefined);
    assert.equal(lines.filter((l) => l.includes('cannot take more input tensors')).length, 1);
    closeSync(files.fds[1]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
