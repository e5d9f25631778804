/**
 * Measures what a loaded model costs in memory, for on-demand mode's budget (--model-memory-budget):
 * - a model whose instances run in child processes (Python stubs): the resident set (VmRSS) of each of
 *   those processes, read from /proc/<pid>/status when asked (cached for a second). RSS counts the shared
 *   libraries every stub maps, so it is conservative: the budget is never passed by sharing tricks.
 * - a model that runs in the server's process (onnxruntime sessions, JavaScript worker threads): the
 *   growth of the process's resident set across its load, measured with no other in-process load running
 *   at the same time (MeasureLock), never below 0.
 * Where /proc cannot be read (not Linux), every cost reads 0 and only --max-loaded-models limits.
 */
import { readFileSync } from 'node:fs';

/** Resident bytes of a process ('self' = this one), or undefined when /proc cannot tell. */
export function residentBytesOf(pid: number | 'self'): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** One at a time: in-process loads measured by the process's RSS must not overlap. */
export class MeasureLock {
  private tail: Promise<void> = Promise.resolve();

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => (done = resolve));
    await before;
    try {
      return await fn();
    } finally {
      done();
    }
  }
}

const CACHE_MS = 1000;

/** A loaded version's cost: its in-process growth plus its child processes' resident sets. */
export class VersionMemory {
  private cached = 0;
  private at = 0;

  constructor(
    /** Measured growth of the server's RSS across the load (0 for out-of-process models). */
    public inProcessBytes: number,
    /** The instances' child process ids now (a restarted stub has a new one). */
    private readonly pids: () => readonly (number | undefined)[],
  ) {}

  /** Bytes now (child processes re-read at most once a second). */
  bytes(): number {
    const now = Date.now();
    if (now - this.at < CACHE_MS) return this.cached;
    let total = this.inProcessBytes;
    for (const pid of this.pids()) {
      if (pid !== undefined) total += residentBytesOf(pid) ?? 0;
    }
    this.cached = total;
    this.at = now;
    return total;
  }
}
