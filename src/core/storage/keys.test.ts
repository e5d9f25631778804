// Object keys are hostile: a key below a model folder becomes a local path only when every segment is a
// plain name, and the refusal names the key (control characters escaped).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { MAX_KEY_DEPTH, checkRelativeKey, plainName, printable } from './keys.js';

const refused = (re: RegExp) => (err: unknown) =>
  err instanceof NereidError && err.code === 'INVALID_ARG' && re.test(err.message);

test('plain relative keys become segments', () => {
  assert.deepEqual(checkRelativeKey('1/model.onnx', 'r/m/1/model.onnx', 's3://b/r/m'), ['1', 'model.onnx']);
  assert.deepEqual(checkRelativeKey('a..b/.c', 'k', 'w'), ['a..b', '.c']);
});

test('keys that could leave the folder are refused, naming the key and the folder', () => {
  const cases: [string, RegExp][] = [
    ['../x', /'\.\.' path segment/],
    ['1/../../x', /'\.\.' path segment/],
    ['./x', /'\.' path segment/],
    ['/etc/passwd', /absolute path/],
    ['..\\..\\x', /backslash in name/],
    ['a//b', /empty path segment/],
    ['a/\u0000b', /control character/],
    ['', /empty name/],
    [`${'x'.repeat(256)}`, /path segment too long/],
    [
      Array(MAX_KEY_DEPTH + 1)
        .fill('d')
        .join('/'),
      /more than 32 levels/,
    ],
  ];
  for (const [rel, why] of cases) {
    assert.throws(
      () => checkRelativeKey(rel, `repo/m/${rel}`, 's3://b/repo/m'),
      (err: unknown) =>
        refused(why)(err) &&
        (err as Error).message.includes(`in s3://b/repo/m`) &&
        (err as Error).message.startsWith(`refusing object key 'repo/m/`),
      JSON.stringify(rel),
    );
  }
});

test('printable escapes control characters and caps the length', () => {
  assert.equal(printable('a\nb\u0000'), 'a\\x0ab\\x00');
  assert.equal(printable('k'.repeat(400)).length, 303);
});

test('plainName accepts one plain segment only', () => {
  assert.equal(plainName('model'), 'model');
  for (const bad of ['', '.', '..', 'a/b', 'a\\b', 'a\nb']) assert.equal(plainName(bad), undefined, bad);
});
