/**
 * The Google Cloud Storage ObjectClient, on @google-cloud/storage (imported when the first gs:// repository
 * is opened). Credentials: the JSON key file of the matching credential entry (Triton's credential file),
 * else the SDK's application-default chain (GOOGLE_APPLICATION_CREDENTIALS, the metadata server). An
 * `endpoint` (a fake-gcs-server, an emulator: STORAGE_EMULATOR_HOST) is used without authentication, as
 * the SDK does for custom endpoints. Objects are read at the generation the listing saw.
 */
import type { Readable } from 'node:stream';
import type { ErrorCode } from '../../common/errors.js';
import { networkReason, shortMessage, statusReason, type Described } from './errors.js';
import type { GcsLocation } from './location.js';
import type { ObjectClient, ObjectEntry, ObjectPage } from './object-store.js';

export interface GcsSettings {
  /** Path of a service-account or authorized-user JSON file; '' or undefined: the default chain. */
  readonly keyFile: string | undefined;
  /** e.g. `http://127.0.0.1:4443` (STORAGE_EMULATOR_HOST). */
  readonly endpoint: string | undefined;
  readonly requestTimeoutMs: number;
}

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

interface ListResponse {
  prefixes?: string[];
  nextPageToken?: string;
}

export async function createGcsClient(location: GcsLocation, settings: GcsSettings): Promise<ObjectClient> {
  const { Storage } = await import('@google-cloud/storage');
  const endpoint = settings.endpoint?.replace(/\/+$/, '');
  const storage = new Storage({
    ...(settings.keyFile ? { keyFilename: settings.keyFile } : {}),
    ...(endpoint !== undefined && {
      apiEndpoint: /^https?:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`,
      projectId: 'nereid',
      // A key file given for an emulator is still used (and a broken one reported), not silently skipped.
      useAuthWithCustomEndpoint: Boolean(settings.keyFile),
    }),
    timeout: settings.requestTimeoutMs,
    retryOptions: {
      autoRetry: true,
      maxRetries: 2,
      maxRetryDelay: 2,
      totalTimeout: settings.requestTimeoutMs / 1000,
    },
  });
  const bucket = storage.bucket(location.bucket);

  return {
    async listPage(prefix, shallow, token, maxKeys): Promise<ObjectPage> {
      const [files, , raw] = await bucket.getFiles({
        prefix,
        ...(shallow && { delimiter: '/' }),
        autoPaginate: false,
        maxResults: maxKeys,
        ...(token !== undefined && { pageToken: token }),
      });
      const response = (raw ?? {}) as ListResponse;
      return {
        objects: files.map((f): ObjectEntry => ({
          key: f.name,
          size: Number(f.metadata.size ?? 0),
          tag: String(f.metadata.generation ?? ''),
        })),
        prefixes: response.prefixes ?? [],
        next: response.nextPageToken || undefined,
      };
    },

    read(entry, signal): Promise<Readable> {
      const file = bucket.file(entry.key, entry.tag !== '' ? { generation: entry.tag } : {});
      const stream = file.createReadStream({ decompress: false });
      signal.addEventListener('abort', () => stream.destroy(new Error('download cancelled')), { once: true });
      return Promise.resolve(stream);
    },

    describe(err, op): Described {
      const net = networkReason(err);
      if (net !== undefined) return { reason: net, code: 'UNAVAILABLE' };
      const status = typeof field(err, 'code') === 'number' ? (field(err, 'code') as number) : undefined;
      const message = shortMessage(err);
      if (status === 404 && op === 'list') {
        return { reason: `bucket '${location.bucket}' does not exist (${message})`, code: 'NOT_FOUND' };
      }
      if (status === 404) {
        // Objects are read at the listed generation: a 404 means it was replaced or deleted since.
        return { reason: `the object changed since it was listed (${message})`, code: 'UNAVAILABLE' };
      }
      if (/default credentials/i.test(message)) {
        return { reason: `no Google Cloud credentials found: ${message}`, code: 'UNAVAILABLE' };
      }
      const byStatus = statusReason(status, message);
      if (byStatus) return byStatus;
      const code: ErrorCode = status !== undefined && status >= 500 ? 'UNAVAILABLE' : 'INTERNAL';
      return { reason: message, code };
    },

    close(): void {
      // The SDK keeps no sockets open between requests that need closing.
    },
  };
}
