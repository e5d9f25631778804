/**
 * RepositoryStorage turns `--model-repository` values into FileSystems: local folders as they are, object
 * stores through the provider module of their scheme with the credential entry that matches the path
 * (longest prefix, as Triton). Provider SDKs are imported only when a repository of theirs is first used.
 * It owns the local cache folders of downloaded models (one per mount directory:
 * TRITON_AWS_MOUNT_DIRECTORY, TRITON_GCS_MOUNT_DIRECTORY, TRITON_AZURE_MOUNT_DIRECTORY, else the temp
 * folder) and removes them on close().
 */
import os from 'node:os';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { CacheDirectory } from './cache.js';
import { matchCredential, secretsOf, type CloudCredentials } from './credentials.js';
import type { FileSystem } from './filesystem.js';
import { LocalFileSystem } from './local.js';
import { parseLocation, type ObjectLocation, type StorageKind } from './location.js';
import type { ProgressSink } from './progress.js';
import { ObjectFileSystem, type ObjectClient, type ObjectStoreLimits } from './object-store.js';

export interface StorageOptions {
  /** Credential entries; undefined = the SDKs' default chains and no Azure key. */
  readonly credentials?: CloudCredentials;
  /** AWS_REGION / AWS_DEFAULT_REGION: the region of S3 repositories whose credential names none. */
  readonly s3DefaultRegion?: string;
  /** A GCS endpoint such as a fake-gcs-server (STORAGE_EMULATOR_HOST). */
  readonly gcsEndpoint?: string;
  /** Where copies of each kind of store go (Triton's TRITON_*_MOUNT_DIRECTORY); default tempDirectory. */
  readonly mountDirectories?: Readonly<Partial<Record<Exclude<StorageKind, 'local'>, string>>>;
  /** Default os.tmpdir(). */
  readonly tempDirectory?: string;
  readonly limits?: Partial<ObjectStoreLimits>;
  /** Where download progress lines go (the server's info log); none when undefined. */
  readonly progress?: ProgressSink;
}

export const DEFAULT_STORAGE_LIMITS: ObjectStoreLimits = Object.freeze({
  downloadConcurrency: 8,
  maxObjectBytes: 64 * 1024 ** 3,
  maxListEntries: 100_000,
  requestTimeoutMs: 60_000,
});

export class RepositoryStorage {
  private readonly caches = new Map<string, CacheDirectory>();
  private readonly opened: FileSystem[] = [];
  readonly limits: ObjectStoreLimits;

  constructor(private readonly options: StorageOptions = {}) {
    this.limits = Object.freeze({ ...DEFAULT_STORAGE_LIMITS, ...options.limits });
  }

  /** The FileSystem of one repository; `value` is the path or URL as configured. */
  open(value: string): FileSystem {
    const loc = parseLocation(value);
    if (loc.kind === 'local') return new LocalFileSystem(path.resolve(value));
    const mount = this.options.mountDirectories?.[loc.kind] || this.options.tempDirectory || os.tmpdir();
    let cache = this.caches.get(mount);
    if (!cache) this.caches.set(mount, (cache = new CacheDirectory(path.resolve(mount))));
    const fs = new ObjectFileSystem(
      loc,
      () => this.connect(loc, value),
      this.limits,
      cache,
      secretsOf(this.options.credentials),
      this.options.progress,
    );
    this.opened.push(fs);
    return fs;
  }

  private noMatch(value: string): NereidError {
    return new NereidError(
      'UNAVAILABLE',
      `no credential in '${this.options.credentials?.source ?? ''}' matches '${value}'`,
    );
  }

  private async connect(loc: ObjectLocation, value: string): Promise<ObjectClient> {
    const creds = this.options.credentials;
    const timeout = this.limits.requestTimeoutMs;
    switch (loc.kind) {
      case 's3': {
        const credential = creds ? matchCredential(creds.s3, value) : {};
        if (credential === undefined) throw this.noMatch(value);
        const { createS3Client } = await import('./s3.js');
        return createS3Client(loc, {
          credential,
          defaultRegion: this.options.s3DefaultRegion,
          connections: this.limits.downloadConcurrency + 2,
          requestTimeoutMs: timeout,
        });
      }
      case 'gs': {
        const keyFile = creds ? matchCredential(creds.gs, value) : '';
        if (keyFile === undefined) throw this.noMatch(value);
        const { createGcsClient } = await import('./gcs.js');
        return createGcsClient(loc, {
          keyFile,
          endpoint: this.options.gcsEndpoint,
          requestTimeoutMs: timeout,
        });
      }
      case 'as': {
        const credential = creds ? matchCredential(creds.as, value) : {};
        if (credential === undefined) throw this.noMatch(value);
        const { createAzureClient } = await import('./azure.js');
        return createAzureClient(loc, { credential, requestTimeoutMs: timeout });
      }
    }
  }

  /** Closes every store's connections and removes every downloaded copy. */
  async close(): Promise<void> {
    await Promise.all(this.opened.map((fs) => fs.close()));
    await Promise.all([...this.caches.values()].map((c) => c.close()));
  }

  /** For a process 'exit' handler: removes the copies synchronously. */
  closeSync(): void {
    for (const c of this.caches.values()) c.closeSync();
  }
}
