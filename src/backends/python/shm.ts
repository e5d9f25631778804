/**
 * The host side of a stub's two /dev/shm files. Both are created here, handed to the stub as inherited
 * descriptors (fd 4: host -> stub, fd 5: stub -> host) and unlinked as soon as the stub has them, so no
 * file is ever left in /dev/shm, whatever happens to either process. Node cannot map memory, so the host
 * moves bytes with positional reads and writes on the descriptors (one system call, one copy per tensor),
 * while the stub maps the host->stub file and hands models numpy views over it (no copy on that side).
 *
 * The host->stub file is a bump allocator. Each batch pins what is written while it is open (its inputs,
 * and BLS results its model asked for meanwhile) until every request of the batch has ended: a decoupled
 * model's requests outlive their execute, and its threads or coroutines may still read their inputs. Space
 * whose batches all ended is reused; when nothing is pinned, the whole file is (reset).
 * When /dev/shm is missing, read-only or full, tensors travel inline on the control socket instead: slower
 * for big tensors, never broken, and the log says once how to get the fast path back.
 */
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  ftruncateSync,
  openSync,
  read,
  readSync,
  unlinkSync,
  write,
  writeSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { internal } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';

const readAsync = promisify(read);
const writeAsync = promisify(write);

export const SHM_DIR = '/dev/shm';
const ALIGN = 64;
/** Transfers up to this size are done synchronously: a memcpy beats a trip through libuv's thread pool. */
const SYNC_IO_LIMIT = 1 << 20;
/** Linux moves at most this much in one read or write call. */
const MAX_SINGLE_TRANSFER = 0x7ffff000;

const align = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

function errnoOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : String(err);
}

export interface ShmFileOptions {
  readonly prefix: string;
  readonly initialSize: number;
  readonly growth: number;
  readonly dir?: string;
}

/** The two files of one stub; `undefined` from create() when /dev/shm cannot be used. */
export class StubShmFiles {
  private closed = false;

  private constructor(
    readonly toStub: HostToStubArena,
    readonly fromStub: StubToHostReader,
    private readonly paths: string[],
  ) {}

  /** Creates both files (not yet unlinked: call unlink() once the stub inherited them). */
  static create(options: ShmFileOptions, log: Logger, label: string): StubShmFiles | undefined {
    const dir = options.dir ?? SHM_DIR;
    const base = `${dir}/${options.prefix}${randomUUID()}`;
    const flags = constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    let toFd = -1;
    let fromFd = -1;
    try {
      toFd = openSync(`${base}_h2s`, flags, 0o600);
      fromFd = openSync(`${base}_s2h`, flags, 0o600);
      ftruncateSync(toFd, align(options.initialSize));
    } catch (err) {
      for (const fd of [toFd, fromFd]) if (fd >= 0) closeSync(fd);
      for (const suffix of ['_h2s', '_s2h']) {
        try {
          unlinkSync(`${base}${suffix}`);
        } catch {
          // not created
        }
      }
      log.warn(
        `Python backend: cannot use ${dir} for the tensors of '${label}' (${errnoOf(err)}); they will travel over ` +
          `the stub's control socket instead, which is slower for large tensors. Mount a writable tmpfs at ${dir} ` +
          `(docker: --shm-size) to get the fast path.`,
      );
      return undefined;
    }
    return new StubShmFiles(
      new HostToStubArena(toFd, align(options.initialSize), options.growth, log, label),
      new StubToHostReader(fromFd),
      [`${base}_h2s`, `${base}_s2h`],
    );
  }

  get fds(): [number, number] {
    return [this.toStub.fd, this.fromStub.fd];
  }

  /** Removes the names from /dev/shm; the open descriptors keep the memory until both sides close them. */
  unlink(): void {
    for (const p of this.paths.splice(0)) {
      try {
        unlinkSync(p);
      } catch {
        // already gone
      }
    }
  }

  close(): void {
    this.unlink();
    if (this.closed) return;
    this.closed = true;
    closeSync(this.toStub.fd);
    closeSync(this.fromStub.fd);
  }
}

/** Space in the host->stub file that the stub may still read. */
interface Region {
  readonly start: number;
  readonly end: number;
  /** The batches (pins) that keep it; empty = written while none was open, kept until the next reset. */
  readonly pins: Set<number>;
}

