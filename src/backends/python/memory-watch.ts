/**
 * A watchdog over one stub process's resident memory (VmRSS in /proc/<pid>/status), so a Python model that
 * leaks cannot grow until the machine's OOM killer picks a victim (possibly the server). Resident memory is
 * what a leak costs; a virtual-memory limit (RLIMIT_AS) would also refuse the address space that numpy,
 * BLAS thread pools and frameworks reserve without using, and break healthy models.
 *
 * Sampling (every WATCH_INTERVAL_MS) lets a model overshoot for up to one interval; what it allocates in
 * that time is bounded by the machine, and the kernel's OOM killer then picks the largest process, the stub.
 * At one read a second a stub with a 300 MB limit was killed at 543 MiB (issue 33); ten reads a second
 * cut the overshoot of a steadily allocating model tenfold, at ten small /proc reads a second per stub.
 * Memory of processes the model starts itself is not counted. Where /proc cannot be read the watch ends.
 *
 * Each read is one pread() of a descriptor opened when the watch starts, on the event loop: a /proc read
 * never waits for a disk, and takes microseconds. fs/promises' readFile took four thread-pool trips (open,
 * fstat, read, close), so with five stubs the watch woke an idle server 200 times a second and cost its
 * thread pool ~4 % of a core on the 2-core test VM (issue 29 item 1, bench/README.md). The descriptor also
 * keeps naming the stub it was opened for, whatever process later reuses its pid. Every stub's watch reads
 * on the same shared tick (common/shared-ticker.ts): one wake-up per interval for all of them.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { everyTick } from '../../common/shared-ticker.js';

/** How often a stub's resident memory is read (one small /proc read). */
export const WATCH_INTERVAL_MS = 100;

/** VmRSS of a /proc/<pid>/status text, in bytes. */
function vmRss(text: string): number | undefined {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** /proc/<pid>/status is about 1.5 KB; VmRSS sits in its first kilobyte. */
const STATUS_BYTES = 4096;

/** Reads the status file behind `fd` from its start (procfs regenerates it); undefined on any failure. */
function readRss(fd: number, buf: Buffer): number | undefined {
  try {
    const n = readSync(fd, buf, 0, buf.length, 0);
    return vmRss(buf.toString('latin1', 0, n));
  } catch {
    return undefined;
  }
}

function openStatus(pid: number): number | undefined {
  try {
    return openSync(`/proc/${pid}/status`, 'r');
  } catch {
    return undefined;
  }
}

/** Resident memory of a process in bytes, or undefined when it cannot be read (gone, not Linux). */
export function residentBytes(pid: number): Promise<number | undefined> {
  const fd = openStatus(pid);
  if (fd === undefined) return Promise.resolve(undefined);
  try {
    return Promise.resolve(readRss(fd, Buffer.allocUnsafe(STATUS_BYTES)));
  } finally {
    closeSync(fd);
  }
}

/**
 * Calls `onExceeded` (once) when process `pid` holds more than `limitBytes` resident. Returns stop().
 * A limit of 0 watches nothing.
 */
export function watchMemory(
  pid: number | undefined,
  limitBytes: number,
  onExceeded: (rssBytes: number) => void,
  intervalMs = WATCH_INTERVAL_MS,
): () => void {
  if (pid === undefined || limitBytes <= 0) return () => undefined;
  let fd = openStatus(pid);
  if (fd === undefined) return () => undefined;
  const buf = Buffer.allocUnsafe(STATUS_BYTES);
  const stopTick = everyTick(intervalMs, () => {
    if (fd === undefined) return;
    const rss = readRss(fd, buf);
    if (rss === undefined) {
      stop();
      return;
    }
    if (rss > limitBytes) {
      stop();
      onExceeded(rss);
    }
  });
  // (The shared tick is unref'd: the watch does not keep a server, or a test, alive on its own.)
  const stop = (): void => {
    stopTick();
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };
  return stop;
}
