/**
 * The system shared-memory extension's registry: register / unregister / status of named regions, and
 * the bounds-checked lookup requests use. Semantics and texts follow Triton's SharedMemoryManager
 * (src/shared_memory_manager.cc): a name registers once (ALREADY_EXISTS); unregistering an unknown name is
 * a no-op; a region in use when unregistered stays until its last request lets go; offsets and sizes are
 * checked against the region with size_t arithmetic, so overflowing values get Triton's messages.
 * Everything is refused (UNSUPPORTED) unless the server runs with --allow-client-shm=true; status stays
 * readable, as in Triton.
 */
import { alreadyExists, invalidArg, notFound, unavailable, unsupported } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { SystemSharedMemoryRegionStatus } from '../types.js';
import { MAX_REGION_NAME_LENGTH, shmObjectName, shown } from './key.js';
import { SHM_DIR, ShmRegion, openShmObject } from './region.js';

/** Triton's text (src/common.h kClientShmDisabledErrorStr). */
export const CLIENT_SHM_DISABLED =
  "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

/** Each registered region holds one file descriptor; this bounds what clients can make the server hold. */
export const DEFAULT_MAX_REGIONS = 1024;

const SIZE_MAX = (1n << 64n) - 1n;

export interface SharedMemoryManagerOptions {
  /** `--allow-client-shm`. */
  readonly allowClientShm: boolean;
  readonly maxRegions?: number;
  /** Where the shm objects live; only tests change it. */
  readonly dir?: string;
  readonly log?: Logger;
}

/** A bounds-checked slice of a region held by one request; give it back with release(). */
export interface ShmSlice {
  readonly region: ShmRegion;
  /** Offset inside the region. */
  readonly offset: number;
  readonly byteSize: number;
}

/**
 * `n` as Triton's size_t arithmetic sees it: a negative (gRPC int64) value wraps around; a value that
 * was rounded up to 2^64 or beyond stays the largest. Undefined if not an integer.
 */
function asSizeT(n: number): bigint | undefined {
  if (!Number.isInteger(n)) return undefined;
  const b = BigInt(n);
  if (b < 0n) return b < -(1n << 63n) ? 1n << 63n : b + (1n << 64n);
  return b > SIZE_MAX ? SIZE_MAX : b;
}

const isSize = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

export class SystemSharedMemoryManager {
  private readonly regions = new Map<string, ShmRegion>();
  /** Names whose registration is opening its object right now. */
  private readonly pending = new Set<string>();
  private readonly maxRegions: number;
  private readonly dir: string;
  private closed = false;

  constructor(private readonly options: SharedMemoryManagerOptions) {
    this.maxRegions = options.maxRegions ?? DEFAULT_MAX_REGIONS;
    this.dir = options.dir ?? SHM_DIR;
  }

  get allowed(): boolean {
    return this.options.allowClientShm;
  }

  /** Throws UNSUPPORTED with Triton's text unless client shared memory is enabled. */
  requireAllowed(): void {
    if (!this.options.allowClientShm) throw unsupported(CLIENT_SHM_DISABLED);
  }

  /**
   * Every region sorted by name (Triton keeps them in a std::map), or the one named (NOT_FOUND if
   * unknown). Allowed even when client shm is disabled.
   */
  status(name?: string): SystemSharedMemoryRegionStatus[] {
    if (name === undefined || name === '') {
      return [...this.regions.values()]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((r) => r.status());
    }
    const region = this.regions.get(name);
    if (!region) throw notFound(`Unable to find system shared memory region: '${shown(name)}'`);
    return [region.status()];
  }

