/**
 * Load-time file overrides (`file:<version>/<path>` parameters of the load API). As in Triton, the
 * override files ARE the whole model folder: they are written to a private temporary directory (nothing
 * is copied from the repository) that lives until the versions loaded from it are unloaded.
 *
 * The paths come from the network: anything that could leave the model folder (`..`, `.`, absolute paths,
 * empty segments, backslashes, NUL) is refused with INVALID_ARG before a byte is written, and files are
 * created exclusively without following symlinks.
 */
import { constants as fsc } from 'node:fs';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { NereidError, invalidArg } from '../../common/errors.js';

const FILE_PREFIX = 'file:';
const MAX_OVERRIDE_FILES = 10_000;
const MAX_PATH_DEPTH = 32;

const invalidFile = (key: string, why: string): NereidError =>
  invalidArg(
    `Invalid file parameter '${FILE_PREFIX}${key}': ${why}, the path must stay within the model directory`,
  );

/**
 * Checks one override key (with or without its `file:` prefix) and returns the relative path inside the
 * model folder, `/`-separated.
 */
export function normalizeOverridePath(key: string): string {
  const rel = key.startsWith(FILE_PREFIX) ? key.slice(FILE_PREFIX.length) : key;
  if (rel === '') throw invalidFile(rel, 'empty path');
  if (rel.includes('\0')) throw invalidFile(rel.replace(/\0/g, '\\0'), 'NUL character in path');
  if (rel.includes('\\')) throw invalidFile(rel, 'backslash in path');
  if (rel.startsWith('/')) throw invalidFile(rel, 'absolute path');
  const segments = rel.split('/');
  if (segments.length > MAX_PATH_DEPTH) throw invalidFile(rel, 'path too deep');
  for (const s of segments) {
    if (s === '') throw invalidFile(rel, 'empty path segment');
    if (s === '.' || s === '..') throw invalidFile(rel, `'${s}' path segment`);
  }
  return segments.join('/');
}

export interface MaterializedModel {
  /** The private directory to remove when done; it plays the repository root. */
  readonly root: string;
  /** `<root>/<model name>`: the model folder the loader sees. */
  readonly modelDir: string;
}

/** Validates every path first, then writes the files. On failure nothing is left behind. */
export async function materializeOverrides(
  tempDirectory: string,
  modelName: string,
  files: ReadonlyMap<string, Buffer>,
): Promise<MaterializedModel> {
  if (files.size > MAX_OVERRIDE_FILES) {
    throw invalidArg(`too many file parameters (${files.size}, at most ${MAX_OVERRIDE_FILES})`);
  }
  const entries = [...files].map(([key, data]) => ({ rel: normalizeOverridePath(key), data }));
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.rel)) throw invalidArg(`duplicate file parameter '${FILE_PREFIX}${e.rel}'`);
    seen.add(e.rel);
  }
  entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));

  const root = await mkdtemp(path.join(tempDirectory, 'nereid-override-'));
  const modelDir = path.join(root, modelName);
  try {
    await mkdir(modelDir, { mode: 0o700 });
    for (const { rel, data } of entries) {
      const target = path.join(modelDir, ...rel.split('/'));
      try {
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ENOTDIR') {
          throw invalidArg(
            `Invalid file parameter '${FILE_PREFIX}${rel}', directory has been created as a file`,
          );
        }
        throw err;
      }
      let handle;
      try {
        handle = await open(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
          throw invalidArg(
            `Invalid file parameter '${FILE_PREFIX}${rel}', a directory has been created at its path`,
          );
        }
        throw err;
      }
      try {
        await handle.writeFile(data);
      } finally {
        await handle.close();
      }
    }
  } catch (err) {
    await removeTree(root);
    throw NereidError.from(err, 'INTERNAL');
  }
  return { root, modelDir };
}

export async function removeTree(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
