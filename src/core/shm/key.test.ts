// Shared-memory key validation: what names one /dev/shm object and what is refused, with Triton's texts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { shmObjectName, shown } from './key.js';

const invalid = (key: string): RegExp =>
  new RegExp(`^cannot register shared memory region 'r' - invalid shm key '${escape(shown(key))}'`);
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

void test('valid keys name one object; leading slashes are dropped as shm_open does', () => {
  const table: [string, string][] = [
    ['/input0_data', 'input0_data'],
    ['input0_data', 'input0_data'],
    ['///x', 'x'],
    ['a.b-c_d', 'a.b-c_d'],
    ['...', '...'],
    ['..x', '..x'],
    ['é', 'é'],
    ['/' + 'k'.repeat(255), 'k'.repeat(255)],
  ];
  for (const [key, object] of table) assert.equal(shmObjectName('r', key), object, key);
});

void test('paths, dot names, control characters and over-long names are refused', () => {
  const table = [
    '',
    '/',
    '///',
    '../x',
    '/../x',
    '..',
    '/..',
    '.',
    '/.',
    'a/b',
    '/dev/shm/x',
    '/tmp/x',
    '/etc/passwd',
    'x/',
    'x\u0000y',
    'x\ny',
    'x\u007f',
    '\ud800',
    'k'.repeat(256),
    'é'.repeat(128), // 256 bytes in UTF-8
  ];
  for (const key of table) {
    assert.throws(
      () => shmObjectName('r', key),
      (err: unknown) =>
        err instanceof NereidError && err.code === 'INVALID_ARG' && invalid(key).test(err.message),
      JSON.stringify(key),
    );
  }
});

void test("Triton's reserved prefix is refused whatever the leading slashes", () => {
  for (const key of [
    'triton_python_backend_shm_region_x',
    '/triton_python_backend_shm_region_x',
    '///triton_python_backend_shm_region_x',
  ]) {
    assert.throws(
      () => shmObjectName('my_region', key),
      (err: unknown) =>
        err instanceof NereidError &&
        err.code === 'INVALID_ARG' &&
        err.message ===
          `cannot register shared memory region 'my_region' with key '${key}' as the key contains the ` +
            "reserved prefix 'triton_python_backend_shm_region_'",
    );
  }
});

void test('shown() escapes control characters and cuts long client strings', () => {
  assert.equal(shown('plain/key'), 'plain/key');
  assert.equal(shown('a\nb\u0000'), 'a\\x0ab\\x00');
  const long = shown('z'.repeat(10_000));
  assert.ok(long.length < 300);
  assert.ok(long.endsWith('...'));
});
