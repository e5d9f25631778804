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

void test('space pinned by an open batch is never reused; it is once the batch ends', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-shm-'));
  try {
    const files = StubShmFiles.create(
      { prefix: 'p_', initialSize: 256, growth: 256, dir },
      quiet([]),
      'm_0_0',
    );
    assert.ok(files);
    files.unlink();
    const arena = files.toStub;
    const first = arena.pin(); // a decoupled batch whose requests stay open
    assert.equal(await arena.write(Buffer.alloc(100), first), 0);
    const second = arena.pin(); // the next batch while the first one streams
    assert.equal(await arena.write(Buffer.alloc(100), second), 128);
    // The file is full: the third batch's input may not overwrite either open batch, so the file grows.
    const third = arena.pin();
    assert.equal(await arena.write(Buffer.alloc(100), third), 256);
    assert.equal(arena.fileSize, 512);
    arena.unpin(first);
    arena.unpin(third);
    // The first batch ended: its space at the start is used again, the second's still is not.
    const fourth = arena.pin();
    assert.equal(await arena.write(Buffer.alloc(100), fourth), 384, 'after the last write while it fits');
    assert.equal(
      await arena.write(Buffer.alloc(100), fourth),
      0,
      'then the start, which the first batch freed',
    );
    assert.equal(await arena.write(Buffer.alloc(64), fourth), 256, 'then after a region in use');
    // A BLS result (no pin) stays until every batch open now has ended.
    const bls = await arena.write(Buffer.alloc(64));
    assert.equal(bls, 320);
    arena.unpin(fourth);
    assert.notEqual(await arena.write(Buffer.alloc(64), second), 320, 'still kept by the second batch');
    arena.unpin(second);
    arena.reset();
    assert.equal(await arena.write(Buffer.alloc(1)), 0);
    assert.equal(arena.fileSize, 512, 'no growth while space was free');
    files.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
