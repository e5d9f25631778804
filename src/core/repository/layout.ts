/**
 * Reading a Triton model repository from disk: which folders are models, which are versions, which
 * config file applies, and a fingerprint that changes when a model folder changes (poll mode).
 *
 * Repository files are operator-owned but their content is treated as hostile: config files must be
 * regular files under a size cap, walks are bounded in depth and entry count and are loop-safe.
 * Symlinks are followed (deployments mount models and ConfigMaps through them), as Triton does.
 */
import { readdirSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import type { DirEntry, FileSystem, FolderView } from '../storage/filesystem.js';
import { LocalFileSystem, isHidden } from '../storage/local.js';
import { msg } from './messages.js';

// The local-disk readers moved to core/storage/local.ts (the local FileSystem); kept reachable from here.
export { fingerprintModel, isHidden, readConfigFile } from '../storage/local.js';

export const CONFIG_FILE = 'config.pbtxt';
export const CONFIGS_FOLDER = 'configs';
/** Folders Triton skips silently when looking for versions. */
const NON_VERSION_FOLDERS = new Set([CONFIGS_FOLDER, 'warmup', 'initial_state']);

export interface ListedModelFolder {
  readonly name: string;
  readonly repositoryPath: string;
  readonly modelDir: string;
}

export interface RepositoryScan {
  /** Models found in exactly one repository, by name. */
  readonly models: ReadonlyMap<string, ListedModelFolder>;
  /** Names found in two or more repositories (Triton refuses to load them). */
  readonly duplicates: ReadonlySet<string>;
  /** Repositories that could not be listed. */
  readonly errors: readonly { repositoryPath: string; message: string }[];
}

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

/** A repository root and what reads it (a local folder or a bucket prefix). */
export interface RepositoryRoot {
  readonly path: string;
  readonly fs: FileSystem;
}

function collect(
  roots: readonly RepositoryRoot[],
  list: (root: RepositoryRoot) => readonly DirEntry[],
): RepositoryScan {
  const models = new Map<string, ListedModelFolder>();
  const duplicates = new Set<string>();
  const errors: { repositoryPath: string; message: string }[] = [];
  for (const root of roots) {
    let entries;
    try {
      entries = list(root);
    } catch (err) {
      errors.push({ repositoryPath: root.path, message: errText(err) });
      continue;
    }
    for (const e of entries) {
      if (!e.isDir || isHidden(e.name)) continue;
      if (models.has(e.name) || duplicates.has(e.name)) {
        models.delete(e.name);
        duplicates.add(e.name);
        continue;
      }
      models.set(e.name, {
        name: e.name,
        repositoryPath: root.path,
        modelDir: root.fs.join(root.path, e.name),
      });
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

/** Lists a local folder synchronously. */
export function listDirsSync(dir: string): DirEntry[] {
  return readdirSync(dir, { withFileTypes: true }).map((d) => ({ name: d.name, isDir: dirFlagSync(dir, d) }));
}

/**
 * Synchronous scan, for the repository index (a request handler that must answer at once): local roots
 * are read from disk, object-store roots answer with `remote(root)` (their last listing).
 */
export function scanRepositoriesSync(
  roots: readonly (string | RepositoryRoot)[],
  remote?: (root: RepositoryRoot) => readonly DirEntry[],
): RepositoryScan {
  return collect(roots.map(asRoot), (root) => {
    if (!root.fs.remote) return listDirsSync(root.path);
    if (!remote) throw new Error(`'${root.path}' cannot be listed synchronously`);
    return remote(root);
  });
}

/** A bare path is a local root (tests, override copies). */
function asRoot(r: string | RepositoryRoot): RepositoryRoot {
  return typeof r === 'string' ? { path: r, fs: new LocalFileSystem(r) } : r;
}

/** Lists every root at once; `listed` receives each successful listing (the index keeps the remote ones). */
export async function scanRepositories(
  roots: readonly (string | RepositoryRoot)[],
  listed?: (root: RepositoryRoot, entries: readonly DirEntry[]) => void,
): Promise<RepositoryScan> {
  const all = roots.map(asRoot);
  const got = new Map<RepositoryRoot, readonly DirEntry[] | Error>();
  await Promise.all(
    all.map(async (r) => {
      try {
        const entries = await r.fs.list(r.path);
        got.set(r, entries);
        listed?.(r, entries);
      } catch (err) {
        got.set(r, err instanceof Error ? err : new Error(String(err)));
      }
    }),
  );
  return collect(all, (root) => {
    const entries = got.get(root);
    if (entries instanceof Error) throw entries;
    return entries ?? [];
  });
}

export interface VersionFolders {
  /** Ascending. */
  readonly versions: readonly number[];
  /** Folder names that look like versions but are not (leading zeros, non-numeric). */
  readonly ignored: readonly string[];
}

/** The version folders of a model folder. */
export async function versionFoldersOf(view: FolderView): Promise<VersionFolders> {
  const versions: number[] = [];
  const ignored: string[] = [];
  for (const e of await view.list()) {
    if (!e.isDir || isHidden(e.name) || NON_VERSION_FOLDERS.has(e.name)) continue;
    const v = parseVersionFolderName(e.name);
    if (v === undefined) ignored.push(e.name);
    else versions.push(v);
  }
  versions.sort((a, b) => a - b);
  return { versions, ignored };
}

export async function listVersionFolders(modelDir: string): Promise<VersionFolders> {
  return versionFoldersOf(await new LocalFileSystem(modelDir).openFolder(modelDir));
}

/** The config file of a model folder, relative: `configs/<name>.pbtxt` when named and present. */
export async function configFileOf(view: FolderView, modelConfigName: string): Promise<string> {
  if (modelConfigName !== '') {
    const custom = `${CONFIGS_FOLDER}/${modelConfigName}.pbtxt`;
    if (await view.exists(custom)) return custom;
  }
  return CONFIG_FILE;
}

/** `configs/<name>.pbtxt` when a config name is set and that file exists, else `config.pbtxt`. */
export async function configFilePath(modelDir: string, modelConfigName: string): Promise<string> {
  const view = await new LocalFileSystem(modelDir).openFolder(modelDir);
  return path.join(modelDir, ...(await configFileOf(view, modelConfigName)).split('/'));
}
