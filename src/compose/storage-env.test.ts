// The object-store settings read from the environment as Triton reads them: the credential file when
// TRITON_CLOUD_CREDENTIAL_PATH is set (and then only it), else the providers' variables; the S3 region; the
// GCS emulator endpoint; the TRITON_*_MOUNT_DIRECTORY cache folders.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../common/errors.js';
import { matchCredential } from '../core/assembly.js';
import { cloudStorageFromEnv } from './storage-env.js';

const noFile = (f: string): string => {
  throw Object.assign(new Error(`ENOENT ${f}`), { code: 'ENOENT' });
};

test('without a credential file: one entry per scheme from the providers’ variables', () => {
  const s = cloudStorageFromEnv(
    {
      GOOGLE_APPLICATION_CREDENTIALS: '/keys/gcs.json',
      AZURE_STORAGE_ACCOUNT: 'acct',
      AZURE_STORAGE_KEY: 'a2V5',
      AWS_ACCESS_KEY_ID: 'left to the AWS SDK chain',
    },
    noFile,
  );
  const c = s.credentials!;
  assert.equal(c.source, 'the environment');
  assert.equal(matchCredential(c.gs, 'gs://any/x'), '/keys/gcs.json');
  assert.deepEqual(matchCredential(c.as, 'as://acct/c'), {
    account: 'acct',
    key: 'a2V5',
    authType: undefined,
    connectionString: undefined,
  });
  // S3: an empty entry, so the SDK's own chain (environment, shared files, instance role) decides.
  assert.deepEqual(matchCredential(c.s3, 's3://b/p'), {});
  assert.equal(s.gcsEndpoint, undefined);
  assert.deepEqual(s.mountDirectories, {});
});

test('AWS_REGION wins over AWS_DEFAULT_REGION; empty values count as unset', () => {
  assert.equal(cloudStorageFromEnv({ AWS_DEFAULT_REGION: 'eu-west-1' }, noFile).s3DefaultRegion, 'eu-west-1');
  assert.equal(
    cloudStorageFromEnv({ AWS_REGION: 'us-west-2', AWS_DEFAULT_REGION: 'eu-west-1' }, noFile).s3DefaultRegion,
    'us-west-2',
  );
  assert.equal(
    cloudStorageFromEnv({ AWS_REGION: '', AWS_DEFAULT_REGION: 'eu-west-1' }, noFile).s3DefaultRegion,
    'eu-west-1',
  );
});

test('mount directories and the GCS emulator endpoint', () => {
  const s = cloudStorageFromEnv(
    {
      TRITON_AWS_MOUNT_DIRECTORY: '/mnt/aws',
      TRITON_GCS_MOUNT_DIRECTORY: '/mnt/gcs',
      TRITON_AZURE_MOUNT_DIRECTORY: '',
      STORAGE_EMULATOR_HOST: 'http://127.0.0.1:4443',
    },
    noFile,
  );
  assert.deepEqual(s.mountDirectories, { s3: '/mnt/aws', gs: '/mnt/gcs' });
  assert.equal(s.gcsEndpoint, 'http://127.0.0.1:4443');
});

test('TRITON_CLOUD_CREDENTIAL_PATH: the file is the only source; the providers’ variables are ignored', () => {
  const read = (f: string): string => {
    assert.equal(f, '/etc/nereid/creds.json');
    return JSON.stringify({ s3: { 's3://b': { key_id: 'K', secret_key: 'S' } } });
  };
  const s = cloudStorageFromEnv(
    {
      TRITON_CLOUD_CREDENTIAL_PATH: '/etc/nereid/creds.json',
      GOOGLE_APPLICATION_CREDENTIALS: '/keys/gcs.json',
      AZURE_STORAGE_KEY: 'a2V5',
    },
    read,
  );
  const c = s.credentials!;
  assert.equal(c.source, '/etc/nereid/creds.json');
  assert.equal(matchCredential(c.s3, 's3://b/models')?.keyId, 'K');
  assert.equal(matchCredential(c.s3, 's3://other'), undefined);
  assert.deepEqual(c.gs, []);
  assert.deepEqual(c.as, []);
});

test('an unreadable credential file is an error naming the file and the variable', () => {
  assert.throws(
    () => cloudStorageFromEnv({ TRITON_CLOUD_CREDENTIAL_PATH: '/nope.json' }, noFile),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INVALID_ARG' &&
      /cannot read the cloud credential file '\/nope.json' \(TRITON_CLOUD_CREDENTIAL_PATH\): ENOENT/.test(
        err.message,
      ),
  );
});
