/**
 * The Azure Blob Storage ObjectClient, on @azure/storage-blob (imported when the first as:// repository is
 * opened). As Triton does: `as://account/container/path` is served by https://<account>.blob.core.windows.net
 * with the account's shared key (AZURE_STORAGE_ACCOUNT / AZURE_STORAGE_KEY, or the matching entry of the
 * credential file, whose account name wins over the URL's), anonymously without a key. A connection string
 * (AZURE_STORAGE_CONNECTION_STRING, a Nereid addition) gives the account, key and blob endpoint at once —
 * the way to reach Azurite or a sovereign cloud. Objects are read If-Match the listed ETag.
 */
import { Readable } from 'node:stream';
import type { ErrorCode } from '../../common/errors.js';
import { unsupported } from '../../common/errors.js';
import { networkReason, shortMessage, statusReason, type Described } from './errors.js';
import type { AzureLocation } from './location.js';
import type { ObjectClient, ObjectEntry, ObjectPage } from './object-store.js';

/** One `as` entry of Triton's credential file (or the environment's). */
export interface AzureCredential {
  readonly account?: string;
  readonly key?: string;
  /** Triton's `auth_type`: '' / 'key' (shared key). Managed identity is not available in Nereid. */
  readonly authType?: string;
  readonly connectionString?: string;
}

export interface AzureSettings {
  readonly credential: AzureCredential;
  readonly requestTimeoutMs: number;
}

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

export async function createAzureClient(
  location: AzureLocation,
  settings: AzureSettings,
): Promise<ObjectClient> {
  const c = settings.credential;
  if (c.authType && c.authType !== 'key') {
    throw unsupported(
      `Azure auth_type '${c.authType}' is not supported by Nereid (shared key or a connection string only) for '${location.href}'`,
    );
  }
  const sdk = await import('@azure/storage-blob');
  const options = {
    retryOptions: { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2000 },
    keepAliveOptions: { enable: true },
  };
  let service;
  if (c.connectionString) {
    service = sdk.BlobServiceClient.fromConnectionString(c.connectionString, options);
  } else {
    const account = c.account || location.account;
    const credential = c.key
      ? new sdk.StorageSharedKeyCredential(account, c.key)
      : new sdk.AnonymousCredential();
    service = new sdk.BlobServiceClient(`https://${account}.blob.core.windows.net`, credential, options);
  }
  const container = service.getContainerClient(location.container);

  return {
    async listPage(prefix, shallow, token, maxKeys, signal): Promise<ObjectPage> {
      const paging = { maxPageSize: maxKeys, ...(token !== undefined && { continuationToken: token }) };
      let items: { name: string; properties: { contentLength?: number; etag?: string } }[];
      let prefixes: { name: string }[] = [];
      let next: string | undefined;
      if (shallow) {
        const it = container.listBlobsByHierarchy('/', { prefix, abortSignal: signal }).byPage(paging);
        const got = await it.next();
        if (got.done === true) return { objects: [], prefixes: [], next: undefined };
        const page = got.value;
        items = page.segment.blobItems;
        prefixes = page.segment.blobPrefixes ?? [];
        next = page.continuationToken;
      } else {
        const it = container.listBlobsFlat({ prefix, abortSignal: signal }).byPage(paging);
        const got = await it.next();
        if (got.done === true) return { objects: [], prefixes: [], next: undefined };
        const page = got.value;
        items = page.segment.blobItems;
        next = page.continuationToken;
      }
      return {
        objects: items.map((b): ObjectEntry => ({
          key: b.name,
          size: Number(b.properties.contentLength ?? 0),
          tag: b.properties.etag ?? '',
        })),
        prefixes: prefixes.map((p) => p.name),
        next: next || undefined,
      };
    },

    async read(entry, signal): Promise<Readable> {
      const response = await container.getBlobClient(entry.key).download(0, undefined, {
        abortSignal: signal,
        maxRetryRequests: 2,
        ...(entry.tag !== '' && { conditions: { ifMatch: entry.tag } }),
      });
      const body = response.readableStreamBody;
      if (body === undefined) throw new Error(`no body for blob '${entry.key}'`);
      return body instanceof Readable ? body : Readable.from(body as AsyncIterable<Buffer>);
    },

    describe(err, op): Described {
      const net = networkReason(err);
      if (net !== undefined) return { reason: net, code: 'UNAVAILABLE' };
      const status =
        typeof field(err, 'statusCode') === 'number' ? (field(err, 'statusCode') as number) : undefined;
      const code = typeof field(err, 'code') === 'string' ? (field(err, 'code') as string) : undefined;
      const detail = code ?? shortMessage(err);
      if (code === 'ContainerNotFound') {
        return {
          reason: `container '${location.container}' does not exist (ContainerNotFound)`,
          code: 'NOT_FOUND',
        };
      }
      if (code === 'BlobNotFound' && op === 'read') {
        return { reason: 'the object was deleted since it was listed (BlobNotFound)', code: 'UNAVAILABLE' };
      }
      if (code === 'ConditionNotMet') {
        return { reason: 'the object changed since it was listed (ConditionNotMet)', code: 'UNAVAILABLE' };
      }
      const byStatus = statusReason(status, detail);
      if (byStatus) return byStatus;
      const ec: ErrorCode = status !== undefined && status >= 500 ? 'UNAVAILABLE' : 'INTERNAL';
      return { reason: code ? `${code}: ${shortMessage(err)}` : shortMessage(err), code: ec };
    },

    close(): void {
      // Connections are pooled by the SDK's shared agent; nothing to release per client.
    },
  };
}
