/**
 * Real storage servers for the object-store tests, started and stopped by the tests themselves on loopback
 * ports: moto_server (S3), MinIO (S3, when this machine could build it), fake-gcs-server (GCS) and Azurite
 * (Azure Blob), as scripts/setup-storage-servers.sh installs them (paths in .cache/storage-servers.env).
 * "local" is a plain folder, so the same conformance suite runs against local disk. Objects are written
 * with the providers' own SDKs, never through Nereid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CloudStorageSettings } from '../../../src/compose/options.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

export type StoreKind = 'local' | 's3' | 'minio' | 'gs' | 'as';

export interface TestStore {
  readonly kind: StoreKind;
  /** The --model-repository value of folder `prefix` (no leading or trailing slash). */
  url(prefix: string): string;
  /** What Nereid needs to reach the store (ServerOptions.cloudStorage). */
  readonly cloudStorage: CloudStorageSettings;
  put(key: string, body: string | Buffer): Promise<void>;
  remove(key: string): Promise<void>;
  /** Uploads every file under a local folder to `<prefix>/...`. */
  putTree(localDir: string, prefix: string): Promise<void>;
  /** Kills the server process (SIGKILL): a store that stops mid-request. */
  kill(): Promise<void>;
  /** Starts it again on the same port (content is kept when `persistent`). */
  restart(): Promise<void>;
  readonly persistent: boolean;
  stop(): Promise<void>;
  /** The server's loopback port (0 for local disk). */
  readonly port: number;
  /** The URL form and settings that reach the store through another port (a proxy in front of it). */
  through(port: number): { url(prefix: string): string; cloudStorage: CloudStorageSettings };
}

/** Azurite's well-known development account (public, documented by Microsoft). */
const AZURITE_ACCOUNT = 'devstoreaccount1';
const AZURITE_KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
export const BUCKET = 'nereid-models';
const S3_KEY_ID = 'nereid-test-key';
const S3_SECRET = 'nereid-test-secret-value';

function tools(): Map<string, string> | string {
  const file = path.join(ROOT, '.cache/storage-servers.env');
  if (!existsSync(file))
    return 'no .cache/storage-servers.env: run scripts/setup-storage-servers.sh (npm test does)';
  const env = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m && m[2] !== '') env.set(m[1], m[2]);
  }
  return env;
}

const TOOL_VAR: Record<Exclude<StoreKind, 'local'>, string> = {
  s3: 'NEREID_MOTO_SERVER',
  minio: 'NEREID_MINIO',
  gs: 'NEREID_FAKE_GCS_SERVER',
  as: 'NEREID_AZURITE_BLOB',
};

/** Why tests of `kind` must skip here, or undefined when its server can be started. */
export function unavailable(kind: StoreKind): string | undefined {
  if (kind === 'local') return undefined;
  const t = tools();
  if (typeof t === 'string') return t;
  if (t.get(TOOL_VAR[kind])) return undefined;
  return `${TOOL_VAR[kind]} is not set: ${t.get('NEREID_STORAGE_SKIP') ?? 'setup-storage-servers.sh did not provide it'}`;
}

