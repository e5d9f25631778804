// The region registry: Triton's register / unregister / status rules, bounds and overflow checks, the
// --allow-client-shm switch, regions in use, and closing every descriptor on stop.
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { after, test } from 'node:test';
import { NereidError, type ErrorCode } from '../../common/errors.js';
import { CLIENT_SHM_DISABLED, SystemSharedMemoryManager } from './manager.js';
import { ShmObjects } from './shm.testkit.js';

const objects = new ShmObjects();
after(() => objects.cleanup());

const fails = (code: ErrorCode, message: string | RegExp) => (err: unknown) =>
  err instanceof NereidError &&
  err.code === code &&
  (typeof message === 'string' ? err.message === message : message.test(err.message));

const enabled = (maxRegions?: number) =>
  new SystemSharedMemoryManager({ allowClientShm: true, ...(maxRegions !== undefined && { maxRegions }) });

/** Open descriptors of this process on /dev/shm objects made by this test file. */
function openTestFds(prefix: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkFd(fd).includes(prefix)) n++;
    } catch {
      // the fd closed while listing
    }
  }
  return n;
}
const readlinkFd = (fd: string): string => readlinkSync(`/proc/self/fd/${fd}`);

void test('register, status, unregister; unknown names unregister as a no-op', async () => {
  const m = enabled();
  const key = objects.create(128);
  await m.register('c', key, 32, 64);
  await m.register('a', `/${key}`, 0, 64);
  await m.register('b', key, 64, 64); // same object, another window: fine, as in Triton (c overlaps both)
  // Sorted by name, as Triton's std::map lists them.
  assert.deepEqual(m.status(), [
    { name: 'a', key: `/${key}`, offset: 0, byte_size: 64 },
    { name: 'b', key, offset: 64, byte_size: 64 },
    { name: 'c', key, offset: 32, byte_size: 64 },
  ]);
  assert.deepEqual(m.status('b'), [{ name: 'b', key, offset: 64, byte_size: 64 }]);
  assert.throws(
    () => m.status('zzz'),
    fails('NOT_FOUND', "Unable to find system shared memory region: 'zzz'"),
  );
  await m.unregister('nope');
  await m.unregister('a');
  assert.deepEqual(
    m.status().map((s) => s.name),
    ['b', 'c'],
  );
  await m.unregister();
  assert.deepEqual(m.status(), []);
});

void test('a name registers once: ALREADY_EXISTS with Triton text, also while the first is opening', async () => {
  const m = enabled();
  const key = objects.create(8);
  await m.register('dup', key, 0, 8);
  await assert.rejects(
    m.register('dup', key, 0, 8),
    fails('ALREADY_EXISTS', "shared memory region 'dup' already in manager"),
  );
  const first = m.register('race', key, 0, 8);
  await assert.rejects(m.register('race', key, 0, 8), fails('ALREADY_EXISTS', /already in manager/));
  await first;
  assert.equal(m.size, 2);
  await m.close();
});

void test('registration bounds: offset + byte_size must fit the object', async () => {
  const m = enabled();
  const key = objects.create(64);
  const invalid = fails('INVALID_ARG', "failed to register shared memory region 'r': invalid args");
  for (const [offset, size] of [
    [0, 65],
    [1, 64],
    [64, 1],
    [65, 0],
    [-1, 8],
    [0, -1],
    [0.5, 8],
    [0, Number.NaN],
    [2 ** 53, 8],
    [0, 2 ** 64],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ]) {
    await assert.rejects(m.register('r', key, offset, size), invalid, `${offset}+${size}`);
  }
  assert.equal(m.size, 0);
  await m.register('r', key, 64, 0); // empty window at the very end: fits
  await m.register('s', key, 0, 64);
  await m.close();
});

void test('bad keys and missing objects are refused before anything is opened', async () => {
  const m = enabled();
  for (const key of ['../x', '/tmp/x', '/dev/shm/x', '/', '..', 'a\0b']) {
    await assert.rejects(m.register('r', key, 0, 1), fails('INVALID_ARG', /invalid shm key/), key);
  }
  const missing = objects.name('missing');
  await assert.rejects(
    m.register('r', `/${missing}`, 0, 1),
    fails('INVALID_ARG', `Unable to open shared memory region: '/${missing}': no such shared memory object`),
  );
  await assert.rejects(
    m.register('', 'x', 0, 1),
    fails('INVALID_ARG', "'region name' is necessary to register system shared memory region"),
  );
  await assert.rejects(m.register('n'.repeat(2000), 'x', 0, 1), fails('INVALID_ARG', /name is too long/));
  assert.equal(m.size, 0);
});

