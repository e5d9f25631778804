// Opening /dev/shm objects (only regular files, never through a symlink) and moving bytes with pread/pwrite.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, truncateSync } from 'node:fs';
import { after, test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { ShmRegion, openShmObject } from './region.js';
import { ShmObjects } from './shm.testkit.js';

const objects = new ShmObjects();
after(() => objects.cleanup());

// INVALID_ARG, where Triton answers INTERNAL: the client's key names nothing usable (found by schemathesis).
const openError = (key: string, why: string) => (err: unknown) =>
  err instanceof NereidError &&
  err.code === 'INVALID_ARG' &&
  err.message === `Unable to open shared memory region: '${key}': ${why}`;

void test('opens a regular object and reports its size', async () => {
  const name = objects.create(100);
  const { handle, size } = await openShmObject(`/${name}`, name);
  assert.equal(size, 100);
  await handle.close();
});

void test('a missing object, a symlink, a directory and a FIFO are refused', async () => {
  const missing = objects.name('missing');
  await assert.rejects(
    openShmObject(`/${missing}`, missing),
    openError(`/${missing}`, 'no such shared memory object'),
  );

  // A symlink in /dev/shm pointing at a file the server could write must not be followed.
  const target = objects.create(Buffer.from('secret'));
  const link = objects.name('link');
  symlinkSync(`/dev/shm/${target}`, `/dev/shm/${link}`);
  await assert.rejects(openShmObject(link, link), openError(link, 'is a symbolic link'));

  const dir = objects.name('dir');
  mkdirSync(`/dev/shm/${dir}`);
  await assert.rejects(openShmObject(dir, dir), openError(dir, 'not a regular file'));

  // O_NONBLOCK: opening a FIFO returns at once (no writer needed), then fstat refuses it.
  const fifo = objects.name('fifo');
  execFileSync('mkfifo', [`/dev/shm/${fifo}`]);
  await assert.rejects(openShmObject(fifo, fifo), openError(fifo, 'not a regular file'));
});

void test('reads and writes land at region offset + tensor offset, small and large', async () => {
  const content = Buffer.alloc(300_000);
  for (let i = 0; i < content.length; i++) content[i] = i % 251;
  const name = objects.create(content);
  const { handle } = await openShmObject(name, name);
  const region = new ShmRegion('r', name, 1000, 250_000, handle);

  assert.deepEqual(await region.read(0, 16), content.subarray(1000, 1016)); // sync path
  assert.deepEqual(await region.read(5, 200_000), content.subarray(1005, 201_005)); // thread-pool path
  assert.equal((await region.read(0, 0)).length, 0);

  const small = Buffer.from([9, 8, 7, 6]);
  await region.write(10, small);
  const large = Buffer.alloc(100_000, 0xab);
  await region.write(100, large);
  const now = objects.read(name);
  assert.deepEqual(now.subarray(1010, 1014), small);
  assert.deepEqual(now.subarray(1100, 101_100), large);
  assert.equal(now[1014], content[1014], 'bytes beside the write are untouched');
  assert.equal(now.length, content.length, 'writes inside the object never grow it');
  await region.close();
});

void test('an object truncated after opening gives a clean error, not a short tensor', async () => {
  const name = objects.create(64);
  const { handle } = await openShmObject(name, name);
  const region = new ShmRegion('r', name, 0, 64, handle);
  truncateSync(`/dev/shm/${name}`, 10);
  await assert.rejects(
    region.read(0, 64),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INVALID_ARG' &&
      /is smaller than registered/.test(err.message),
  );
  await region.close();
});

void test('an output into an object truncated after registration is refused, and the object is not grown', async () => {
  const name = objects.create(64);
  const { handle } = await openShmObject(name, name);
  const region = new ShmRegion('r', name, 16, 48, handle);
  truncateSync(`/dev/shm/${name}`, 20);
  for (const length of [48, 8]) {
    await assert.rejects(
      region.write(0, Buffer.alloc(length, 7)),
      (err: unknown) =>
        err instanceof NereidError &&
        err.code === 'INVALID_ARG' &&
        /is smaller than registered/.test(err.message),
    );
  }
  assert.equal(statSync(`/dev/shm/${name}`).size, 20, 'the write must not grow the object back');
  await region.write(0, Buffer.alloc(4, 9)); // what still fits is written
  assert.deepEqual([...readFileSync(`/dev/shm/${name}`).subarray(16, 20)], [9, 9, 9, 9]);
  await region.close();
});

void test('a closed region refuses transfers; close waits for a running one', async () => {
  const name = objects.create(1 << 20);
  const { handle } = await openShmObject(name, name);
  const region = new ShmRegion('r', name, 0, 1 << 20, handle);
  const running = region.read(0, 1 << 20); // thread-pool read in flight
  const closing = region.close();
  assert.equal((await running).length, 1 << 20);
  await closing;
  assert.equal(region.closed, true);
  await assert.rejects(region.read(0, 4), /was closed while in use/);
  await assert.rejects(region.write(0, Buffer.alloc(4)), /was closed while in use/);
});