function toolPath(kind: Exclude<StoreKind, 'local'>): string {
  const t = tools();
  const p = typeof t === 'string' ? undefined : t.get(TOOL_VAR[kind]);
  if (!p) throw new Error(unavailable(kind));
  return p;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Waits until `url` answers HTTP at all (any status), bounded. */
async function waitHttp(
  url: string,
  child: ChildProcess,
  logs: string[],
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`server exited (${child.exitCode}): ${logs.join('').slice(-2000)}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(2000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(
    `server at ${url} did not answer within ${timeoutMs / 1000} s: ${logs.join('').slice(-2000)}`,
  );
}

class Process {
  child: ChildProcess | undefined;
  readonly logs: string[] = [];
  constructor(
    private readonly cmd: string,
    private readonly args: readonly string[],
    private readonly env: Record<string, string>,
    private readonly readyUrl: string,
  ) {}

  async start(): Promise<void> {
    const child = spawn(this.cmd, this.args, {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const keep = (b: Buffer): void => {
      this.logs.push(b.toString());
      if (this.logs.length > 200) this.logs.splice(0, 100);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await waitHttp(this.readyUrl, child, this.logs);
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

abstract class BaseStore implements TestStore {
  abstract readonly kind: StoreKind;
  abstract readonly cloudStorage: CloudStorageSettings;
  abstract readonly persistent: boolean;
  abstract url(prefix: string): string;
  abstract put(key: string, body: string | Buffer): Promise<void>;
  abstract remove(key: string): Promise<void>;
  abstract kill(): Promise<void>;
  abstract restart(): Promise<void>;
  abstract stop(): Promise<void>;
  abstract readonly port: number;
  abstract through(port: number): { url(prefix: string): string; cloudStorage: CloudStorageSettings };

  async putTree(localDir: string, prefix: string): Promise<void> {
    const files = filesUnder(localDir);
    // A few at a time: the servers are small and the machine is shared.
    for (let i = 0; i < files.length; i += 4) {
      await Promise.all(
        files
          .slice(i, i + 4)
          .map((f) =>
            this.put(`${prefix}/${path.relative(localDir, f).split(path.sep).join('/')}`, readFileSync(f)),
          ),
      );
    }
  }
}

class LocalStore extends BaseStore {
  readonly kind = 'local';
  readonly cloudStorage = {};
  readonly persistent = true;
  readonly port = 0;
  through(): { url(prefix: string): string; cloudStorage: CloudStorageSettings } {
    return { url: (p) => this.url(p), cloudStorage: {} };
  }
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-local-store-'));
  url(prefix: string): string {
    return path.join(this.dir, prefix);
  }
  async put(key: string, body: string | Buffer): Promise<void> {
    const p = path.join(this.dir, ...key.split('/'));
    await mkdir(path.dirname(p), { recursive: true });
    await writeFile(p, body);
  }
  /** Removes the file and the folders it leaves empty: a folder, like a key prefix, ends with its last file. */
  async remove(key: string): Promise<void> {
    let p = path.join(this.dir, ...key.split('/'));
    await rm(p, { force: true });
    for (p = path.dirname(p); p !== this.dir && p.startsWith(this.dir); p = path.dirname(p)) {
      if (readdirSync(p).length > 0) break;
      await rm(p, { recursive: true, force: true });
    }
  }
  kill(): Promise<void> {
    return Promise.resolve();
  }
  restart(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    rmSync(this.dir, { recursive: true, force: true });
    return Promise.resolve();
  }
}

/** moto_server or MinIO, driven with @aws-sdk/client-s3. */
class S3Store extends BaseStore {
  readonly persistent: boolean;
  readonly cloudStorage: CloudStorageSettings;
  private client: import('@aws-sdk/client-s3').S3Client | undefined;
  private sdk: typeof import('@aws-sdk/client-s3') | undefined;

  constructor(
    readonly kind: 's3' | 'minio',
    private readonly proc: Process,
    readonly port: number,
    private readonly dataDir: string | undefined,
  ) {
    super();
    this.persistent = dataDir !== undefined;
    this.cloudStorage = {
      credentials: {
        source: 'test',
        s3: [{ prefix: '', credential: { keyId: S3_KEY_ID, secretKey: S3_SECRET } }],
        gs: [],
        as: [],
      },
    };
  }

  async init(): Promise<void> {
    this.sdk = await import('@aws-sdk/client-s3');
    this.client = new this.sdk.S3Client({
      endpoint: `http://127.0.0.1:${this.port}`,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: S3_KEY_ID, secretAccessKey: S3_SECRET },
    });
    await this.client.send(new this.sdk.CreateBucketCommand({ Bucket: BUCKET })).catch((err: unknown) => {
      if ((err as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw err;
    });
  }

  url(prefix: string): string {
    return `s3://127.0.0.1:${this.port}/${BUCKET}/${prefix}`;
  }
  through(port: number): { url(prefix: string): string; cloudStorage: CloudStorageSettings } {
    return { url: (p) => `s3://127.0.0.1:${port}/${BUCKET}/${p}`, cloudStorage: this.cloudStorage };
  }
  async put(key: string, body: string | Buffer): Promise<void> {
    await this.client!.send(new this.sdk!.PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  }
  async remove(key: string): Promise<void> {
    await this.client!.send(new this.sdk!.DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
  }
  kill(): Promise<void> {
    return this.proc.kill();
  }
  async restart(): Promise<void> {
    await this.proc.start();
    await this.init();
  }
  async stop(): Promise<void> {
    this.client?.destroy();
    await this.proc.kill();
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}

class GcsStore extends BaseStore {
  readonly kind = 'gs';
  readonly persistent = true;
  readonly cloudStorage: CloudStorageSettings;
  private bucket: import('@google-cloud/storage').Bucket | undefined;

  constructor(
    private readonly proc: Process,
    readonly port: number,
    private readonly dataDir: string,
  ) {
    super();
    this.cloudStorage = {
      gcsEndpoint: `http://127.0.0.1:${port}`,
      credentials: { source: 'test', s3: [], gs: [{ prefix: '', credential: '' }], as: [] },
    };
  }

  async init(): Promise<void> {
    const { Storage } = await import('@google-cloud/storage');
    const storage = new Storage({ apiEndpoint: `http://127.0.0.1:${this.port}`, projectId: 'nereid-test' });
    this.bucket = storage.bucket(BUCKET);
    const [exists] = await this.bucket.exists();
    if (!exists) await storage.createBucket(BUCKET);
  }

  url(prefix: string): string {
    return `gs://${BUCKET}/${prefix}`;
  }
  through(port: number): { url(prefix: string): string; cloudStorage: CloudStorageSettings } {
    return {
      url: (p) => this.url(p),
      cloudStorage: { ...this.cloudStorage, gcsEndpoint: `http://127.0.0.1:${port}` },
    };
  }
  async put(key: string, body: string | Buffer): Promise<void> {
    await this.bucket!.file(key).save(typeof body === 'string' ? Buffer.from(body) : body, {
      resumable: false,
    });
  }
  async remove(key: string): Promise<void> {
    await this.bucket!.file(key).delete({ ignoreNotFound: true });
  }
  kill(): Promise<void> {
    return this.proc.kill();
  }
  async restart(): Promise<void> {
    await this.proc.start();
    await this.init();
  }
  async stop(): Promise<void> {
    await this.proc.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

class AzureStore extends BaseStore {
  readonly kind = 'as';
  // Azurite saves its metadata to --location only now and then: a SIGKILL can lose recent writes.
  readonly persistent = false;
  readonly cloudStorage: CloudStorageSettings;
  readonly connectionString: string;
  private container: import('@azure/storage-blob').ContainerClient | undefined;

  constructor(
    private readonly proc: Process,
    readonly port: number,
    private readonly dataDir: string,
  ) {
    super();
    this.connectionString =
      `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};` +
      `BlobEndpoint=http://127.0.0.1:${port}/${AZURITE_ACCOUNT};`;
    this.cloudStorage = {
      credentials: {
        source: 'test',
        s3: [],
        gs: [],
        as: [{ prefix: '', credential: { connectionString: this.connectionString } }],
      },
    };
  }

  async init(): Promise<void> {
    const { BlobServiceClient } = await import('@azure/storage-blob');
    this.container = BlobServiceClient.fromConnectionString(this.connectionString).getContainerClient(BUCKET);
    await this.container.createIfNotExists();
  }

  url(prefix: string): string {
    return `as://${AZURITE_ACCOUNT}/${BUCKET}/${prefix}`;
  }
  through(port: number): { url(prefix: string): string; cloudStorage: CloudStorageSettings } {
    const connectionString = this.connectionString.replace(`:${this.port}/`, `:${port}/`);
    return {
      url: (p) => this.url(p),
      cloudStorage: {
        credentials: {
          source: 'test',
          s3: [],
          gs: [],
          as: [{ prefix: '', credential: { connectionString } }],
        },
      },
    };
  }
  async put(key: string, body: string | Buffer): Promise<void> {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    await this.container!.getBlockBlobClient(key).upload(data, data.length);
  }
  async remove(key: string): Promise<void> {
    await this.container!.getBlobClient(key).deleteIfExists();
  }
  kill(): Promise<void> {
    return this.proc.kill();
  }
  async restart(): Promise<void> {
    await this.proc.start();
    await this.init();
  }
  async stop(): Promise<void> {
    await this.proc.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * Starts a store of `kind` (its server on a free loopback port) with an empty bucket. `checkCredentials`
 * (S3 on moto): the server checks every request's access key (moto's IAM mode), so with the test's made-up
 * key every request is refused; no bucket is made.
 */
export async function startStore(
  kind: StoreKind,
  options: { checkCredentials?: boolean } = {},
): Promise<TestStore> {
  const extraEnv: Record<string, string> = options.checkCredentials
    ? { INITIAL_NO_AUTH_ACTION_COUNT: '0' }
    : {};
  if (kind === 'local') return new LocalStore();
  const port = await freePort();
  if (kind === 's3') {
    const proc = new Process(
      toolPath('s3'),
      ['-H', '127.0.0.1', '-p', String(port)],
      extraEnv,
      `http://127.0.0.1:${port}/`,
    );
    await proc.start();
    const store = new S3Store('s3', proc, port, undefined);
    if (!options.checkCredentials) await store.init();
    return store;
  }
  if (kind === 'minio') {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-minio-'));
    const proc = new Process(
      toolPath('minio'),
      ['server', dir, '--address', `127.0.0.1:${port}`, '--quiet'],
      { MINIO_ROOT_USER: S3_KEY_ID, MINIO_ROOT_PASSWORD: S3_SECRET, MINIO_BROWSER: 'off', ...extraEnv },
      `http://127.0.0.1:${port}/minio/health/live`,
    );
    await proc.start();
    const store = new S3Store('minio', proc, port, dir);
    await store.init();
    return store;
  }
  if (kind === 'gs') {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-fake-gcs-'));
    const proc = new Process(
      toolPath('gs'),
      [
        '-scheme',
        'http',
        '-host',
        '127.0.0.1',
        '-port',
        String(port),
        '-backend',
        'filesystem',
        '-filesystem-root',
        dir,
        '-public-host',
        `127.0.0.1:${port}`,
        '-external-url',
        `http://127.0.0.1:${port}`,
        '-log-level',
        'warn',
      ],
      extraEnv,
      `http://127.0.0.1:${port}/storage/v1/b`,
    );
    await proc.start();
    const store = new GcsStore(proc, port, dir);
    await store.init();
    return store;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-azurite-'));
  const proc = new Process(
    process.execPath,
    [
      toolPath('as'),
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      String(port),
      '--location',
      dir,
      '--silent',
      '--skipApiVersionCheck',
      '--loose',
    ],
    extraEnv,
    `http://127.0.0.1:${port}/`,
  );
  await proc.start();
  const store = new AzureStore(proc, port, dir);
  await store.init();
  return store;
}
