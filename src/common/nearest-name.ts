/**
 * "Did you mean": the known name an unknown one most likely meant, for the errors of an unknown flag and
 * an unknown config.pbtxt field alike.
 */

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions from a to b. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    prev = row;
  }
  return prev[b.length];
}

/**
 * The candidate nearest to `name` by edit distance (case-insensitive), if it is within a third of the
 * name's length (at least 1, at most 3 edits), so a typo gets a suggestion and an unrelated word none.
 * Ties go to the candidate listed first.
 */
export function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  const lower = name.toLowerCase();
  for (const c of candidates) {
    const d = editDistance(lower, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** `; did you mean '<prefix><near>'?` or nothing. */
export function didYouMean(name: string, candidates: Iterable<string>, prefix = ''): string {
  const near = nearestName(name, candidates);
  return near === undefined ? '' : `; did you mean '${prefix}${near}'?`;
}
