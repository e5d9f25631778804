/**
 * Watch mode's eyes (`--watch`): one non-recursive fs.watch per folder of the local repositories, so an
 * edit, a new file or a new model folder is noticed at once instead of at the next poll. It does not
 * decide what changed: after a short quiet period it re-syncs its own watchers (new folders, removed ones)
 * and calls onChange, which asks the poller for a poll; the poll's fingerprints decide what reloads.
 *
 * The repository is hostile, so the watchers are bounded: at most `maxDirectories` folders (breadth-first,
 * so the repository roots and the model folders come first; a warning names what is left to the periodic
 * poll), at most WATCH_MAX_DEPTH levels deep, each folder once however many symlinks lead to it (a loop
 * ends there). Hidden names are ignored, as the fingerprint ignores them (editor swap files).
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../common/logger.js';
import { isHidden } from '../storage/local.js';

/** Folder levels below a repository root that are watched (the fingerprint walks as deep). */
export const WATCH_MAX_DEPTH = 16;
/** Quiet time after the last event before the poll: an editor's save is several events. */
export const WATCH_DEBOUNCE_MS = 100;
/** A folder that never goes quiet (a file being copied) still gets a poll this often. */
export const WATCH_MAX_WAIT_MS = 1000;

export interface WatcherOptions {
  /** Local repository roots (absolute paths). */
  readonly roots: readonly string[];
  readonly maxDirectories: number;
  /** Called once per burst of changes, after the watchers were re-synced. */
  readonly onChange: () => void;
  readonly log: Logger;
  readonly debounceMs?: number;
  readonly maxWaitMs?: number;
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class RepositoryWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private burstStart = 0;
  private syncChain: Promise<void> = Promise.resolve();
  private closed = false;
  private limited = false;
  private watchFailed = false;

  constructor(private readonly options: WatcherOptions) {}

  /** Folders watched now. */
  get size(): number {
    return this.watchers.size;
  }

  /** Opens the first watchers; resolves once they are in place. */
  start(): Promise<void> {
    return this.sync();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Brings the watchers in line with the folders on disk; runs one at a time. */
  sync(): Promise<void> {
    this.syncChain = this.syncChain.then(() => this.doSync());
    return this.syncChain;
  }

  private onEvent(filename: string | null): void {
    if (this.closed) return;
    if (filename && isHidden(path.basename(filename))) return;
    const now = Date.now();
    if (this.timer) clearTimeout(this.timer);
    else this.burstStart = now;
    const { debounceMs = WATCH_DEBOUNCE_MS, maxWaitMs = WATCH_MAX_WAIT_MS } = this.options;
    const wait = Math.max(0, Math.min(debounceMs, this.burstStart + maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sync().then(
        () => {
          if (!this.closed) this.options.onChange();
        },
        (err: unknown) => this.options.log.error(`--watch: ${errText(err)}`),
      );
    }, wait);
    this.timer.unref();
  }

  private async doSync(): Promise<void> {
    if (this.closed) return;
    const wanted = await this.walk();
    if (this.closed) return;
    for (const [dir, w] of this.watchers) {
      if (!wanted.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      let w: FSWatcher;
      try {
        w = watch(dir, { persistent: false }, (_event, filename) => this.onEvent(filename));
      } catch (err) {
        // Out of inotify watches (ENOSPC), a folder gone since the walk, no permission: say so once.
        if (!this.watchFailed) {
          this.options.log.warn(
            `--watch: cannot watch '${dir}' (${errText(err)}); changes there are seen by the periodic poll (--repository-poll-secs) only`,
          );
        }
        this.watchFailed = true;
        continue;
      }
      w.on('error', () => {
        // The folder went away (or the watch broke): drop it and look again.
        w.close();
        if (this.watchers.get(dir) === w) this.watchers.delete(dir);
        this.onEvent(null);
      });
      this.watchers.set(dir, w);
    }
  }

  /** The folders to watch: breadth-first from the roots, bounded in count and depth, each folder once. */
  private async walk(): Promise<Set<string>> {
    const { roots, maxDirectories, log } = this.options;
    const wanted = new Set<string>();
    const seen = new Set<string>();
    let queue = roots.map((r) => r);
    let limited = false;
    for (let depth = 0; queue.length > 0 && !limited; depth++) {
      const next: string[] = [];
      for (const dir of queue) {
        let s;
        try {
          s = await stat(dir, { bigint: true });
        } catch {
          continue;
        }
        if (!s.isDirectory()) continue;
        const key = `${s.dev}:${s.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (wanted.size >= maxDirectories) {
          limited = true;
          break;
        }
        wanted.add(dir);
        if (depth >= WATCH_MAX_DEPTH) continue;
        let entries;
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch {
          continue;
        }
        for (const e of entries) {
          if (isHidden(e.name)) continue;
          if (e.isDirectory() || e.isSymbolicLink()) next.push(path.join(dir, e.name));
        }
      }
      queue = next;
    }
    if (limited && !this.limited) {
      log.warn(
        `--watch: the model repositories have more than ${maxDirectories} folders (--watch-max-directories); changes in the others are seen by the periodic poll (--repository-poll-secs) only`,
      );
    }
    this.limited = limited;
    return wanted;
  }
}
