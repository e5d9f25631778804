/**
 * The S3 ObjectClient, on @aws-sdk/client-s3 (imported when the first s3:// repository is opened, so a
 * server with local repositories only never loads it). As Triton does: a custom endpoint
 * (`s3://host:port/bucket`) is addressed path-style; credentials are the key pair of the matching
 * credential entry when it has one, else its profile, else the SDK's standard chain (environment, shared
 * files, SSO, instance role); the region is the entry's, else the configured default, else us-east-1
 * (redirects to the bucket's own region are followed).
 */
import type { Readable } from 'node:stream';
import type { S3Client as S3ClientType } from '@aws-sdk/client-s3';
import type { ErrorCode } from '../../common/errors.js';
import { networkReason, shortMessage, statusReason, type Described } from './errors.js';
import type { S3Location } from './location.js';
import type { ObjectClient, ObjectEntry, ObjectPage } from './object-store.js';

/** One `s3` entry of Triton's credential file (or the environment's). Empty strings mean "not set". */
export interface S3Credential {
  readonly keyId?: string;
  readonly secretKey?: string;
  readonly sessionToken?: string;
  readonly region?: string;
  readonly profile?: string;
}

export interface S3Settings {
  readonly credential: S3Credential;
  /** AWS_REGION / AWS_DEFAULT_REGION, used when the credential names none. */
  readonly defaultRegion: string | undefined;
  readonly connections: number;
  readonly requestTimeoutMs: number;
}

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

export async function createS3Client(location: S3Location, settings: S3Settings): Promise<ObjectClient> {
  const sdk = await import('@aws-sdk/client-s3');
  const { credential: c } = settings;
  const staticKeys =
    c.keyId && c.secretKey
      ? {
          accessKeyId: c.keyId,
          secretAccessKey: c.secretKey,
          ...(c.sessionToken && { sessionToken: c.sessionToken }),
        }
      : undefined;
  const client: S3ClientType = new sdk.S3Client({
    region: c.region || settings.defaultRegion || 'us-east-1',
    ...(location.endpoint !== undefined && { endpoint: location.endpoint, forcePathStyle: true }),
    ...(staticKeys ? { credentials: staticKeys } : c.profile ? { profile: c.profile } : {}),
    followRegionRedirects: true,
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: settings.requestTimeoutMs,
      socketTimeout: settings.requestTimeoutMs,
      httpAgent: { keepAlive: true, maxSockets: settings.connections },
      httpsAgent: { keepAlive: true, maxSockets: settings.connections },
    },
  });
  const bucket = location.bucket;

  return {
    async listPage(prefix, shallow, token, maxKeys, signal): Promise<ObjectPage> {
      const out = await client.send(
        new sdk.ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix,
          ...(shallow && { Delimiter: '/' }),
          ...(token !== undefined && { ContinuationToken: token }),
          MaxKeys: maxKeys,
        }),
        { abortSignal: signal },
      );
      return {
        objects: (out.Contents ?? []).map((o): ObjectEntry => ({
          key: o.Key ?? '',
          size: Number(o.Size ?? 0),
          tag: o.ETag ?? '',
        })),
        prefixes: (out.CommonPrefixes ?? []).map((p) => p.Prefix ?? ''),
        next: out.IsTruncated === true ? out.NextContinuationToken : undefined,
      };
    },

    async read(entry, signal): Promise<Readable> {
      const out = await client.send(
        new sdk.GetObjectCommand({
          Bucket: bucket,
          Key: entry.key,
          ...(entry.tag !== '' && { IfMatch: entry.tag }),
        }),
        { abortSignal: signal },
      );
      return out.Body as Readable;
    },

    describe(err, op): Described {
      const net = networkReason(err);
      if (net !== undefined) return { reason: net, code: 'UNAVAILABLE' };
      const name = typeof field(err, 'name') === 'string' ? (field(err, 'name') as string) : 'Error';
      const meta = field(err, '$metadata');
      const status =
        typeof field(meta, 'httpStatusCode') === 'number'
          ? (field(meta, 'httpStatusCode') as number)
          : undefined;
      if (name === 'NoSuchKey' && op === 'read') {
        return { reason: 'the object was deleted since it was listed (NoSuchKey)', code: 'UNAVAILABLE' };
      }
      if (name === 'NoSuchBucket')
        return { reason: `bucket '${bucket}' does not exist (NoSuchBucket)`, code: 'NOT_FOUND' };
      if (name === 'CredentialsProviderError') {
        return { reason: `no AWS credentials found: ${shortMessage(err)}`, code: 'UNAVAILABLE' };
      }
      if (
        [
          'InvalidAccessKeyId',
          'SignatureDoesNotMatch',
          'AccessDenied',
          'ExpiredToken',
          'InvalidToken',
        ].includes(name)
      ) {
        return { reason: `access denied: check the credentials (${name})`, code: 'UNAVAILABLE' };
      }
      const byStatus = statusReason(status, name);
      if (byStatus) return byStatus;
      const code: ErrorCode = status !== undefined && status >= 500 ? 'UNAVAILABLE' : 'INTERNAL';
      return { reason: `${name}: ${shortMessage(err)}`, code };
    },

    close(): void {
      client.destroy();
    },
  };
}