  async register(name: string, key: string, offset: number, byteSize: number): Promise<void> {
    this.requireAllowed();
    if (name === '') {
      throw invalidArg("'region name' is necessary to register system shared memory region");
    }
    if (name.length > MAX_REGION_NAME_LENGTH) {
      throw invalidArg(
        `shared memory region name is too long (${name.length} characters, at most ${MAX_REGION_NAME_LENGTH})`,
      );
    }
    const object = shmObjectName(name, key);
    if (this.regions.has(name) || this.pending.has(name)) {
      throw alreadyExists(`shared memory region '${shown(name)}' already in manager`);
    }
    const badArgs = (): Error =>
      invalidArg(`failed to register shared memory region '${shown(name)}': invalid args`);
    if (!isSize(offset) || !isSize(byteSize)) throw badArgs();
    if (this.closed) throw unavailable('the server is shutting down');
    if (this.regions.size + this.pending.size >= this.maxRegions) {
      throw unavailable(
        `failed to register shared memory region '${shown(name)}': ${this.maxRegions} regions are registered ` +
          'already; unregister some first',
      );
    }

    this.pending.add(name);
    try {
      const { handle, size } = await openShmObject(key, object, this.dir);
      // Both are safe integers, so the sum is exact or beyond 2^53 — either way the comparison holds.
      if (offset + byteSize > size || this.closed) {
        await handle.close().catch(() => undefined);
        throw this.closed ? unavailable('the server is shutting down') : badArgs();
      }
      this.regions.set(name, new ShmRegion(name, key, offset, byteSize, handle));
    } finally {
      this.pending.delete(name);
    }
  }

  /** name undefined or '' = every region. Unknown names are a no-op; regions in use go when released. */
  async unregister(name?: string): Promise<void> {
    this.requireAllowed();
    const targets =
      name === undefined || name === ''
        ? [...this.regions.values()]
        : [this.regions.get(name)].filter((r): r is ShmRegion => r !== undefined);
    const closing: Promise<void>[] = [];
    for (const region of targets) {
      if (region.users > 0) {
        region.awaitingUnregister = true;
        continue;
      }
      this.regions.delete(region.name);
      closing.push(region.close());
    }
    await Promise.all(closing);
  }

  /**
   * Looks up `byteSize` bytes at `offset` inside region `name` for one tensor of a request and counts the
   * request as a user of the region until release(). Triton's checks and messages (GetMemoryInfo).
   */
  acquire(name: string, offset: number, byteSize: number): ShmSlice {
    const region = this.regions.get(name);
    if (!region) throw notFound(`Unable to find shared memory region: '${shown(name)}'`);
    const off = asSizeT(offset);
    const size = asSizeT(byteSize);
    if (off === undefined || off >= BigInt(region.byteSize)) {
      throw invalidArg(`Invalid offset for shared memory region: '${shown(name)}'`);
    }
    if (size === undefined) {
      throw invalidArg(`Invalid byte size for shared memory region: '${shown(name)}'`);
    }
    if (size > SIZE_MAX - off) {
      throw invalidArg(
        `Integer overflow detected: byte_size (${size}) + offset (${off}) exceeds maximum value (${SIZE_MAX}) ` +
          `for region '${shown(name)}'`,
      );
    }
    if (off + size > BigInt(region.byteSize)) {
      throw invalidArg(`Invalid offset + byte size for shared memory region: '${shown(name)}'`);
    }
    region.users++;
    return { region, offset: Number(off), byteSize: Number(size) };
  }

  /** Gives a slice back; the last user of a region unregistered meanwhile closes it. */
  release(slice: ShmSlice): void {
    const region = slice.region;
    region.users--;
    if (region.users > 0 || !region.awaitingUnregister) return;
    if (this.regions.get(region.name) === region) this.regions.delete(region.name);
    region.close().catch((err: unknown) => {
      this.options.log?.warn(`closing shared memory region '${shown(region.name)}' failed: ${String(err)}`);
    });
  }

  /** Server stop: refuses new registrations and closes every descriptor (running transfers finish first). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.regions.values()];
    this.regions.clear();
    await Promise.all(all.map((r) => r.close().catch(() => undefined)));
  }

  /** Whether a region of this name is registered (or being registered): names are shared with CUDA. */
  has(name: string): boolean {
    return this.regions.has(name) || this.pending.has(name);
  }

  /** Registered regions (tests and diagnostics). */
  get size(): number {
    return this.regions.size;
  }
}
