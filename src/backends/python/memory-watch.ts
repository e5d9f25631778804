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
 */
import { readFile } from 'node:fs/promises';

/** How often a stub's resident memory is read (one small /proc read). */
export const WATCH_INTERVAL_MS = 100;

/** Resident memory of a process in bytes, or undefined when it cannot be read (gone, not Linux). */
export async function residentBytes(pid: number): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
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
  let stopped = false;
  let reading = false;
  const timer = setInterval(() => {
    if (reading || stopped) return;
    reading = true;
    void residentBytes(pid).then((rss) => {
      reading = false;
      if (stopped) return;
      if (rss === undefined) {
        stop();
        return;
      }
      if (rss > limitBytes) {
        stop();
        onExceeded(rss);
      }
    });
  }, intervalMs);
  // The watch must not keep a server (or a test) alive on its own.
  timer.unref();
  const stop = (): void => {
    stopped = true;
    clearInterval(timer);
  };
  return stop;
}
