/**
 * Cloud credentials as Triton groups them: per scheme (`s3`, `gs`, `as`) a list of entries keyed by a
 * path prefix, the longest prefix that starts the repository path winning. Triton's credential file
 * (TRITON_CLOUD_CREDENTIAL_PATH, "Cloud Storage with Credential file") is parsed here from its text; the
 * CLI reads the file and the environment (the environment gives one '' entry per scheme when no file is
 * set). Pure functions: no I/O, no environment.
 *
 * File format: { "gs": { "<prefix>": "<path of a GCS JSON key>" },
 *                "s3": { "<prefix>": { "secret_key", "key_id", "region", "session_token", "profile" } },
 *                "as": { "<prefix>": { "account_str", "account_key", "auth_type", "client_id" } } }
 * plus, for `as` entries, a Nereid addition: "connection_string".
 */
import { invalidArg } from '../../common/errors.js';
import type { AzureCredential } from './azure.js';
import type { S3Credential } from './s3.js';

export interface CredentialEntry<T> {
  /** Matched against the start of the repository path as written on the command line. */
  readonly prefix: string;
  readonly credential: T;
}

export interface CloudCredentials {
  /** Where the entries came from, for messages ('environment' or the file's path). */
  readonly source: string;
  readonly s3: readonly CredentialEntry<S3Credential>[];
  /** The value is the path of a JSON key file ('' = the SDK's default chain). */
  readonly gs: readonly CredentialEntry<string>[];
  readonly as: readonly CredentialEntry<AzureCredential>[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: Json | undefined): v is { [k: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function str(obj: { [k: string]: Json }, key: string, where: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalidArg(`${where}: '${key}' must be a string`);
  return v;
}

function entries<T>(
  doc: { [k: string]: Json },
  scheme: 's3' | 'gs' | 'as',
  file: string,
  read: (value: Json, where: string) => T,
): CredentialEntry<T>[] {
  const section = doc[scheme];
  if (section === undefined) return [];
  if (!isObject(section)) throw invalidArg(`cloud credential file '${file}': '${scheme}' must be an object`);
  return Object.entries(section).map(([prefix, value]) => ({
    prefix,
    credential: read(value, `cloud credential file '${file}', ${scheme} entry '${prefix}'`),
  }));
}

/** Parses Triton's credential file. Errors name the file and the entry, never a value. */
export function parseCredentialFile(text: string, file: string): CloudCredentials {
  let doc: Json;
  try {
    doc = JSON.parse(text) as Json;
  } catch {
    throw invalidArg(`cloud credential file '${file}' is not valid JSON`);
  }
  if (!isObject(doc)) throw invalidArg(`cloud credential file '${file}' must hold a JSON object`);
  return {
    source: file,
    s3: entries(doc, 's3', file, (v, where): S3Credential => {
      if (!isObject(v)) throw invalidArg(`${where} must be an object`);
      return {
        keyId: str(v, 'key_id', where),
        secretKey: str(v, 'secret_key', where),
        sessionToken: str(v, 'session_token', where),
        region: str(v, 'region', where),
        profile: str(v, 'profile', where),
      };
    }),
    gs: entries(doc, 'gs', file, (v, where): string => {
      if (typeof v !== 'string') throw invalidArg(`${where} must be the path of a JSON key file`);
      return v;
    }),
    as: entries(doc, 'as', file, (v, where): AzureCredential => {
      if (!isObject(v)) throw invalidArg(`${where} must be an object`);
      return {
        account: str(v, 'account_str', where),
        key: str(v, 'account_key', where),
        authType: str(v, 'auth_type', where),
        connectionString: str(v, 'connection_string', where),
      };
    }),
  };
}

/** The entry with the longest prefix that starts `path`; undefined when none does. */
export function matchCredential<T>(list: readonly CredentialEntry<T>[], path: string): T | undefined {
  let best: CredentialEntry<T> | undefined;
  for (const e of list) {
    if (path.startsWith(e.prefix) && (best === undefined || e.prefix.length > best.prefix.length)) best = e;
  }
  return best?.credential;
}

/** Every secret value in a set of credentials (to cut out of error messages). */
export function secretsOf(c: CloudCredentials | undefined): string[] {
  if (!c) return [];
  const out: string[] = [];
  for (const e of c.s3) out.push(e.credential.secretKey ?? '', e.credential.sessionToken ?? '');
  for (const e of c.as) {
    out.push(e.credential.key ?? '');
    const cs = e.credential.connectionString ?? '';
    out.push(cs);
    for (const m of cs.matchAll(/(?:AccountKey|SharedAccessSignature)=([^;]+)/gi)) out.push(m[1]);
  }
  return out.filter((s) => s.length >= 4);
}
