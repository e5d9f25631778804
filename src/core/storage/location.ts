/**
 * Where a model repository lives: `--model-repository` values as Triton takes them. A local path, or
 *   - `s3://bucket/path`, `s3://host:port/bucket/path`, `s3://http://host:port/...`, `s3://https://host:port/...`
 *     (a host and a port before the bucket name an S3-compatible endpoint, `http` unless `https://` is given);
 *   - `gs://bucket/path`;
 *   - `as://account/container/path` (the account may be given as `account.blob.core.windows.net`; a query
 *     string is ignored, as Triton ignores it).
 * Pure parsing, no I/O. Object paths are normalised the way Triton cleans them (extra slashes dropped), and
 * the canonical form (`href`) is what the repository code uses to name the repository and its model folders.
 */
import { invalidArg } from '../../common/errors.js';

export type StorageKind = 'local' | 's3' | 'gs' | 'as';

interface Common {
  /** Canonical text: the repository's name in logs, errors and the credential match. */
  readonly href: string;
}

export interface LocalLocation extends Common {
  readonly kind: 'local';
}

export interface S3Location extends Common {
  readonly kind: 's3';
  readonly bucket: string;
  /** Object key prefix without leading or trailing slash ('' = the whole bucket). */
  readonly prefix: string;
  /** `http://host:port` or `https://host:port` for an S3-compatible server; undefined for AWS. */
  readonly endpoint: string | undefined;
}

export interface GcsLocation extends Common {
  readonly kind: 'gs';
  readonly bucket: string;
  readonly prefix: string;
}

export interface AzureLocation extends Common {
  readonly kind: 'as';
  readonly account: string;
  readonly container: string;
  readonly prefix: string;
}

export type ObjectLocation = S3Location | GcsLocation | AzureLocation;
export type StorageLocation = LocalLocation | ObjectLocation;

const SCHEMES = ['s3://', 'gs://', 'as://'] as const;

/** True for `s3://`, `gs://` and `as://` values (everything else is a local path). */
export function isObjectStoreUrl(value: string): boolean {
  return SCHEMES.some((s) => value.startsWith(s));
}

/** Splits an object path into segments, dropping empty ones (Triton's CleanPath); refuses `.`, `..`, NUL. */
function segmentsOf(rest: string, whole: string): string[] {
  const segs = rest.split('/').filter((s) => s !== '');
  for (const s of segs) {
    if (s === '.' || s === '..') throw invalidArg(`invalid model repository '${whole}': '${s}' path segment`);
    if (s.includes('\0') || s.includes('\\')) {
      throw invalidArg(`invalid model repository '${whole}': NUL or backslash in path`);
    }
  }
  return segs;
}

function parseS3(value: string): S3Location {
  let rest = value.slice('s3://'.length);
  let scheme: 'http' | 'https' | undefined;
  if (rest.startsWith('https://')) {
    scheme = 'https';
    rest = rest.slice('https://'.length);
  } else if (rest.startsWith('http://')) {
    scheme = 'http';
    rest = rest.slice('http://'.length);
  }
  const segs = segmentsOf(rest, value);
  if (segs.length === 0) throw invalidArg(`invalid model repository '${value}': no bucket name found`);
  // Triton: `host:port` (a port is required) as the first part names an endpoint; a bucket name never
  // contains a colon, so the two forms cannot be confused.
  const hostPort = /^([0-9A-Za-z.-]+):([0-9]{1,5})$/.exec(segs[0]);
  let endpoint: string | undefined;
  if (hostPort) {
    const port = Number(hostPort[2]);
    if (port < 1 || port > 65535) throw invalidArg(`invalid model repository '${value}': bad port`);
    endpoint = `${scheme ?? 'http'}://${hostPort[1]}:${port}`;
    segs.shift();
    if (segs.length === 0) throw invalidArg(`invalid model repository '${value}': no bucket name found`);
  } else if (scheme !== undefined) {
    throw invalidArg(
      `invalid model repository '${value}': '${scheme}://' must be followed by host:port and a bucket`,
    );
  } else if (segs[0].includes(':')) {
    throw invalidArg(`invalid model repository '${value}': expected s3://host:port/bucket/path`);
  }
  const [bucket, ...path] = segs;
  const prefix = path.join('/');
  // Canonical: `http://` is the default and dropped; `https://` stays.
  const host = hostPort ? `${scheme === 'https' ? 'https://' : ''}${hostPort[0]}/` : '';
  return { kind: 's3', bucket, prefix, endpoint, href: `s3://${host}${[bucket, ...path].join('/')}` };
}

function parseGcs(value: string): GcsLocation {
  const segs = segmentsOf(value.slice('gs://'.length), value);
  if (segs.length === 0) throw invalidArg(`invalid model repository '${value}': no bucket name found`);
  const [bucket, ...path] = segs;
  return { kind: 'gs', bucket, prefix: path.join('/'), href: `gs://${segs.join('/')}` };
}

function parseAzure(value: string): AzureLocation {
  const noQuery = value.slice('as://'.length).split('?')[0];
  const segs = segmentsOf(noQuery, value);
  if (segs.length < 2) {
    throw invalidArg(`invalid model repository '${value}': expected as://account/container/path`);
  }
  const [host, container, ...path] = segs;
  const account = host.endsWith('.blob.core.windows.net')
    ? host.slice(0, -'.blob.core.windows.net'.length)
    : host;
  if (account === '') throw invalidArg(`invalid model repository '${value}': no account name found`);
  return {
    kind: 'as',
    account,
    container,
    prefix: path.join('/'),
    href: `as://${[account, container, ...path].join('/')}`,
  };
}

/** Parses a `--model-repository` value; local paths are returned as given (the caller resolves them). */
export function parseLocation(value: string): StorageLocation {
  if (value.startsWith('s3://')) return parseS3(value);
  if (value.startsWith('gs://')) return parseGcs(value);
  if (value.startsWith('as://')) return parseAzure(value);
  return { kind: 'local', href: value };
}

/** The location of a child folder or file: `<parent>/<name>` for URLs (path.join would eat `//`). */
export function childHref(parent: string, name: string): string {
  return parent.endsWith('/') ? parent + name : `${parent}/${name}`;
}
