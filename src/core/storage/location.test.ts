// Every --model-repository URL form Triton documents (docs/user_guide/model_repository.md, "Cloud Storage"),
// parsed into a bucket, prefix and endpoint, and the malformed ones refused with a message naming the value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { childHref, isObjectStoreUrl, parseLocation } from './location.js';

const refused = (re: RegExp) => (err: unknown) =>
  err instanceof NereidError && err.code === 'INVALID_ARG' && re.test(err.message);

test('s3://bucket/path: AWS, no endpoint; extra slashes are cleaned as Triton cleans them', () => {
  assert.deepEqual(parseLocation('s3://bucket/path/to/repo'), {
    kind: 's3',
    bucket: 'bucket',
    prefix: 'path/to/repo',
    endpoint: undefined,
    href: 's3://bucket/path/to/repo',
  });
  assert.deepEqual(parseLocation('s3://bucket//a///b/'), {
    kind: 's3',
    bucket: 'bucket',
    prefix: 'a/b',
    endpoint: undefined,
    href: 's3://bucket/a/b',
  });
  assert.equal((parseLocation('s3://bucket') as { prefix: string }).prefix, '');
});

test('s3://host:port/bucket/path: an S3-compatible endpoint over http unless https:// is written', () => {
  assert.deepEqual(parseLocation('s3://127.0.0.1:9000/models/repo'), {
    kind: 's3',
    bucket: 'models',
    prefix: 'repo',
    endpoint: 'http://127.0.0.1:9000',
    href: 's3://127.0.0.1:9000/models/repo',
  });
  const http = parseLocation('s3://http://minio.local:9000/models');
  assert.equal(http.kind === 's3' && http.endpoint, 'http://minio.local:9000');
  // http is the default, so both spellings name the same repository.
  assert.equal(http.href, 's3://minio.local:9000/models');
  const https = parseLocation('s3://https://s3.example.com:443/b/p');
  assert.equal(https.kind === 's3' && https.endpoint, 'https://s3.example.com:443');
  assert.equal(https.href, 's3://https://s3.example.com:443/b/p');
});

test('malformed s3 URLs are refused naming the value', () => {
  assert.throws(() => parseLocation('s3://'), refused(/'s3:\/\/': no bucket name found/));
  assert.throws(() => parseLocation('s3://host:9000'), refused(/no bucket name found/));
  assert.throws(() => parseLocation('s3://host:99999/b'), refused(/bad port/));
  assert.throws(() => parseLocation('s3://https://bucket/p'), refused(/must be followed by host:port/));
  assert.throws(() => parseLocation('s3://host:/b'), refused(/expected s3:\/\/host:port\/bucket\/path/));
  assert.throws(() => parseLocation('s3://b/../other'), refused(/'\.\.' path segment/));
  assert.throws(() => parseLocation('s3://b/a\\b'), refused(/NUL or backslash/));
});

test('gs://bucket/path', () => {
  assert.deepEqual(parseLocation('gs://bucket/path/to/repo/'), {
    kind: 'gs',
    bucket: 'bucket',
    prefix: 'path/to/repo',
    href: 'gs://bucket/path/to/repo',
  });
  assert.throws(() => parseLocation('gs://'), refused(/no bucket name found/));
  assert.throws(() => parseLocation('gs://b/./x'), refused(/'\.' path segment/));
});

test('as://account/container/path; the blob host form names the same account; a query is ignored', () => {
  assert.deepEqual(parseLocation('as://acct/models/repo'), {
    kind: 'as',
    account: 'acct',
    container: 'models',
    prefix: 'repo',
    href: 'as://acct/models/repo',
  });
  const host = parseLocation('as://acct.blob.core.windows.net/models/repo?sv=x');
  assert.equal(host.href, 'as://acct/models/repo');
  assert.throws(() => parseLocation('as://acct'), refused(/expected as:\/\/account\/container\/path/));
  assert.throws(() => parseLocation('as://.blob.core.windows.net/c'), refused(/no account name/));
});

test('anything else is a local path, kept as written', () => {
  assert.deepEqual(parseLocation('/models'), { kind: 'local', href: '/models' });
  assert.deepEqual(parseLocation('relative/s3://x'), { kind: 'local', href: 'relative/s3://x' });
  assert.equal(isObjectStoreUrl('/models'), false);
  for (const u of ['s3://b', 'gs://b', 'as://a/c']) assert.equal(isObjectStoreUrl(u), true);
  assert.equal(isObjectStoreUrl('S3://b'), false);
});

test('childHref keeps the URL form', () => {
  assert.equal(childHref('s3://h:1/b/p', 'm'), 's3://h:1/b/p/m');
  assert.equal(childHref('gs://b/', 'm'), 'gs://b/m');
});
