/**
 * Fault tests of object-store repositories, against the same real servers: the server killed in the middle
 * of a download (through a loopback proxy that holds the bytes after the first MiB and then resets the
 * connection, so "the middle" is certain), a store that never answers and one that is not there, wrong
 * credentials, object keys that would escape the model folder, and the listing and object-size limits.
 * Each expects a model-load error naming the URL and the reason, no secret in any message or log line,
 * and the server going on serving the other models.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, waitFor } from '../harness.js';
import { filesBelow, seed } from './conformance.js';
import { identityModel, infer, modelReady, pythonModel, startWith } from './models.js';
import { startStore, unavailable, type StoreKind, type TestStore } from './stores.js';

/**
 * A loopback TCP proxy in front of a store that can cut a download in the middle for certain: each
 * connection forwards the store's bytes until it has passed `cap` of them, then holds the rest (`stalled`
 * resolves); `reset()` then resets every connection (RST), as a store that dies mid-object does. Killing the
 * store process alone is not enough: a small object may already sit whole in the kernel's socket buffers.
 */
export class CuttingProxy {
  private readonly sockets = new Set<net.Socket>();
  private cap: number;
  private onStall!: () => void;
  /** Resolves when a connection has forwarded `cap` bytes and holds the rest. */
  readonly stalled = new Promise<void>((resolve) => (this.onStall = resolve));
  private server!: net.Server;
  port = 0;

  private constructor(
    private readonly target: number,
    cap: number,
  ) {
    this.cap = cap;
  }

