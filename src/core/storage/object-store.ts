/**
 * The FileSystem of a bucket prefix, common to S3, GCS and Azure: each provider module supplies a small
 * ObjectClient (list one page of keys, open one object's bytes, explain an SDK error) and everything else
 * — folders derived from keys, hostile-key checks, listing limits, the fingerprint poll mode compares, text
 * reads and the download of a model folder into the local cache — is written once here.
 *
 * Downloads are streamed to disk (never a whole object in memory), run with a bounded number of objects
 * at once per repository, refuse objects over the size limit and copies that would not fit on the cache's
 * disk, fail an object that stalls longer than the request timeout, and read exactly the object versions
 * the listing saw (If-Match on the ETag / the listed generation), so a model changed while it downloads
 * fails this load instead of loading a mix; the next poll or load reads it anew.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { NereidError, type ErrorCode } from '../../common/errors.js';
import type { CacheDirectory } from './cache.js';
import type { DirEntry, FileSystem, FolderView, LocalFolder } from './filesystem.js';
import { networkReason, shortMessage } from './errors.js';
import { checkRelativeKey, plainName, printable } from './keys.js';
import { childHref, type ObjectLocation } from './location.js';
import { decodeConfigText, isHidden } from './local.js';
import { DownloadProgress, type ProgressSink } from './progress.js';

export interface ObjectEntry {
  readonly key: string;
  readonly size: number;
  /** What changes when the object's content does: its ETag (S3, Azure) or generation (GCS). */
  readonly tag: string;
}

export interface ObjectPage {
  readonly objects: readonly ObjectEntry[];
  /** With a delimiter: the "sub-folder" prefixes, each ending in `/`. */
  readonly prefixes: readonly string[];
  /** Continuation token; undefined on the last page. */
  readonly next: string | undefined;
}

/** What a provider module implements. Errors are thrown as the SDK throws them; describe() explains them. */
export interface ObjectClient {
  /** One page of the keys starting with `prefix`; `shallow`: group deeper keys into prefixes at `/`. */
  listPage(
    prefix: string,
    shallow: boolean,
    token: string | undefined,
    maxKeys: number,
    signal: AbortSignal,
  ): Promise<ObjectPage>;
  /** The bytes of one object, exactly the version `tag` names (fails when it changed). */
  read(entry: ObjectEntry, signal: AbortSignal): Promise<Readable>;
  /** A reason for an error the SDK threw while listing or reading, without secrets, and its code. */
  describe(err: unknown, op: 'list' | 'read'): { reason: string; code: ErrorCode };
  close(): void;
}

export interface ObjectStoreLimits {
  /** Objects downloaded at once per repository (connections to the store). */
  readonly downloadConcurrency: number;
  /** Largest object copied. */
  readonly maxObjectBytes: number;
  /** Most keys one listing may return (a listing that never ends stops here). */
  readonly maxListEntries: number;
  /** A request (or a download that delivers no byte) taking longer than this fails. */
  readonly requestTimeoutMs: number;
}

/** Bytes kept free on the cache's disk beyond a copy. */
const DISK_RESERVE_BYTES = 64 * 1024 * 1024;
const PAGE_SIZE = 1000;

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

/** A counting semaphore: at most `n` tasks at once, the rest wait in order. */
class Slots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly n: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.n) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/** Counts bytes, fails past `max`, and fails when no byte arrives for `idleMs`. */
function guard(
  max: number,
  idleMs: number,
  what: string,
  onBytes?: (n: number) => void,
): Transform & { bytes: () => number } {
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      onBytes?.(chunk.length);
      arm();
      if (bytes > max) done(new NereidError('INVALID_ARG', `${what} is larger than ${max} bytes`));
      else done(null, chunk);
    },
    flush(done) {
      clearTimeout(timer);
      done();
    },
    destroy(err, done) {
      clearTimeout(timer);
      done(err);
    },
  });
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      t.destroy(new NereidError('UNAVAILABLE', `${what}: no data for ${idleMs / 1000} s (timed out)`));
    }, idleMs);
    timer.unref();
  };
  arm();
  return Object.assign(t, { bytes: () => bytes });
}

