/** The model status table Triton prints at startup, drawn from the repository index. */
import type { RepositoryIndexEntry } from '../core/types.js';

export function modelTable(entries: readonly RepositoryIndexEntry[]): string {
  const rows = entries
    .filter((e) => e.version !== undefined || e.state !== 'UNKNOWN')
    .map((e) => [e.name, e.version ?? '', e.state === 'READY' ? 'READY' : `${e.state}: ${e.reason}`]);
  const header = ['Model', 'Version', 'Status'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+';
  const fmt = (r: string[]): string => '| ' + r.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  return [line, fmt(header), line, ...rows.map(fmt), line].join('\n');
}
