/**
 * Object keys are names chosen by whoever can write to the bucket, so they are hostile input: a key below
 * a model folder becomes a file path inside the local copy only if every segment is a plain name. Keys
 * with `..` or `.` segments, a leading `/`, empty segments (`a//b`), backslashes, NUL or other control
 * characters, or too many levels are refused, naming the key — never silently skipped, since a model with
 * a file missing would load wrongly.
 */
import { invalidArg, type NereidError } from '../../common/errors.js';

/** Deepest relative path accepted below a model folder. */
export const MAX_KEY_DEPTH = 32;
/** Longest path segment (most local file systems stop at 255 bytes). */
const MAX_SEGMENT_BYTES = 255;

const refuse = (key: string, where: string, why: string): NereidError =>
  invalidArg(
    `refusing object key '${printable(key)}' in ${where}: ${why}; object keys below a model folder must be relative paths that stay inside it`,
  );

/** A key as it may be printed: control characters escaped, length capped. */
export function printable(key: string): string {
  const s = key.replace(
    /[\u0000-\u001f\u007f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return s.length > 300 ? `${s.slice(0, 300)}...` : s;
}

/**
 * Checks the part of a key below a model folder (`rel`, without a trailing slash) and returns its
 * segments. `key` and `where` are for the message only.
 */
export function checkRelativeKey(rel: string, key: string, where: string): string[] {
  if (rel === '') throw refuse(key, where, 'empty name');
  if (rel.startsWith('/')) throw refuse(key, where, 'absolute path');
  if (rel.includes('\\')) throw refuse(key, where, 'backslash in name');
  if (/[\u0000-\u001f\u007f]/.test(rel)) throw refuse(key, where, 'control character in name');
  const segments = rel.split('/');
  if (segments.length > MAX_KEY_DEPTH) throw refuse(key, where, `more than ${MAX_KEY_DEPTH} levels`);
  for (const s of segments) {
    if (s === '') throw refuse(key, where, 'empty path segment');
    if (s === '.' || s === '..') throw refuse(key, where, `'${s}' path segment`);
    if (Buffer.byteLength(s) > MAX_SEGMENT_BYTES) throw refuse(key, where, 'path segment too long');
  }
  return segments;
}

/** A folder or file name as listed directly under a folder: one plain segment, or undefined when not. */
export function plainName(name: string): string | undefined {
  if (name === '' || name === '.' || name === '..') return undefined;
  if (/[\\/\u0000-\u001f\u007f]/.test(name)) return undefined;
  return name;
}
