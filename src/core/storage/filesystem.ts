/**
 * The one filesystem interface the model repository reads through, so the repository code does not know
 * where files live. A FileSystem is bound to one repository root (a local folder or a bucket prefix) and
 * answers for paths under it: list a folder, stat a path, and open a model folder as a FolderView — a
 * consistent snapshot that says whether anything in it changed (the fingerprint poll mode compares),
 * reads small text files (config.pbtxt) and makes the local copy the backends load from.
 *
 * Implementations: local.ts (the folder is used in place), object-store.ts over s3.ts, gcs.ts, azure.ts
 * (listings of object keys; copies downloaded into a local cache folder).
 */

export interface DirEntry {
  readonly name: string;
  readonly isDir: boolean;
}

/** A model folder on local disk, for the backends. */
export interface LocalFolder {
  /** The folder the loader and backends read (`<...>/<model name>`). */
  readonly path: string;
  /**
   * A private copy to delete once no version loaded from it remains (it contains `path`); undefined when
   * `path` is the repository's own folder.
   */
  readonly tempRoot: string | undefined;
}

/** One model folder as read at one moment. Relative paths use `/` and never leave the folder. */
export interface FolderView {
  /** Where the folder is (a path or a URL), for messages. */
  readonly location: string;
  /**
   * Changes when any (non-hidden) file below the folder is added, removed or changed: sizes, inodes and
   * times on disk; sizes and ETags or generation numbers in a bucket.
   */
  fingerprint(): Promise<string>;
  /** Entries directly in the folder. */
  list(): Promise<DirEntry[]>;
  /** True when something (file or folder) exists at `rel`. */
  exists(rel: string): Promise<boolean>;
  /**
   * A UTF-8 text file; undefined when it does not exist. Refuses anything but a regular file, anything
   * larger than `maxBytes` and invalid UTF-8, naming the file.
   */
  readText(rel: string, maxBytes: number): Promise<string | undefined>;
  /** The full location of `rel`, for messages. */
  locationOf(rel: string): string;
  /**
   * A local folder with the files whose relative path `include` accepts (every file when omitted), as this
   * view listed them. A local folder is returned as it is; an object store's is downloaded.
   */
  localize(include?: (rel: string) => boolean): Promise<LocalFolder>;
}

export interface FileSystem {
  /** The repository root this file system is bound to (canonical path or URL). */
  readonly root: string;
  /** True when model copies are made (object stores): loads then need a download first. */
  readonly remote: boolean;
  /** `<dir>/<name>`. */
  join(dir: string, name: string): string;
  /** Entries directly in `dir`; throws (naming `dir` and the reason) when it cannot be listed. */
  list(dir: string): Promise<DirEntry[]>;
  /** 'dir', 'file', or undefined when nothing is there. Throws when the store cannot be asked. */
  stat(path: string): Promise<'dir' | 'file' | undefined>;
  /** Reads one model folder (one listing for an object store). */
  openFolder(dir: string): Promise<FolderView>;
  /** Frees connections and removes what this file system downloaded. */
  close(): Promise<void>;
}
