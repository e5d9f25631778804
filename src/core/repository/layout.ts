/**
 * Reading a Triton model repository from disk: which folders are models, which are versions, which
 * config file applies, and a fingerprint that changes when a model folder changes (poll mode).
 *
 * Repository files are operator-owned but their content is treated as hostile: config files must be
 * regular files under a size cap, walks are bounded in depth and entry count and are loop-safe.
 * Symlinks are followed (deployments mount models and ConfigMaps through them), as Triton does.
 */
import { pathExists } from '../../common/fs.js';
import { constants as fsc, readdirSync, statSync, type BigIntStats, type Dirent } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { NereidError } from '../../common/errors.js';
import { msg } from './messages.js';

export const CONFIG_FILE = 'config.pbtxt';
export const CONFIGS_FOLDER = 'configs';
/** Folders Triton skips silently when looking for versions. */
const NON_VERSION_FOLDERS = new Set([CONFIGS_FOLDER, 'warmup', 'initial_state']);
const FINGERPRINT_MAX_DEPTH = 16;
const FINGERPRINT_MAX_ENTRIES = 50_000;

export interface ModelFolder {
  readonly name: string;
  readonly repositoryPath: string;
  readonly modelDir: string;
}

export interface RepositoryScan {
  /** Models found in exactly one repository, by name. */
  readonly models: ReadonlyMap<string, ModelFolder>;
  /** Names found in two or more repositories (Triton refuses to load them). */
  readonly duplicates: ReadonlySet<string>;
  /** Repositories that could not be listed. */
  readonly errors: readonly { repositoryPath: string; message: string }[];
}

export const isHidden = (name: string): boolean => name.startsWith('.');

/** A version folder name: decimal digits, no leading zeros (`0` itself is a valid version). */
export function parseVersionFolderName(name: string): number | undefined {
  if (!/^(0|[1-9][0-9]*)$/.test(name)) return undefined;
  const v = Number(name);
  return Number.isSafeInteger(v) ? v : undefined;
}

/**
 * The name checks Triton applies to a load request (trimmed; `..` and `/` rejected). We also reject `.`,
 * backslashes and NUL, which could only ever name the repository itself or nothing at all.
 */
