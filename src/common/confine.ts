/**
 * Keeping paths that come from model configs inside the folders they may name. A config field that
 * becomes a path (default_model_filename, label_filename, a warmup input_data_file, EXECUTION_ENV_PATH)
 * is checked twice: lexically (after `..` and `.` are resolved as text it must still lie inside), and on
 * disk (where the operating system would really arrive, following every symbolic link, even a dangling
 * one, must lie inside one of the allowed roots). Callers then open the lexical path, which contains no
 * `..`, so the system follows links only forwards and reaches exactly what was checked.
 *
 * The order of the checks keeps errors from telling a client anything about the world outside: a path
 * that leaves is refused as leaving whether or not its target exists, and only a path that stays inside
 * can be reported as missing.
 */
import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';

/** Symbolic links followed at most while resolving one path (Linux's own limit is 40). */
const MAX_LINK_HOPS = 40;

/** True when `child` is `parent` or lies below it (both absolute and normalised). */
export function isWithin(child: string, parent: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep;
  return child.startsWith(prefix);
}

/**
 * Where the system would arrive opening the absolute path `p`: its real path when it exists; otherwise the
 * real path of its deepest existing ancestor joined with the rest, following a dangling link's text as
 * the system would. Never throws for a missing path.
 */
export async function realTarget(p: string, hops = 0): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    // Some part is missing (or unreadable): resolve the parent, then look at this name below it.
  }
  const parent = path.dirname(p);
  if (parent === p) return p;
  const realParent = await realTarget(parent, hops);
  const here = path.join(realParent, path.basename(p));
  let isLink = false;
  try {
    isLink = (await lstat(here)).isSymbolicLink();
  } catch {
    return here;
  }
  if (!isLink || hops >= MAX_LINK_HOPS) return here;
  let text: string;
  try {
    text = await readlink(here);
  } catch {
    return here;
  }
  return realTarget(path.resolve(realParent, text), hops + 1);
}

/** The real path of a folder (the folder itself when it cannot be resolved). */
export async function realFolder(dir: string): Promise<string> {
  try {
    return await realpath(dir);
  } catch {
    return path.resolve(dir);
  }
}

export type ConfinedVerdict =
  /** Lexically outside every root the text may name. */
  | 'escapes'
  /** Lexically inside, but on disk it leads elsewhere (through a symbolic link). */
  | 'leads-outside'
  | 'inside';

/**
 * Checks an absolute, lexically normalised `candidate`: it must lie within one of `lexicalRoots` as text,
 * and its real target within one of `realRoots` (real paths). Does not check that it exists.
 */
export async function confine(
  candidate: string,
  lexicalRoots: readonly string[],
  realRoots: readonly string[],
): Promise<ConfinedVerdict> {
  const lexical = path.resolve(candidate);
  if (!lexicalRoots.some((r) => isWithin(lexical, path.resolve(r)))) return 'escapes';
  const real = await realTarget(lexical);
  return realRoots.some((r) => isWithin(real, r)) ? 'inside' : 'leads-outside';
}

/**
 * Replaces the absolute `paths` (longest first) in a message by what a client may see: a path below one of
 * them loses the prefix (it reads relative to that folder), the folder itself becomes `replacement`. Used on
 * load errors so a client never learns where the server keeps its files.
 */
export function relativizePaths(message: string, paths: readonly string[], replacement = '.'): string {
  const sorted = [...new Set(paths.map((p) => p.replace(/\/+$/, '')).filter((p) => p.length > 0))].sort(
    (a, b) => b.length - a.length,
  );
  let out = message;
  for (const p of sorted) {
    const escaped = p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Only where a path starts (not inside a longer one) and, for the folder itself, where it ends.
    const start = `(?<![^\\s'"\`(\\[=:,])`;
    out = out.replace(new RegExp(`${start}${escaped}/+`, 'g'), '');
    out = out.replace(new RegExp(`${start}${escaped}(?![^\\s'"\`),;:\\]])`, 'g'), replacement);
  }
  return out;
}