/**
 * Host writes into the host->stub file: bump allocation that skips space still pinned by open batches,
 * wraps to the start when it can, and grows the file on demand.
 */
export class HostToStubArena {
  private used = 0;
  private disabled = false;
  private nextPin = 1;
  private readonly pins = new Set<number>();
  private regions: Region[] = [];

  constructor(
    readonly fd: number,
    private size: number,
    private readonly growth: number,
    private readonly log: Logger,
    private readonly label: string,
  ) {}

  /** Frees everything: call only when the stub reads nothing from the file any more. */
  reset(): void {
    this.used = 0;
    this.regions = [];
  }

  /** A batch's hold on what is written for it (and while it is open) until unpin(): while any of its requests is open. */
  pin(): number {
    const id = this.nextPin++;
    this.pins.add(id);
    return id;
  }

  /** The batch ended: space only it kept is free again. */
  unpin(id: number): void {
    if (!this.pins.delete(id)) return;
    this.regions = this.regions.filter((r) => {
      if (r.pins.size === 0) return true;
      r.pins.delete(id);
      return r.pins.size > 0;
    });
  }

  /** Bytes the file spans now (tests). */
  get fileSize(): number {
    return this.size;
  }

  /** Where `length` bytes go: after the last write, at the start, or after a region in use, else past all. */
  private place(length: number): number {
    const free = (at: number): boolean =>
      at + length <= this.size && this.regions.every((r) => at + length <= r.start || at >= r.end);
    if (free(this.used)) return this.used;
    if (free(0)) return 0;
    for (const r of this.regions) if (free(r.end)) return r.end;
    let end = this.used;
    for (const r of this.regions) end = Math.max(end, r.end);
    return end;
  }

  /**
   * Copies `data` into the file; its offset, or undefined when it must travel inline instead. It stays
   * until `pin` is released — without one (a BLS result: which request asked is not known), until every
   * batch open now is.
   */
  async write(data: Buffer, pin?: number): Promise<number | undefined> {
    if (this.disabled) return undefined;
    const length = align(Math.max(data.length, 1));
    const offset = this.place(length);
    const end = offset + length;
    try {
      if (end > this.size) {
        const size = align(Math.max(end, this.size + this.growth));
        ftruncateSync(this.fd, size);
        this.size = size;
      }
      this.used = end;
      const pins = pin !== undefined && this.pins.has(pin) ? new Set([pin]) : new Set(this.pins);
      this.regions.push({ start: offset, end, pins });
      let done = 0;
      while (done < data.length) {
        const chunk = Math.min(data.length - done, MAX_SINGLE_TRANSFER);
        const n =
          chunk <= SYNC_IO_LIMIT
            ? writeSync(this.fd, data, done, chunk, offset + done)
            : (await writeAsync(this.fd, data, done, chunk, offset + done)).bytesWritten;
        if (n <= 0) throw internal('no progress writing shared memory');
        done += n;
      }
      return offset;
    } catch (err) {
      // Typically ENOSPC: /dev/shm is full. Stay on the socket from now on and say how to fix it, once.
      this.disabled = true;
      this.log.warn(
        `Python backend: ${SHM_DIR} cannot take more input tensors for '${this.label}' (${errnoOf(err)}); they ` +
          `now travel over the stub's control socket, which is slower. Give the server a larger ${SHM_DIR} ` +
          `(e.g. docker run --shm-size=1g) to get the fast path back.`,
      );
      return undefined;
    }
  }
}

/** Host reads from the stub->host file; the caller returns the space with a FREE frame. */
export class StubToHostReader {
  constructor(readonly fd: number) {}

  /** Reads `size` bytes at `offset` into a new Buffer (the one copy on the host side). */
  async read(offset: number, size: number): Promise<Buffer> {
    const out = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const chunk = Math.min(size - done, MAX_SINGLE_TRANSFER);
      const n =
        chunk <= SYNC_IO_LIMIT
          ? readSync(this.fd, out, done, chunk, offset + done)
          : (await readAsync(this.fd, out, done, chunk, offset + done)).bytesRead;
      if (n <= 0)
        throw internal(`the Python stub named bytes ${offset}+${size} outside its shared-memory file`);
      done += n;
    }
    return out;
  }
}