export function validateModelName(name: string): void {
  const trimmed = name.trim();
  if (trimmed === '') throw msg.emptyModelName();
  if (
    trimmed === '..' ||
    trimmed === '.' ||
    trimmed.includes('/') ||
    trimmed.includes('\\') ||
    trimmed.includes('\0')
  ) {
    throw msg.traversalModelName(name);
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function collect(
  roots: readonly string[],
  list: (root: string) => { name: string; isDir: boolean }[],
): RepositoryScan {
  const models = new Map<string, ModelFolder>();
  const duplicates = new Set<string>();
  const errors: { repositoryPath: string; message: string }[] = [];
  for (const root of roots) {
    let entries;
    try {
      entries = list(root);
    } catch (err) {
      errors.push({ repositoryPath: root, message: errText(err) });
      continue;
    }
    for (const e of entries) {
      if (!e.isDir || isHidden(e.name)) continue;
      if (models.has(e.name) || duplicates.has(e.name)) {
        models.delete(e.name);
        duplicates.add(e.name);
        continue;
      }
      models.set(e.name, { name: e.name, repositoryPath: root, modelDir: path.join(root, e.name) });
    }
  }
  return { models, duplicates, errors };
}

function dirFlagSync(dir: string, d: Dirent): boolean {
  if (d.isDirectory()) return true;
  if (!d.isSymbolicLink()) return false;
  try {
    return statSync(path.join(dir, d.name)).isDirectory();
  } catch {
    return false;
  }
}

/** Synchronous scan, for the repository index (a request handler that must answer from disk). */
export function scanRepositoriesSync(roots: readonly string[]): RepositoryScan {
  return collect(roots, (root) =>
    readdirSync(root, { withFileTypes: true }).map((d) => ({ name: d.name, isDir: dirFlagSync(root, d) })),
  );
}

async function listDirs(dir: string): Promise<{ name: string; isDir: boolean }[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return Promise.all(
    entries.map(async (d) => {
      if (d.isDirectory()) return { name: d.name, isDir: true };
      if (!d.isSymbolicLink()) return { name: d.name, isDir: false };
      try {
        return { name: d.name, isDir: (await stat(path.join(dir, d.name))).isDirectory() };
      } catch {
        return { name: d.name, isDir: false };
      }
    }),
  );
}

export async function scanRepositories(roots: readonly string[]): Promise<RepositoryScan> {
  const listed = new Map<string, { name: string; isDir: boolean }[] | Error>();
  await Promise.all(
    roots.map(async (r) => {
      try {
        listed.set(r, await listDirs(r));
      } catch (err) {
        listed.set(r, err instanceof Error ? err : new Error(String(err)));
      }
    }),
  );
  return collect(roots, (root) => {
    const got = listed.get(root);
    if (got instanceof Error) throw got;
    return got ?? [];
  });
}

export interface VersionFolders {
  /** Ascending. */
  readonly versions: readonly number[];
  /** Folder names that look like versions but are not (leading zeros, non-numeric). */
  readonly ignored: readonly string[];
}

export async function listVersionFolders(modelDir: string): Promise<VersionFolders> {
  const versions: number[] = [];
  const ignored: string[] = [];
  for (const e of await listDirs(modelDir)) {
    if (!e.isDir || isHidden(e.name) || NON_VERSION_FOLDERS.has(e.name)) continue;
    const v = parseVersionFolderName(e.name);
    if (v === undefined) ignored.push(e.name);
    else versions.push(v);
  }
  versions.sort((a, b) => a - b);
  return { versions, ignored };
}

/** `configs/<name>.pbtxt` when a config name is set and that file exists, else `config.pbtxt`. */
export async function configFilePath(modelDir: string, modelConfigName: string): Promise<string> {
  if (modelConfigName !== '') {
    const custom = path.join(modelDir, CONFIGS_FOLDER, `${modelConfigName}.pbtxt`);
    if (await pathExists(custom)) return custom;
  }
  return path.join(modelDir, CONFIG_FILE);
}

/**
 * Reads a config file as UTF-8 text; undefined when it does not exist. Refuses anything but a regular
 * file (a FIFO would block, a device never ends) and anything larger than `maxBytes`.
 */
export async function readConfigFile(file: string, maxBytes: number): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(file, fsc.O_RDONLY | fsc.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new NereidError('INTERNAL', `failed to open text file for read ${file}: ${errText(err)}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) {
      throw new NereidError('INVALID_ARG', `model configuration '${file}' is not a regular file`);
    }
    const tooLarge = (): NereidError =>
      new NereidError(
        'INVALID_ARG',
        `model configuration file '${file}' exceeds the maximum size of ${maxBytes} bytes`,
      );
    if (info.size > maxBytes) throw tooLarge();
    // Read at most one byte past the cap: the file may grow between stat and read.
    const buf = Buffer.alloc(Math.min(maxBytes + 1, Math.max(info.size, 0) + 1));
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, filled, buf.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled === buf.length) {
        if (filled > maxBytes) throw tooLarge();
        break;
      }
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(0, filled));
    } catch {
      throw new NereidError('INVALID_ARG', `model configuration file '${file}' is not valid UTF-8`);
    }
  } finally {
    await handle.close();
  }
}

/**
 * A digest of everything under a model folder (paths, types, sizes, inode numbers, mtimes, ctimes), so
 * poll mode reloads a model when any of its files changes, is replaced, added or removed. Hidden
 * entries do not count (editor swap files would otherwise trigger reloads). Symlinks are followed; a
 * directory reached twice (a loop) is listed once.
 */
export async function fingerprintModel(modelDir: string): Promise<string> {
  const lines: string[] = [];
  const seenDirs = new Set<string>();
  const line = (rel: string, s: BigIntStats): string =>
    [rel, s.isDirectory() ? 'd' : s.isFile() ? 'f' : 'o', s.size, s.ino, s.mtimeNs, s.ctimeNs].join('\0');

  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    if (depth > FINGERPRINT_MAX_DEPTH || lines.length >= FINGERPRINT_MAX_ENTRIES) return;
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => !isHidden(n)).sort();
    } catch {
      lines.push(`${rel}\0unreadable`);
      return;
    }
    for (const name of names) {
      if (lines.length >= FINGERPRINT_MAX_ENTRIES) return;
      const full = path.join(dir, name);
      const childRel = rel === '' ? name : `${rel}/${name}`;
      let s: BigIntStats;
      try {
        s = await stat(full, { bigint: true });
      } catch {
        lines.push(`${childRel}\0missing`);
        continue;
      }
      lines.push(line(childRel, s));
      if (s.isDirectory()) {
        const key = `${s.dev}:${s.ino}`;
        if (seenDirs.has(key)) continue;
        seenDirs.add(key);
        await walk(full, childRel, depth + 1);
      }
    }
  };

  const root = await stat(modelDir, { bigint: true });
  seenDirs.add(`${root.dev}:${root.ino}`);
  await walk(modelDir, '', 0);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}
