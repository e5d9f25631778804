/**
 * The local-disk FileSystem: a repository folder read in place (models load from it directly, nothing is
 * copied). Repository files are operator-owned but their content is treated as hostile: text files must be
 * regular files under a size cap, walks are bounded in depth and entry count and are loop-safe. Symlinks
 * are followed (deployments mount models and ConfigMaps through them), as Triton does, but a text file read
 * here (config.pbtxt) must really lie inside its model folder: a link out of it is refused before a read.
 */
import { constants as fsc, type BigIntStats } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { NereidError } from '../../common/errors.js';
import { confine, realFolder } from '../../common/confine.js';
import { pathExists } from '../../common/fs.js';
import type { DirEntry, FileSystem, FolderView, LocalFolder } from './filesystem.js';

const FINGERPRINT_MAX_DEPTH = 16;
const FINGERPRINT_MAX_ENTRIES = 50_000;

export const isHidden = (name: string): boolean => name.startsWith('.');

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Entries of a folder; a symlink counts as a folder when it points at one. */
export async function listDirs(dir: string): Promise<DirEntry[]> {
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
    return decodeConfigText(buf.subarray(0, filled), file);
  } finally {
    await handle.close();
  }
}

/** Strict UTF-8, with the message every store uses. */
export function decodeConfigText(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new NereidError('INVALID_ARG', `model configuration file '${file}' is not valid UTF-8`);
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

const local = (dir: string, rel: string): string => path.join(dir, ...rel.split('/'));

class LocalFolderView implements FolderView {
  constructor(readonly location: string) {}

  fingerprint(): Promise<string> {
    return fingerprintModel(this.location);
  }

  list(): Promise<DirEntry[]> {
    return listDirs(this.location);
  }

  exists(rel: string): Promise<boolean> {
    return pathExists(local(this.location, rel));
  }

  async readText(rel: string, maxBytes: number): Promise<string | undefined> {
    const file = local(this.location, rel);
    // Confined before any read: a config.pbtxt linking to /etc/shadow must not have a byte of it parsed,
    // since parse errors quote the tokens they stop at.
    const verdict = await confine(file, [this.location], [await realFolder(this.location)]);
    if (verdict !== 'inside') {
      throw new NereidError(
        'INVALID_ARG',
        `'${rel}' of model folder '${path.basename(this.location)}' leads outside the model folder through a symbolic link`,
      );
    }
    return readConfigFile(file, maxBytes);
  }

  locationOf(rel: string): string {
    return local(this.location, rel);
  }

  localize(): Promise<LocalFolder> {
    return Promise.resolve({ path: this.location, tempRoot: undefined });
  }
}

/** Local folders; also the file system of file-override copies (their root is a private temp folder). */
export class LocalFileSystem implements FileSystem {
  readonly remote = false;

  constructor(readonly root: string) {}

  join(dir: string, name: string): string {
    return path.join(dir, name);
  }

  list(dir: string): Promise<DirEntry[]> {
    return listDirs(dir);
  }

  async stat(p: string): Promise<'dir' | 'file' | undefined> {
    try {
      const s = await stat(p);
      return s.isDirectory() ? 'dir' : 'file';
    } catch {
      return undefined;
    }
  }

  openFolder(dir: string): Promise<FolderView> {
    return Promise.resolve(new LocalFolderView(dir));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
