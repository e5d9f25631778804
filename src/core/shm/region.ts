/**
 * One registered system shared-memory region: an open file descriptor on a POSIX shm object in /dev/shm
 * and the window [offset, offset + byteSize) of it the client registered. Node cannot mmap, so tensors
 * move with positional reads and writes on that descriptor (pread/pwrite): a write into a tmpfs file is
 * what the client's own mapping of it shows. One system call per tensor each way; transfers up to
 * 64 KiB are done synchronously (a memcpy is cheaper than a trip through libuv's thread pool), larger
 * ones on the pool so the event loop keeps serving.
 */
import { constants, fstatSync, readSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { NereidError, internal, invalidArg, type ErrorCode } from '../../common/errors.js';
import type { SystemSharedMemoryRegionStatus } from '../types.js';
import { shown } from './key.js';

export const SHM_DIR = '/dev/shm';

/** Linux moves at most this much in one read or write call (2 GiB − 4 KiB). */
export const MAX_SINGLE_TRANSFER = 0x7ffff000;

const SYNC_IO_LIMIT = 64 * 1024;

// O_NOFOLLOW: a symlink planted in /dev/shm is refused by the kernel, not followed. O_NONBLOCK: opening a
// FIFO or device someone put there cannot hang the server (fstat then refuses it). libuv adds O_CLOEXEC.
const OPEN_FLAGS = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Why an object cannot be opened, and whose fault it is: a key that names nothing the server may use is the
 * client's (INVALID_ARG), no descriptor left is the server's for now (UNAVAILABLE); any other errno is
 * INTERNAL. Triton answers every one of them with INTERNAL (500).
 */
const OPEN_REASONS: Readonly<Record<string, readonly [string, ErrorCode]>> = {
  ENOENT: ['no such shared memory object', 'INVALID_ARG'],
  ELOOP: ['is a symbolic link', 'INVALID_ARG'],
  EACCES: ['permission denied', 'INVALID_ARG'],
  EPERM: ['permission denied', 'INVALID_ARG'],
  EISDIR: ['not a regular file', 'INVALID_ARG'],
  ENXIO: ['not a regular file', 'INVALID_ARG'],
  ENODEV: ['not a regular file', 'INVALID_ARG'],
  ENAMETOOLONG: ['name too long', 'INVALID_ARG'],
  EMFILE: ['too many open files', 'UNAVAILABLE'],
  ENFILE: ['too many open files', 'UNAVAILABLE'],
};

function openError(key: string, why: string, code: ErrorCode): NereidError {
  // Triton's text ("Unable to open shared memory region: '<key>'"), with the reason.
  return new NereidError(code, `Unable to open shared memory region: '${shown(key)}': ${why}`);
}

function errnoOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : 'unknown error';
}

export interface OpenedShmObject {
  readonly handle: FileHandle;
  /** The object's size in bytes when it was opened. */
  readonly size: number;
}

/** Opens /dev/shm/<object> read-write; refuses symlinks and anything but a regular file. */
export async function openShmObject(key: string, object: string, dir = SHM_DIR): Promise<OpenedShmObject> {
  let handle: FileHandle;
  try {
    handle = await open(`${dir}/${object}`, OPEN_FLAGS);
  } catch (err) {
    const errno = errnoOf(err);
    const [why, code] = Object.hasOwn(OPEN_REASONS, errno)
      ? OPEN_REASONS[errno]
      : [errno, 'INTERNAL' as const];
    throw openError(key, why, code);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw openError(key, 'not a regular file', 'INVALID_ARG');
    if (!Number.isSafeInteger(st.size) || st.size < 0) {
      throw openError(key, 'invalid object size', 'INVALID_ARG');
    }
    return { handle, size: st.size };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err instanceof NereidError ? err : openError(key, errnoOf(err), 'INTERNAL');
  }
}

export class ShmRegion {
  /** Requests holding this region (inputs not yet read, outputs not yet written). */
  users = 0;
  /** Unregistered while in use: dropped once the last user releases it (Triton's behaviour). */
  awaitingUnregister = false;
  private closing: Promise<void> | undefined;

  constructor(
    readonly name: string,
    readonly key: string,
    /** Start of the region inside the object. */
    readonly offset: number,
    readonly byteSize: number,
    private readonly handle: FileHandle,
  ) {}

  get closed(): boolean {
    return this.closing !== undefined;
  }

  status(): SystemSharedMemoryRegionStatus {
    return { name: this.name, key: this.key, offset: this.offset, byte_size: this.byteSize };
  }

  /**
   * Reads `length` bytes at `offset` inside the region into a new Buffer (the copy is the point: the
   * client may rewrite its memory at any time, and the core validates what it read). The caller has
   * checked the bounds against the region.
   */
  async read(offset: number, length: number): Promise<Buffer> {
    const out = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = await this.transfer('read', out, done, length - done, this.offset + offset + done);
      // Zero bytes before the end: the client truncated the object after registering it.
      if (n === 0) throw this.truncated();
      done += n;
    }
    return out;
  }

  private truncated(): NereidError {
    return invalidArg(
      `shared memory region '${shown(this.name)}' is smaller than registered: its object '${shown(this.key)}' was truncated`,
    );
  }

  /**
   * Writes `data` at `offset` inside the region (bounds checked by the caller against the registered
   * window). An object the client truncated since is refused, not grown back by the write (a pwrite past
   * the end of a tmpfs file extends it): its size is looked at first.
   */
  async write(offset: number, data: Buffer): Promise<void> {
    if (this.closing === undefined && data.length > 0) {
      let size: number;
      try {
        size = fstatSync(this.handle.fd).size;
      } catch (err) {
        throw internal(`failed to write shared memory region '${shown(this.name)}': ${errnoOf(err)}`, err);
      }
      if (size < this.offset + offset + data.length) throw this.truncated();
    }
    let done = 0;
    while (done < data.length) {
      const n = await this.transfer('write', data, done, data.length - done, this.offset + offset + done);
      if (n === 0) throw internal(`writing to shared memory region '${shown(this.name)}' made no progress`);
      done += n;
    }
  }

  private async transfer(
    kind: 'read' | 'write',
    buffer: Buffer,
    at: number,
    length: number,
    position: number,
  ): Promise<number> {
    if (this.closing !== undefined) {
      throw internal(`shared memory region '${shown(this.name)}' was closed while in use`);
    }
    const chunk = Math.min(length, MAX_SINGLE_TRANSFER);
    try {
      if (chunk <= SYNC_IO_LIMIT) {
        return kind === 'read'
          ? readSync(this.handle.fd, buffer, at, chunk, position)
          : writeSync(this.handle.fd, buffer, at, chunk, position);
      }
      if (kind === 'read') return (await this.handle.read(buffer, at, chunk, position)).bytesRead;
      return (await this.handle.write(buffer, at, chunk, position)).bytesWritten;
    } catch (err) {
      if (err instanceof NereidError) throw err;
      throw internal(`failed to ${kind} shared memory region '${shown(this.name)}': ${errnoOf(err)}`, err);
    }
  }

  /** Closes the descriptor once; FileHandle.close waits for transfers still running on it. */
  close(): Promise<void> {
    this.closing ??= this.handle.close();
    return this.closing;
  }
}
