/**
 * Load-time file overrides (`file:<version>/<path>` parameters of the load API). As in Triton, the
 * override files ARE the whole model folder: they are written to a private temporary directory (nothing
 * is copied from the repository) that lives until the versions loaded from it are unloaded.
 *
 * The paths come from the network: anything that could leave the model folder (`..`, `.`, absolute paths,
 * empty segments, backslashes, NUL) or that no file system takes (a name over 255 bytes, a path over
 * 1024) is refused with INVALID_ARG before a byte is written, and files are created exclusively without
 * following symlinks. Errors name the file parameter, never the private directory it was written to.
 */
import { constants as fsc } from 'node:fs';
import { lstat, mkdir, mkdtemp, open, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { NereidError, invalidArg } from '../../common/errors.js';

const FILE_PREFIX = 'file:';
const MAX_OVERRIDE_FILES = 10_000;
const MAX_PATH_DEPTH = 32;
/** Linux's NAME_MAX: longer names fail with ENAMETOOLONG on every common file system. */
const MAX_NAME_BYTES = 255;
/** Well inside PATH_MAX (4096) once the temporary directory and the model name are in front. */
const MAX_PATH_BYTES = 1024;

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
  if (Buffer.byteLength(rel) > MAX_PATH_BYTES) {
    throw invalidFile(shorten(rel), `path longer than ${MAX_PATH_BYTES} bytes`);
  }
  const segments = rel.split('/');
  if (segments.length > MAX_PATH_DEPTH) throw invalidFile(rel, 'path too deep');
  for (const s of segments) {
    if (s === '') throw invalidFile(rel, 'empty path segment');
    if (s === '.' || s === '..') throw invalidFile(rel, `'${s}' path segment`);
    if (Buffer.byteLength(s) > MAX_NAME_BYTES) {
      throw invalidFile(shorten(rel), `a file or folder name longer than ${MAX_NAME_BYTES} bytes`);
    }
  }
  return segments.join('/');
}

/** A long path as messages show it: its start and its length. */
function shorten(rel: string): string {
  return rel.length <= 64 ? rel : `${rel.slice(0, 48)}… (${Buffer.byteLength(rel)} bytes)`;
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

  if (Buffer.byteLength(modelName) > MAX_NAME_BYTES) {
    throw invalidArg(`model name longer than ${MAX_NAME_BYTES} bytes cannot be loaded with file parameters`);
  }
  let root: string;
  try {
    root = await mkdtemp(path.join(tempDirectory, `${OVERRIDE_PREFIX}${process.pid}-`));
  } catch (err) {
    throw new NereidError(
      'INTERNAL',
      `failed to create a private folder for the file parameters of model '${modelName}': ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
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
    if (err instanceof NereidError) throw err;
    // A file-system error names the private directory: say what failed without it.
    const code = (err as NodeJS.ErrnoException).code;
    throw new NereidError(
      code === 'ENAMETOOLONG' ? 'INVALID_ARG' : 'INTERNAL',
      `failed to write the file parameters of model '${modelName}': ${code ?? 'error'}`,
    );
  }
  return { root, modelDir };
}

export async function removeTree(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Private override folders are `<temp>/nereid-override-<pid>-XXXXXX`: the pid says whose they are. */
export const OVERRIDE_PREFIX = 'nereid-override-';
const OWNED_NAME = /^nereid-override-(\d+)-[A-Za-z0-9]{6}$/;

/** Whether a process with this id exists (EPERM: it does, another user's). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes override folders a server that is gone left behind (a crash, a SIGKILL: the model code it was
 * sent stays on disk otherwise). Only folders named with a pid that no process has any more, that are real
 * folders (not links) and belong to this user are removed; a folder of a live server, of another user or of
 * the old unnamed form is left alone. Returns the folders removed.
 */
export async function removeStaleOverrides(tempDirectory: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(tempDirectory);
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const removed: string[] = [];
  for (const name of names) {
    const m = OWNED_NAME.exec(name);
    if (m === null) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || processExists(pid)) continue;
    const dir = path.join(tempDirectory, name);
    try {
      const st = await lstat(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      await removeTree(dir);
      removed.push(dir);
    } catch {
      // Gone meanwhile, or not ours to remove: nothing to do.
    }
  }
  return removed;
}
