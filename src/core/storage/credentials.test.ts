// Triton's cloud credential file (TRITON_CLOUD_CREDENTIAL_PATH): the documented example parses, the longest
// prefix wins, malformed files fail naming the file and entry but never a value, and secretsOf finds
// everything that must be cut out of messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { matchCredential, parseCredentialFile, secretsOf } from './credentials.js';

// The example of Triton's docs/user_guide/model_repository.md, "Cloud Storage with Credential file".
const TRITON_EXAMPLE = JSON.stringify({
  gs: { '': '/keys/default.json', 'gs://gcs-bucket-002': '/keys/second.json' },
  s3: {
    '': { secret_key: 'SECRET-ONE', key_id: 'KEY-ONE', region: 'eu-west-1', session_token: '', profile: '' },
    's3://s3-bucket-002': {
      secret_key: 'SECRET-TWO',
      key_id: 'KEY-TWO',
      region: 'us-west-2',
      session_token: 'TOKEN-TWO',
      profile: 'p2',
    },
  },
  as: {
    '': { account_str: 'acct', account_key: 'AZ-KEY-ONE' },
    'as://Account-002/Container': { account_str: '', account_key: '' },
    'as://Account-MI/Container': { account_str: 'acct', auth_type: 'managed_identity', client_id: '' },
  },
});

test('the documented example parses; the longest matching prefix wins', () => {
  const c = parseCredentialFile(TRITON_EXAMPLE, 'creds.json');
  assert.equal(c.source, 'creds.json');
  assert.equal(matchCredential(c.gs, 'gs://gcs-bucket-002/model_repository'), '/keys/second.json');
  assert.equal(matchCredential(c.gs, 'gs://any-other-gcs-bucket'), '/keys/default.json');
  assert.deepEqual(matchCredential(c.s3, 's3://s3-bucket-002/models'), {
    keyId: 'KEY-TWO',
    secretKey: 'SECRET-TWO',
    sessionToken: 'TOKEN-TWO',
    region: 'us-west-2',
    profile: 'p2',
  });
  assert.equal(matchCredential(c.s3, 's3://other/models')?.keyId, 'KEY-ONE');
  assert.equal(matchCredential(c.as, 'as://Account-MI/Container/m')?.authType, 'managed_identity');
  assert.equal(matchCredential(c.as, 'as://Account-002/Container/x')?.key, '');
});

test('no entry matches: undefined (the caller reports it)', () => {
  const c = parseCredentialFile('{"s3": {"s3://only": {}}}', 'f.json');
  assert.equal(matchCredential(c.s3, 's3://other/x'), undefined);
  assert.deepEqual(c.gs, []);
  assert.deepEqual(c.as, []);
});

test('malformed files name the file and the entry, never a value', () => {
  const fails = (text: string, re: RegExp): void =>
    assert.throws(
      () => parseCredentialFile(text, '/etc/c.json'),
      (err: unknown) =>
        err instanceof NereidError &&
        err.code === 'INVALID_ARG' &&
        re.test(err.message) &&
        !err.message.includes('TOPSECRET'),
    );
  fails('{not json TOPSECRET', /cloud credential file '\/etc\/c.json' is not valid JSON/);
  fails('["TOPSECRET"]', /must hold a JSON object/);
  fails('{"s3": "TOPSECRET"}', /'s3' must be an object/);
  fails('{"s3": {"": "TOPSECRET"}}', /s3 entry '' must be an object/);
  fails('{"s3": {"p": {"secret_key": 7}}}', /s3 entry 'p': 'secret_key' must be a string/);
  fails('{"gs": {"": {"TOPSECRET": 1}}}', /gs entry '' must be the path of a JSON key file/);
});

test('secretsOf lists secret keys, tokens and the keys inside connection strings', () => {
  const c = parseCredentialFile(TRITON_EXAMPLE, 'f');
  const s = secretsOf(c);
  for (const v of ['SECRET-ONE', 'SECRET-TWO', 'TOKEN-TWO', 'AZ-KEY-ONE']) assert.ok(s.includes(v), v);
  assert.ok(!s.includes('KEY-ONE'), 'key ids are not secrets');
  const cs = parseCredentialFile(
    '{"as": {"": {"connection_string": "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=QUJDREVGRw==;"}}}',
    'f',
  );
  assert.ok(secretsOf(cs).includes('QUJDREVGRw=='));
  assert.deepEqual(secretsOf(undefined), []);
});