void test('disabled (the default): register and unregister fail with Triton text, status stays readable', async () => {
  const m = new SystemSharedMemoryManager({ allowClientShm: false });
  const key = objects.create(8);
  await assert.rejects(m.register('r', key, 0, 8), fails('UNSUPPORTED', CLIENT_SHM_DISABLED));
  await assert.rejects(m.unregister('r'), fails('UNSUPPORTED', CLIENT_SHM_DISABLED));
  await assert.rejects(m.unregister(), fails('UNSUPPORTED', CLIENT_SHM_DISABLED));
  assert.deepEqual(m.status(), []);
  assert.throws(() => m.status('r'), fails('NOT_FOUND', /Unable to find system shared memory region/));
});

void test("acquire: Triton's offset, overflow and bounds checks against the region", async () => {
  const m = enabled();
  const key = objects.create(4096 + 64);
  await m.register('r', key, 4096, 64);
  assert.throws(
    () => m.acquire('nope', 0, 4),
    fails('NOT_FOUND', "Unable to find shared memory region: 'nope'"),
  );
  const badOffset = fails('INVALID_ARG', "Invalid offset for shared memory region: 'r'");
  assert.throws(() => m.acquire('r', 64, 0), badOffset);
  assert.throws(() => m.acquire('r', 2 ** 64 - 32, 4), badOffset);
  assert.throws(() => m.acquire('r', -32, 4), badOffset); // a gRPC int64 cast to size_t
  assert.throws(
    () => m.acquire('r', 32, 2 ** 64 - 32),
    fails(
      'INVALID_ARG',
      /^Integer overflow detected: byte_size \(\d+\) \+ offset \(32\) exceeds maximum value \(18446744073709551615\) for region 'r'$/,
    ),
  );
  assert.throws(() => m.acquire('r', 32, -1), fails('INVALID_ARG', /^Integer overflow detected/));
  assert.throws(
    () => m.acquire('r', 1, 64),
    fails('INVALID_ARG', "Invalid offset + byte size for shared memory region: 'r'"),
  );
  assert.throws(() => m.acquire('r', 0, 1.5), fails('INVALID_ARG', /Invalid byte size/));
  const slice = m.acquire('r', 60, 4);
  assert.equal(slice.offset, 60);
  assert.equal(slice.byteSize, 4);
  assert.equal(slice.region.users, 1);
  m.release(slice);
  assert.equal(slice.region.users, 0);
  await m.close();
});

void test('unregister while in use: the region stays until its last user releases it, then closes', async () => {
  const m = enabled();
  const key = objects.create(16);
  await m.register('busy', key, 0, 16);
  const s1 = m.acquire('busy', 0, 8);
  await m.unregister('busy');
  assert.deepEqual(
    m.status().map((s) => s.name),
    ['busy'],
    'listed while a request holds it (Triton)',
  );
  const s2 = m.acquire('busy', 8, 8); // Triton still serves it meanwhile
  await assert.rejects(m.register('busy', key, 0, 16), fails('ALREADY_EXISTS', /already in manager/));
  m.release(s1);
  assert.equal(m.size, 1);
  assert.equal(s2.region.closed, false);
  const data = await s2.region.read(s2.offset, s2.byteSize);
  assert.equal(data.length, 8);
  m.release(s2);
  assert.equal(m.size, 0);
  assert.equal(s2.region.closed, true);
  assert.throws(() => m.status('busy'), fails('NOT_FOUND', /Unable to find system shared memory region/));
});

void test('descriptors: one per region, closed on unregister and on close()', async () => {
  const m = enabled();
  const key = objects.create(16, 'fdcount');
  const base = openTestFds('fdcount');
  await m.register('x', key, 0, 16);
  await m.register('y', key, 0, 16);
  assert.equal(openTestFds('fdcount'), base + 2);
  await m.unregister('x');
  assert.equal(openTestFds('fdcount'), base + 1);
  await m.close();
  assert.equal(openTestFds('fdcount'), base);
  await assert.rejects(m.register('z', key, 0, 16), fails('UNAVAILABLE', /shutting down/));
});

void test('the number of regions is bounded', async () => {
  const m = enabled(2);
  const key = objects.create(16);
  await m.register('a', key, 0, 16);
  await m.register('b', key, 0, 16);
  await assert.rejects(m.register('c', key, 0, 16), fails('UNAVAILABLE', /2 regions are registered already/));
  await m.unregister('a');
  await m.register('c', key, 0, 16);
  await m.close();
});