  static async start(target: number, cap: number): Promise<CuttingProxy> {
    const proxy = new CuttingProxy(target, cap);
    proxy.server = net.createServer((client) => proxy.connection(client));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as net.AddressInfo).port;
    return proxy;
  }

  private connection(client: net.Socket): void {
    const upstream = net.connect(this.target, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    const cap = this.cap;
    let passed = 0;
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      const room = cap - passed;
      if (room <= 0) return;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      passed += part.length;
      client.write(part);
      if (passed >= cap) {
        upstream.pause();
        this.onStall();
      }
    });
    upstream.on('end', () => client.end());
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    upstream.on('error', drop);
    client.on('error', drop);
    client.on('close', drop);
  }

  /** Resets every open connection; later connections are not capped. */
  reset(): void {
    this.cap = Number.POSITIVE_INFINITY;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
  }

  close(): Promise<void> {
    this.reset();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Keys each store lets a client create that a model folder must never turn into paths: `put` is the key
 * written, `listed` the key the store then lists (Azure turns `\\` into `/`, so there a backslash key is how
 * a `..` segment gets in: its SDK resolves a literal `..` in a blob URL before sending it).
 */
function hostileKeys(kind: StoreKind): Record<string, { put: string; listed: string }> {
  const same = (k: string): { put: string; listed: string } => ({ put: k, listed: k });
  if (kind === 'gs') {
    // fake-gcs-server cleans object names on upload (`.`, `..` and empty segments go), so only the backslash
    // key can be stored there; the other forms are covered on S3 and Azure and in keys.test.ts.
    return { backslash: same('escape_backslash/1/..\\..\\escaped.txt') };
  }
  if (kind === 'as') {
    return {
      dotdot: { put: 'escape_dotdot/1/..\\..\\escaped.txt', listed: 'escape_dotdot/1/../../escaped.txt' },
      absolute: same('escape_absolute//etc/escaped.txt'),
    };
  }
  return {
    dotdot: same('escape_dotdot/1/../../../../escaped.txt'),
    backslash: same('escape_backslash/1/..\\..\\escaped.txt'),
    absolute: same('escape_absolute//etc/escaped.txt'),
  };
}

export function faultSuite(kind: Exclude<StoreKind, 'local'>): void {
  const skip = unavailable(kind);
  describe(`object-store faults on ${kind}`, { skip }, () => {
    let store: TestStore;
    let mount: string;
    let local: string;
    before(async () => {
      store = await startStore(kind);
      mount = mkdtempSync(path.join(os.tmpdir(), 'nereid-mount-'));
      local = makeRepository({
        local_ident: {
          config: 'name: "local_ident"\nbackend: "onnxruntime"\nmax_batch_size: 0\n',
          onnx: 'identity_fp32.onnx',
        },
      });
    });
    after(async () => {
      await store?.stop();
      rmSync(mount, { recursive: true, force: true });
      removeRepository(local);
    });

    it('a store stopped in the middle of a download: a clear load error, the rest serves, a restart recovers', async () => {
      const blob = randomBytes(4 * 1024 * 1024);
      const files = {
        ...identityModel('small'),
        ...pythonModel('big'),
        'big/1/blob.bin': blob,
      };
      const prefix = await seed(store, files);
      // Every connection stops forwarding after 1 MiB: only the blob's download gets that far.
      const proxy = await CuttingProxy.start(store.port, 1024 * 1024);
      const via = store.through(proxy.port);
      const s = await startWith(
        { ...via.cloudStorage, mountDirectories: { s3: mount, gs: mount, as: mount } },
        [
          `--model-repository=${via.url(prefix)}`,
          '--model-control-mode=explicit',
          '--load-model=small',
          '--exit-on-error=false',
          // A bound on the wait should an SDK not report the reset (the stall timeout ends any download).
          '--repository-request-timeout-secs=30',
        ],
      );
      let down = false;
      try {
        assert.ok(await modelReady(s.url, 'small'));
        const loading = post(`${s.url}/v2/repository/models/big/load`, {});
        await proxy.stalled;
        await store.kill();
        down = true;
        proxy.reset();
        const res = await loading;
        assert.notEqual(res.status, 200);
        const text = res.body.toString();
        assert.match(text, new RegExp(`${via.url(prefix).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/big`), text);
        // The GCS client sometimes retries the reset connection into the killed server and then reports the
        // download's own stall timeout: still a clear reason naming the object.
        assert.match(
          text,
          /connection|ended after|closed|reset|refused|no data for \d+ s \(timed out\)/,
          text,
        );
        assert.equal(await modelReady(s.url, 'big'), false);
        assert.deepEqual(await infer(s.url, 'small', [1, 2]), {
          status: 200,
          data: [1, 2],
          error: undefined,
        });
        // The broken copy is gone.
        await waitFor(() =>
          readdirSync(mount).every((session) =>
            filesBelow(path.join(mount, session)).every((f) => !f.includes(`${path.sep}big${path.sep}`)),
          ),
        );

        await store.restart();
        down = false;
        if (!store.persistent) {
          for (const [k, v] of Object.entries(files)) await store.put(`${prefix}/${k}`, v);
        }
        const again = await post(`${s.url}/v2/repository/models/big/load`, {});
        assert.equal(again.status, 200, again.body.toString());
        assert.deepEqual(await infer(s.url, 'big', [1]), { status: 200, data: [103], error: undefined });
      } finally {
        await s.stop();
        await proxy.close();
        // The other tests need the store, even when this one failed while it was down.
        if (down) await store.restart();
      }
    });

    it('object keys that would leave the model folder are refused, naming the key; nothing is written outside', async () => {
      const keys = hostileKeys(kind);
      const files: Record<string, string | Buffer> = {};
      for (const { put } of Object.values(keys)) {
        const model = put.split('/')[0];
        Object.assign(files, identityModel(model));
        files[put] = 'not yours';
      }
      const prefix = await seed(store, files);
      const s = await startWith(
        { ...store.cloudStorage, mountDirectories: { s3: mount, gs: mount, as: mount } },
        [`--model-repository=${store.url(prefix)}`, `--model-repository=${local}`, '--exit-on-error=false'],
      );
      try {
        assert.ok(await modelReady(s.url, 'local_ident'));
        for (const [why, { listed }] of Object.entries(keys)) {
          const model = listed.split('/')[0];
          assert.equal(await modelReady(s.url, model), false, why);
          const line = s.logs.find((l) => l.includes(`refusing object key '${prefix}/${listed}'`));
          assert.ok(line, `${why}: no log line names the key; logs:\n${s.logs.join('\n')}`);
        }
        // Where `..` segments from a copy folder would have led: the mount folder and the one above it.
        assert.equal(
          filesBelow(mount).some((f) => f.endsWith('escaped.txt')),
          false,
        );
        assert.equal(existsSync(path.join(path.dirname(mount), 'escaped.txt')), false);
      } finally {
        await s.stop();
      }
    });

    it('a listing over --repository-max-list-entries and an object over --repository-max-object-bytes fail that model only', async () => {
      const many: Record<string, string | Buffer> = { ...identityModel('many') };
      for (let i = 0; i < 8; i++) many[`many/1/part${i}.txt`] = String(i);
      const prefix = await seed(store, {
        ...many,
        ...identityModel('huge'),
        'huge/1/weights.bin': randomBytes(5000),
        ...identityModel('fine'),
      });
      const s = await startWith(
        { ...store.cloudStorage, mountDirectories: { s3: mount, gs: mount, as: mount } },
        [
          `--model-repository=${store.url(prefix)}`,
          '--repository-max-list-entries=6',
          '--repository-max-object-bytes=4096',
          '--exit-on-error=false',
        ],
      );
      try {
        assert.deepEqual(await infer(s.url, 'fine', [5]), { status: 200, data: [5], error: undefined });
        const index = (await post(`${s.url}/v2/repository/index`, {})).json<
          { name: string; reason?: string }[]
        >();
        const reason = (m: string): string =>
          index
            .filter((e) => e.name === m)
            .map((e) => e.reason ?? '')
            .join(' ');
        assert.match(reason('many'), /more than 6 objects \(the listing limit\)/);
        assert.match(
          reason('huge'),
          /huge\/1\/weights\.bin': 5000 bytes is more than the limit of 4096 bytes/,
        );
      } finally {
        await s.stop();
      }
    });

    it('a store that never answers, and one that is not there: the URL and the reason; the rest serves', async () => {
      // A listener that accepts connections and never says a byte: the request timeout must end the wait.
      const held = new Set<net.Socket>();
      const silent = net.createServer((socket) => {
        held.add(socket);
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const silentPort = (silent.address() as net.AddressInfo).port;
      // A port nobody listens on: the listener is closed before the server starts.
      const closed = net.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const closedPort = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      try {
        // The absent store gets time for the SDKs' own retries (GCS retries a refused connection with
        // back-off), so what is reported is the refusal, not the timeout.
        for (const [port, reason, timeoutSecs] of [
          [silentPort, /timed out/, 1],
          [closedPort, /connection refused/, 30],
        ] as const) {
          const via = store.through(port);
          const url = via.url('models');
          const s = await startWith(via.cloudStorage, [
            `--model-repository=${url}`,
            `--model-repository=${local}`,
            `--repository-request-timeout-secs=${timeoutSecs}`,
            '--exit-on-error=false',
          ]);
          try {
            assert.deepEqual(await infer(s.url, 'local_ident', [4]), {
              status: 200,
              data: [4],
              error: undefined,
            });
            const line = s.logs.find((l) => l.includes(`failed to open model repository '${url}'`));
            assert.ok(line, s.logs.join('\n'));
            assert.match(line, reason);
          } finally {
            await s.stop();
          }
        }
      } finally {
        for (const socket of held) socket.destroy();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    });

    it('a missing bucket: the repository fails naming it; the rest serves', async () => {
      const url = store.url('models').replace('/nereid-models/', '/nereid-missing/');
      assert.notEqual(url, store.url('models'));
      const s = await startWith(store.cloudStorage, [
        `--model-repository=${url}`,
        `--model-repository=${local}`,
        '--exit-on-error=false',
      ]);
      try {
        assert.ok(await modelReady(s.url, 'local_ident'));
        const line = s.logs.find((l) => l.includes(`failed to open model repository '${url}'`));
        assert.ok(line, s.logs.join('\n'));
        assert.match(line, /(bucket|container) 'nereid-missing' does not exist/);
      } finally {
        await s.stop();
      }
    });

    it('wrong credentials: the repository fails with the URL and the reason, no secret shown, the rest serves', async () => {
      const { cloudStorage, url, secret, reason, stop } = await wrongCredentials(kind, store);
      try {
        const s = await startWith(cloudStorage, [
          `--model-repository=${url}`,
          `--model-repository=${local}`,
          '--exit-on-error=false',
        ]);
        try {
          assert.deepEqual(await infer(s.url, 'local_ident', [2]), {
            status: 200,
            data: [2],
            error: undefined,
          });
          const line = s.logs.find((l) => l.includes(`failed to open model repository '${url}'`));
          assert.ok(line, s.logs.join('\n'));
          assert.match(line, reason);
          if (secret)
            assert.ok(
              s.logs.every((l) => !l.includes(secret)),
              'a secret was logged',
            );
        } finally {
          await s.stop();
        }
        // With --exit-on-error (the default) the start fails, saying why.
        await assert.rejects(
          startWith(cloudStorage, [`--model-repository=${url}`]),
          (err: Error) =>
            err.message.includes(url) &&
            reason.test(err.message) &&
            (!secret || !err.message.includes(secret)),
        );
      } finally {
        await stop();
      }
    });
  });
}

/** A repository URL and settings with credentials the store refuses, and the reason to expect. */
async function wrongCredentials(
  kind: Exclude<StoreKind, 'local'>,
  store: TestStore,
): Promise<{
  url: string;
  cloudStorage: TestStore['cloudStorage'];
  secret: string | undefined;
  reason: RegExp;
  stop: () => Promise<void>;
}> {
  const secret = 'wrong-secret-0123456789';
  if (kind === 's3') {
    // moto checks credentials only in its IAM mode: a second server in that mode.
    const checking = await startStore('s3', { checkCredentials: true });
    return {
      url: checking.url('models'),
      cloudStorage: {
        credentials: {
          source: 'test',
          s3: [{ prefix: '', credential: { keyId: 'AKIANEREIDWRONGKEY', secretKey: secret } }],
          gs: [],
          as: [],
        },
      },
      secret,
      reason: /access denied: check the credentials \(InvalidAccessKeyId\)/,
      stop: () => checking.stop(),
    };
  }
  if (kind === 'minio') {
    return {
      url: store.url('models'),
      cloudStorage: {
        credentials: {
          source: 'test',
          s3: [{ prefix: '', credential: { keyId: 'nereid-test-key', secretKey: secret } }],
          gs: [],
          as: [],
        },
      },
      secret,
      reason: /access denied: check the credentials \(SignatureDoesNotMatch\)/,
      stop: () => Promise.resolve(),
    };
  }
  if (kind === 'gs') {
    // fake-gcs-server accepts any caller; a key file that is not a key is what it can show.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-gcs-key-'));
    const keyFile = path.join(dir, 'key.json');
    writeFileSync(keyFile, '{"type": "service_account", "private_key": "not a key"}');
    return {
      url: store.url('models'),
      cloudStorage: {
        ...store.cloudStorage,
        credentials: { source: 'test', s3: [], gs: [{ prefix: '', credential: keyFile }], as: [] },
      },
      secret: undefined,
      reason: /failed to list gs:\/\/nereid-models\/models: /,
      stop: () => {
        rmSync(dir, { recursive: true, force: true });
        return Promise.resolve();
      },
    };
  }
  const key = Buffer.from(secret).toString('base64');
  const right = store.cloudStorage.credentials?.as[0]?.credential.connectionString ?? '';
  return {
    url: store.url('models'),
    cloudStorage: {
      credentials: {
        source: 'test',
        s3: [],
        gs: [],
        as: [
          {
            prefix: '',
            credential: { connectionString: right.replace(/AccountKey=[^;]+/, `AccountKey=${key}`) },
          },
        ],
      },
    },
    secret: key,
    reason: /access denied: check the credentials \(AuthorizationFailure\)/,
    stop: () => Promise.resolve(),
  };
}
