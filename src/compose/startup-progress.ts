/**
 * "Loading N of M" for a slow start: while the repository's models load at startup, one line every few
 * seconds says how many are ready, failed and still loading; when the start is done, one line with the
 * totals and the time. A start that loads in under the interval prints only the closing line.
 */
import type { RepositoryIndexEntry } from '../core/index.js';

export const STARTUP_PROGRESS_INTERVAL_MS = 5000;

export interface ModelCounts {
  readonly total: number;
  readonly ready: number;
  readonly failed: number;
  readonly loading: number;
}

/** Per model (not per version): ready when a version is READY, loading while one is LOADING, else failed. */
export function countModels(entries: readonly RepositoryIndexEntry[]): ModelCounts {
  const byName = new Map<string, RepositoryIndexEntry[]>();
  for (const e of entries) byName.set(e.name, [...(byName.get(e.name) ?? []), e]);
  let ready = 0;
  let failed = 0;
  let loading = 0;
  for (const versions of byName.values()) {
    if (versions.some((v) => v.state === 'LOADING')) loading++;
    else if (versions.some((v) => v.state === 'READY')) ready++;
    else if (versions.some((v) => v.state === 'UNAVAILABLE' && v.reason !== '')) failed++;
    else loading++; // found, not attempted yet: it is waiting for its turn
  }
  return { total: byName.size, ready, failed, loading };
}

/** Watches a startup; `stop()` ends the periodic lines and returns the closing one. */
export function watchStartup(
  index: () => readonly RepositoryIndexEntry[],
  report: (line: string) => void,
  intervalMs = STARTUP_PROGRESS_INTERVAL_MS,
  now: () => number = () => performance.now(),
): { stop: () => string } {
  const started = now();
  const secs = (): string => ((now() - started) / 1000).toFixed(1);
  const timer = setInterval(() => {
    let c: ModelCounts;
    try {
      c = countModels(index());
    } catch {
      return; // the repository cannot be read just now: the next tick tries again
    }
    if (c.loading === 0) return;
    const failed = c.failed > 0 ? `, ${c.failed} failed` : '';
    report(`loading models: ${c.ready} of ${c.total} ready${failed}, ${c.loading} loading (${secs()} s)`);
  }, intervalMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      let c: ModelCounts;
      try {
        c = countModels(index());
      } catch {
        return `startup done in ${secs()} s`;
      }
      const failed = c.failed > 0 ? ` (${c.failed} failed)` : '';
      return `${c.ready} of ${c.total} ${c.total === 1 ? 'model' : 'models'} ready in ${secs()} s${failed}`;
    },
  };
}
