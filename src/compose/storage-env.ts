/**
 * The object-store settings Triton takes from the environment, read here (only cli/ reads the
 * environment) into CloudStorageSettings:
 *   - TRITON_CLOUD_CREDENTIAL_PATH: Triton's credential file (entries per path prefix for s3, gs, as);
 *     when it is set, it is the only source of explicit credentials, as in Triton;
 *   - otherwise one entry per scheme from the providers' variables: GOOGLE_APPLICATION_CREDENTIALS;
 *     AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, AZURE_STORAGE_AUTH_TYPE (and, a Nereid addition,
 *     AZURE_STORAGE_CONNECTION_STRING); S3 keys, session token and AWS_PROFILE are left to the AWS SDK's
 *     own chain, which reads the same variables (and shared files, SSO, instance roles);
 *   - AWS_REGION, else AWS_DEFAULT_REGION: the S3 region when the credential names none;
 *   - STORAGE_EMULATOR_HOST: a GCS endpoint (fake-gcs-server, an emulator), as Google's SDKs take it;
 *   - TRITON_AWS_MOUNT_DIRECTORY, TRITON_GCS_MOUNT_DIRECTORY, TRITON_AZURE_MOUNT_DIRECTORY: where model
 *     copies are made.
 */
import { readFileSync } from 'node:fs';
import { invalidArg } from '../common/errors.js';
import { type CloudCredentials, parseCredentialFile } from '../core/assembly.js';
import type { CloudStorageSettings } from './options.js';

type Env = Readonly<Record<string, string | undefined>>;

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

function credentialsFrom(env: Env, readFile: (file: string) => string): CloudCredentials {
  const file = nonEmpty(env.TRITON_CLOUD_CREDENTIAL_PATH);
  if (file !== undefined) {
    let text: string;
    try {
      text = readFile(file);
    } catch (err) {
      throw invalidArg(
        `cannot read the cloud credential file '${file}' (TRITON_CLOUD_CREDENTIAL_PATH): ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
    return parseCredentialFile(text, file);
  }
  return {
    source: 'the environment',
    s3: [{ prefix: '', credential: {} }],
    gs: [{ prefix: '', credential: env.GOOGLE_APPLICATION_CREDENTIALS ?? '' }],
    as: [
      {
        prefix: '',
        credential: {
          account: nonEmpty(env.AZURE_STORAGE_ACCOUNT),
          key: nonEmpty(env.AZURE_STORAGE_KEY),
          authType: nonEmpty(env.AZURE_STORAGE_AUTH_TYPE),
          connectionString: nonEmpty(env.AZURE_STORAGE_CONNECTION_STRING),
        },
      },
    ],
  };
}

/** Reads the object-store settings from `env` (process.env in the `nereid` command). */
export function cloudStorageFromEnv(
  env: Env,
  readFile: (file: string) => string = (f) => readFileSync(f, 'utf8'),
): CloudStorageSettings {
  const gcsEndpoint = nonEmpty(env.STORAGE_EMULATOR_HOST);
  return Object.freeze({
    credentials: credentialsFrom(env, readFile),
    s3DefaultRegion: nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION),
    ...(gcsEndpoint !== undefined && { gcsEndpoint }),
    mountDirectories: Object.freeze({
      ...(nonEmpty(env.TRITON_AWS_MOUNT_DIRECTORY) && { s3: env.TRITON_AWS_MOUNT_DIRECTORY }),
      ...(nonEmpty(env.TRITON_GCS_MOUNT_DIRECTORY) && { gs: env.TRITON_GCS_MOUNT_DIRECTORY }),
      ...(nonEmpty(env.TRITON_AZURE_MOUNT_DIRECTORY) && { as: env.TRITON_AZURE_MOUNT_DIRECTORY }),
    }),
  });
}

/** Whether a --model-repository value names a bucket (s3://, gs://, as://) rather than a local folder. */
export { isObjectStoreUrl } from '../core/assembly.js';