/** A store's error as one NereidError naming the URL; secrets are cut out of whatever the SDK said. */
export class ObjectErrors {
  constructor(private readonly secrets: readonly string[]) {}

  scrub(text: string): string {
    let out = text;
    for (const s of this.secrets) if (s.length >= 4) out = out.split(s).join('<redacted>');
    return out;
  }

  wrap(err: unknown, what: string, client: ObjectClient | undefined, op: 'list' | 'read'): NereidError {
    if (err instanceof NereidError) {
      const text = this.scrub(err.message);
      return text === err.message ? err : new NereidError(err.code, text, { cause: err });
    }
    const described = client?.describe(err, op) ?? {
      reason: networkReason(err) ?? shortMessage(err),
      code: 'INTERNAL' as const,
    };
    return new NereidError(described.code, this.scrub(`${what}: ${described.reason}`));
  }
}

/** Runs `fn` with a signal that aborts after `ms`; a late answer is dropped with a timeout error. */
async function withTimeout<T>(ms: number, what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new NereidError('UNAVAILABLE', `${what}: no answer within ${ms / 1000} s (timed out)`));
    }, ms);
  });
  try {
    return await Promise.race([fn(ac.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class ObjectFileSystem implements FileSystem {
  readonly remote = true;
  readonly root: string;
  private readonly slots: Slots;
  private readonly errors: ObjectErrors;
  private connected: Promise<ObjectClient> | undefined;
  private client: ObjectClient | undefined;

  constructor(
    private readonly location: ObjectLocation,
    private readonly connect: () => Promise<ObjectClient>,
    private readonly limits: ObjectStoreLimits,
    private readonly cache: CacheDirectory,
    secrets: readonly string[],
    private readonly progress?: ProgressSink,
  ) {
    this.root = location.href;
    this.slots = new Slots(limits.downloadConcurrency);
    this.errors = new ObjectErrors(secrets);
  }

  /** The provider's client, made (and its SDK imported) on first use; a failure is retried next time. */
  private async store(): Promise<ObjectClient> {
    this.connected ??= this.connect().then(
      (c) => (this.client = c),
      (err: unknown) => {
        this.connected = undefined;
        throw err;
      },
    );
    return this.connected;
  }

  private fail(err: unknown, what: string, op: 'list' | 'read' = 'read'): NereidError {
    return this.errors.wrap(err, what, this.client, op);
  }

  join(dir: string, name: string): string {
    return childHref(dir, name);
  }

  /** The key prefix of a folder inside this root ('' for the bucket root, else ending in `/`). */
  private folderPrefix(dir: string): string {
    const rel = this.relative(dir);
    const full = [this.location.prefix, rel].filter((s) => s !== '').join('/');
    return full === '' ? '' : `${full}/`;
  }

  private relative(p: string): string {
    if (p === this.root) return '';
    if (!p.startsWith(`${this.root}/`)) {
      throw new NereidError('INTERNAL', `'${p}' is not inside the model repository '${this.root}'`);
    }
    return p.slice(this.root.length + 1);
  }

  /** Every page of a listing, bounded in entries and pages, refusing a token that comes back. */
  private async listAll(
    prefix: string,
    shallow: boolean,
    where: string,
    onPage: (page: ObjectPage) => void,
    maxKeys = PAGE_SIZE,
  ): Promise<void> {
    let token: string | undefined;
    const seen = new Set<string>();
    let entries = 0;
    for (;;) {
      let page: ObjectPage;
      try {
        const client = await this.store();
        page = await withTimeout(this.limits.requestTimeoutMs, `failed to list ${where}`, (signal) =>
          client.listPage(prefix, shallow, token, maxKeys, signal),
        );
      } catch (err) {
        throw this.fail(err, `failed to list ${where}`, 'list');
      }
      entries += page.objects.length + page.prefixes.length;
      if (entries > this.limits.maxListEntries) {
        throw new NereidError(
          'INVALID_ARG',
          `failed to list ${where}: more than ${this.limits.maxListEntries} objects (the listing limit)`,
        );
      }
      onPage(page);
      if (page.next === undefined || page.next === '' || maxKeys < PAGE_SIZE) return;
      if (seen.has(page.next)) {
        throw new NereidError('INTERNAL', `failed to list ${where}: the store repeated a continuation token`);
      }
      seen.add(page.next);
      token = page.next;
    }
  }

  async list(dir: string): Promise<DirEntry[]> {
    const base = this.folderPrefix(dir);
    const out = new Map<string, boolean>();
    await this.listAll(base, true, dir, (page) => {
      for (const p of page.prefixes) {
        const name = plainName(p.slice(base.length).replace(/\/$/, ''));
        if (name !== undefined && p.startsWith(base)) out.set(name, true);
      }
      for (const o of page.objects) {
        if (!o.key.startsWith(base) || o.key === base) continue;
        const name = plainName(o.key.slice(base.length));
        if (name !== undefined && !out.has(name)) out.set(name, false);
      }
    });
    return [...out].map(([name, isDir]) => ({ name, isDir }));
  }

  async stat(p: string): Promise<'dir' | 'file' | undefined> {
    const base = this.folderPrefix(p);
    let found: 'dir' | 'file' | undefined;
    // A folder is a prefix with at least one key below it (the bucket root: a bucket that can be listed).
    await this.listAll(
      base,
      true,
      p,
      (page) => {
        if (base === '' || page.prefixes.length > 0 || page.objects.length > 0) found = 'dir';
      },
      1,
    );
    if (found !== undefined || base === '') return found;
    // A file: the key itself, which sorts before anything else starting with it.
    const key = base.slice(0, -1);
    await this.listAll(
      key,
      true,
      p,
      (page) => {
        if (page.objects.some((o) => o.key === key)) found = 'file';
      },
      1,
    );
    return found;
  }

  async openFolder(dir: string): Promise<FolderView> {
    const base = this.folderPrefix(dir);
    const files = new Map<string, ObjectEntry>();
    const dirs = new Set<string>();
    await this.listAll(base, false, dir, (page) => {
      for (const o of page.objects) {
        if (!o.key.startsWith(base)) continue;
        const rel = o.key.slice(base.length);
        if (rel === '') continue; // the folder's own marker object
        const isMarker = rel.endsWith('/');
        const segments = checkRelativeKey(isMarker ? rel.slice(0, -1) : rel, o.key, dir);
        for (let i = 1; i < segments.length; i++) dirs.add(segments.slice(0, i).join('/'));
        const name = segments.join('/');
        if (isMarker) dirs.add(name);
        else files.set(name, o);
      }
    });
    for (const f of files.keys()) {
      if (dirs.has(f)) {
        throw new NereidError(
          'INVALID_ARG',
          `refusing object key '${printable(base + f)}' in ${dir}: it is both a file and a folder`,
        );
      }
    }
    return new ObjectFolderView(dir, files, dirs, this);
  }

  /** Reads one object whole, at most `maxBytes` (more is an error naming it). */
  async readObject(entry: ObjectEntry, href: string, maxBytes: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    const ac = new AbortController();
    try {
      const client = await this.store();
      const stream = await withTimeout(this.limits.requestTimeoutMs, `failed to read ${href}`, (signal) => {
        signal.addEventListener('abort', () => ac.abort(), { once: true });
        return client.read(entry, ac.signal);
      });
      const g = guard(maxBytes, this.limits.requestTimeoutMs, `'${href}'`);
      await pipeline(stream, g, async (source: AsyncIterable<Buffer>) => {
        for await (const c of source) chunks.push(c);
      });
    } catch (err) {
      ac.abort();
      throw this.fail(err, `failed to read ${href}`);
    }
    return Buffer.concat(chunks);
  }

  /** Downloads the chosen files of a folder view into a fresh cache folder. */
  async download(
    view: ObjectFolderView,
    modelName: string,
    files: readonly [string, ObjectEntry][],
    dirs: readonly string[],
    cached: ReadonlyMap<string, Buffer>,
  ): Promise<LocalFolder> {
    let total = 0;
    for (const [rel, o] of files) {
      if (o.size > this.limits.maxObjectBytes) {
        throw new NereidError(
          'INVALID_ARG',
          `refusing to download '${view.locationOf(rel)}': ${o.size} bytes is more than the limit of ${this.limits.maxObjectBytes} bytes per object`,
        );
      }
      total += o.size;
    }
    const tempRoot = await this.cache.newCopyRoot();
    let progress: DownloadProgress | undefined;
    try {
      const free = await statfs(tempRoot).then(
        (s) => s.bavail * s.bsize,
        () => Number.POSITIVE_INFINITY,
      );
      if (total + DISK_RESERVE_BYTES > free) {
        throw new NereidError(
          'UNAVAILABLE',
          `not enough disk space to copy ${view.location}: it needs ${total} bytes, ${free} are free in '${this.cache.mountDirectory}'`,
        );
      }
      const modelDir = path.join(tempRoot, modelName);
      await mkdir(modelDir, { mode: 0o700 });
      const local = (rel: string): string => path.join(modelDir, ...rel.split('/'));
      // Folders first (shallow ones before deep ones), so files never race for their parents.
      for (const d of [...dirs].sort((a, b) => a.split('/').length - b.split('/').length)) {
        await mkdir(local(d), { recursive: true, mode: 0o700 });
      }
      const ac = new AbortController();
      const fetched = files.filter(([rel]) => !cached.has(rel));
      const bytes = fetched.reduce((sum, [, o]) => sum + o.size, 0);
      progress =
        this.progress && fetched.length > 0
          ? new DownloadProgress(view.location, bytes, fetched.length, this.progress)
          : undefined;
      // The failure that stopped the download, in time order: the others it cancels are not the reason.
      let first: { error: unknown } | undefined;
      await Promise.allSettled(
        files.map(([rel, o]) =>
          this.slots.run(async () => {
            if (ac.signal.aborted) return;
            const target = local(rel);
            const known = cached.get(rel);
            try {
              if (known !== undefined) await writeFile(target, known, { flag: 'wx', mode: 0o600 });
              else await this.fetchTo(o, view.locationOf(rel), target, ac.signal, progress);
            } catch (err) {
              if (!ac.signal.aborted) {
                first = { error: err };
                ac.abort();
              }
            }
          }),
        ),
      );
      if (first !== undefined) throw first.error;
      progress?.finish();
      return { path: modelDir, tempRoot };
    } catch (err) {
      progress?.stop();
      await rm(tempRoot, { recursive: true, force: true });
      throw this.fail(err, `failed to download ${view.location}`);
    }
  }

  private async fetchTo(
    o: ObjectEntry,
    href: string,
    target: string,
    signal: AbortSignal,
    progress: DownloadProgress | undefined,
  ): Promise<void> {
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const client = await this.store();
      const stream = await withTimeout(this.limits.requestTimeoutMs, `failed to download ${href}`, (s) => {
        s.addEventListener('abort', () => ac.abort(), { once: true });
        return client.read(o, ac.signal);
      });
      const g = guard(
        Math.min(o.size, this.limits.maxObjectBytes),
        this.limits.requestTimeoutMs,
        `object '${href}'`,
        progress && ((n) => progress.add(n)),
      );
      try {
        await pipeline(stream, g, createWriteStream(target, { flags: 'wx', mode: 0o600 }), {
          signal: ac.signal,
        });
      } catch (err) {
        if (err instanceof NereidError && err.code === 'INVALID_ARG') {
          // More bytes than listed: the object was replaced after the listing.
          throw new NereidError(
            'UNAVAILABLE',
            `object '${href}' changed while it was downloaded (larger than the ${o.size} bytes listed)`,
          );
        }
        // An SDK that gives up on a body cut short may report an abort of its own (Azure's retrying stream
        // does, once the store refuses the retry): what happened is the connection closing mid-object.
        if (!(err instanceof NereidError) && !ac.signal.aborted && field(err, 'name') === 'AbortError') {
          throw new NereidError(
            'UNAVAILABLE',
            `object '${href}' ended after ${g.bytes()} of ${o.size} bytes: the connection was closed`,
          );
        }
        throw err;
      }
      if (g.bytes() !== o.size) {
        throw new NereidError(
          'UNAVAILABLE',
          `object '${href}' ended after ${g.bytes()} of ${o.size} bytes (connection lost or object changed)`,
        );
      }
    } catch (err) {
      // Cancelled because another file of the copy failed: that failure is the reason, not this one.
      if (signal.aborted) throw new NereidError('CANCELLED', 'download cancelled');
      throw this.fail(err, `failed to download ${href}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  close(): Promise<void> {
    this.client?.close();
    this.client = undefined;
    this.connected = undefined;
    return Promise.resolve();
  }
}

/** One listing of a model folder; everything it answers comes from that listing. */
export class ObjectFolderView implements FolderView {
  /** Text files read through this view, reused by localize (same object version). */
  private readonly texts = new Map<string, Buffer>();

  constructor(
    readonly location: string,
    private readonly files: ReadonlyMap<string, ObjectEntry>,
    private readonly dirs: ReadonlySet<string>,
    private readonly fs: ObjectFileSystem,
  ) {}

  fingerprint(): Promise<string> {
    const visible = (rel: string): boolean => !rel.split('/').some(isHidden);
    const lines: string[] = [];
    for (const d of this.dirs) if (visible(d)) lines.push(`${d}\0d`);
    for (const [rel, o] of this.files) if (visible(rel)) lines.push(`${rel}\0f\0${o.size}\0${o.tag}`);
    lines.sort();
    return Promise.resolve(createHash('sha256').update(lines.join('\n')).digest('hex'));
  }

  list(): Promise<DirEntry[]> {
    const out: DirEntry[] = [];
    for (const d of this.dirs) if (!d.includes('/')) out.push({ name: d, isDir: true });
    for (const f of this.files.keys()) if (!f.includes('/')) out.push({ name: f, isDir: false });
    return Promise.resolve(out);
  }

  exists(rel: string): Promise<boolean> {
    return Promise.resolve(this.files.has(rel) || this.dirs.has(rel));
  }

  locationOf(rel: string): string {
    return childHref(this.location, rel);
  }

  async readText(rel: string, maxBytes: number): Promise<string | undefined> {
    const where = this.locationOf(rel);
    const entry = this.files.get(rel);
    if (!entry) {
      if (this.dirs.has(rel)) {
        throw new NereidError('INVALID_ARG', `model configuration '${where}' is not a regular file`);
      }
      return undefined;
    }
    const tooLarge = (): NereidError =>
      new NereidError(
        'INVALID_ARG',
        `model configuration file '${where}' exceeds the maximum size of ${maxBytes} bytes`,
      );
    if (entry.size > maxBytes) throw tooLarge();
    let bytes: Buffer;
    try {
      bytes = await this.fs.readObject(entry, where, maxBytes);
    } catch (err) {
      if (err instanceof NereidError && /is larger than/.test(err.message)) throw tooLarge();
      throw err;
    }
    this.texts.set(rel, bytes);
    return decodeConfigText(bytes, where);
  }

  localize(include?: (rel: string) => boolean): Promise<LocalFolder> {
    const files = [...this.files].filter(([rel]) => include === undefined || include(rel));
    const dirs = [...this.dirs].filter((d) => include === undefined || include(d));
    for (const [rel] of files) {
      const segs = rel.split('/');
      for (let i = 1; i < segs.length; i++) dirs.push(segs.slice(0, i).join('/'));
    }
    const name = this.location.slice(this.location.lastIndexOf('/') + 1);
    return this.fs.download(this, name, files, [...new Set(dirs)], this.texts);
  }
}
