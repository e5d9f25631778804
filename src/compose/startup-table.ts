/**
 * The model status table Triton prints at startup, drawn from the repository index. A cell may span
 * several lines: a reason's own line breaks (a Python traceback) start new lines inside its cell, and a line
 * wider than the Status column's limit wraps, so the borders stay straight whatever the reason holds.
 */
import type { RepositoryIndexEntry } from '../core/index.js';

/**
 * Widest the table gets before the Status column wraps: a terminal's width when the log is one; in a log
 * file no wrapping at all, so a one-line reason stays on one line as Triton prints it (log parsers and
 * the differential suite read it there).
 */
export const DEFAULT_TABLE_WIDTH = Number.POSITIVE_INFINITY;
const MIN_STATUS_WIDTH = 30;

export function modelTable(entries: readonly RepositoryIndexEntry[], width = DEFAULT_TABLE_WIDTH): string {
  const rows = entries
    .filter((e) => e.version !== undefined || e.state !== 'UNKNOWN')
    .map((e) => [e.name, e.version ?? '', e.state === 'READY' ? 'READY' : `${e.state}: ${e.reason}`]);
  return drawTable(['Model', 'Version', 'Status'], rows, width);
}

/** Draws rows under a header; the last column wraps so that the whole table fits `width` where it can. */
export function drawTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  width: number,
): string {
  const cells = rows.map((row) => row.map(cellLines));
  const last = header.length - 1;
  const natural = header.map((h, i) => Math.max(h.length, ...cells.map((r) => longest(r[i]))));
  // Borders and padding take 3 characters a column plus one.
  const others = natural.slice(0, last).reduce((sum, w) => sum + w + 3, 1);
  const limit = Math.max(MIN_STATUS_WIDTH, header[last].length, width - others - 3);
  const widths = natural.map((w, i) => (i === last ? Math.min(w, limit) : w));
  const wrapped = cells.map((row) => row.map((lines, i) => lines.flatMap((l) => wrapLine(l, widths[i]))));
  const rule = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+';
  const physical = (row: readonly (readonly string[])[]): string[] => {
    const height = Math.max(...row.map((lines) => lines.length));
    return Array.from(
      { length: height },
      (_, k) => '| ' + row.map((lines, i) => (lines[k] ?? '').padEnd(widths[i])).join(' | ') + ' |',
    );
  };
  return [rule, ...physical(header.map((h) => [h])), rule, ...wrapped.flatMap(physical), rule].join('\n');
}

/** A cell's lines: its own line breaks, tabs as spaces, trailing blank lines and line ends dropped. */
function cellLines(text: string): string[] {
  const lines = text
    .replace(/\t/g, '  ')
    .split(/\r?\n|\r/)
    .map((l) => l.trimEnd());
  while (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function longest(lines: readonly string[]): number {
  return Math.max(0, ...lines.map((l) => l.length));
}

/** Splits one line into pieces of at most `width` characters, at a space where there is one. */
function wrapLine(line: string, width: number): string[] {
  const pieces: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const cut = space > width / 2 ? space : width;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  pieces.push(rest);
  return pieces;
}
