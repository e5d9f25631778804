/**
 * Concurrency helpers of the repository manager.
 *
 * NameLocks serialises operations per model: an operation names every model it may touch (an ensemble's
 * members, its dependents) and gets them all at once, so two operations on overlapping models never
 * interleave and never deadlock. Waiters are served in arrival order per model; an operation on
 * unrelated models does not wait. `null` means every model (startup, poll cycles, shutdown).
 *
 * Limiter bounds how many loader calls run at once (--model-load-thread-count).
 */

type Release = () => void;

interface Waiter {
  readonly names: ReadonlySet<string> | null;
  readonly grant: () => void;
}

function overlaps(a: ReadonlySet<string> | null, b: ReadonlySet<string> | null): boolean {
  if (a === null || b === null) return true;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const n of small) if (large.has(n)) return true;
  return false;
}

export class NameLocks {
  private readonly held: (ReadonlySet<string> | null)[] = [];
  private readonly waiting: Waiter[] = [];

  /** Resolves with a release function once no earlier or running operation overlaps `names`. */
  acquire(names: Iterable<string> | null): Promise<Release> {
    const set = names === null ? null : new Set(names);
    return new Promise<Release>((resolve) => {
      this.waiting.push({
        names: set,
        grant: () => {
          this.held.push(set);
          let released = false;
          resolve(() => {
            if (released) return;
            released = true;
            this.held.splice(this.held.indexOf(set), 1);
            this.pump();
          });
        },
      });
      this.pump();
    });
  }

  /** Number of operations running or waiting (tests, diagnostics). */
  get pending(): number {
    return this.held.length + this.waiting.length;
  }

  private pump(): void {
    const blockedBefore: (ReadonlySet<string> | null)[] = [];
    for (let i = 0; i < this.waiting.length;) {
      const w = this.waiting[i];
      const blocked =
        this.held.some((h) => overlaps(h, w.names)) || blockedBefore.some((b) => overlaps(b, w.names));
      if (blocked) {
        blockedBefore.push(w.names);
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      w.grant();
    }
  }
}

export class Limiter {
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await fn();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    }
  }
}
