/**
 * Preload for bench/c1-tail.sh (`node --import <this file's dist/ URL> bin/nereid.js ...`): records every
 * garbage collection the server's main thread runs (perf_hooks 'gc' entries) as `start_ns duration_ns kind`
 * lines on the process.hrtime clock, the clock of the server's trace timestamps, so that a request's
 * trace can be matched with the collections that ran during it. The lines are written to $NEREID_GC_LOG
 * when the process exits (or on SIGUSR2).
 */
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';

const out = process.env.NEREID_GC_LOG;
if (out !== undefined && out !== '') {
  // performance.now() counts from the same monotonic clock as hrtime, from a fixed origin.
  const originNs = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
  const lines: string[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
      const start = originNs + BigInt(Math.round(e.startTime * 1e6));
      lines.push(`${start} ${Math.round(e.duration * 1e6)} ${kind}`);
    }
  }).observe({ entryTypes: ['gc'] });
  const write = (): void => writeFileSync(out, lines.join('\n') + '\n');
  process.on('exit', write);
  process.on('SIGUSR2', write);
}
