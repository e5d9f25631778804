/**
 * The local cache that object-store models are copied into before a backend loads them (onnxruntime, the
 * Python stub and JavaScript workers read local paths). One private session folder per mount directory
 * (`<mount>/nereid-models-XXXXXX`, mode 0700), made on the first download; one sub-folder per loaded
 * copy, removed when the versions loaded from it are unloaded; the whole session folder removed when the
 * server closes, and — synchronously — at process exit, so even an exit that skips the orderly close
 * leaves nothing behind.
 */
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { NereidError } from '../../common/errors.js';

export class CacheDirectory {
  private session: Promise<string> | undefined;
  private sessionPath: string | undefined;
  private closed = false;

  constructor(readonly mountDirectory: string) {}

  /** A fresh, empty private folder for one model copy (inside the session folder). */
  async newCopyRoot(): Promise<string> {
    if (this.closed) throw new NereidError('UNAVAILABLE', 'the model cache is closed');
    this.session ??= this.makeSession();
    let session: string;
    try {
      session = await this.session;
    } catch (err) {
      this.session = undefined;
      throw err;
    }
    return mkdtemp(path.join(session, 'copy-'));
  }

  private async makeSession(): Promise<string> {
    try {
      await mkdir(this.mountDirectory, { recursive: true, mode: 0o700 });
      const dir = await mkdtemp(path.join(this.mountDirectory, 'nereid-models-'));
      this.sessionPath = dir;
      return dir;
    } catch (err) {
      throw new NereidError(
        'INTERNAL',
        `cannot create the local model cache in '${this.mountDirectory}': ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  /** The session folder, once made (for tests and the exit hook). */
  get path(): string | undefined {
    return this.sessionPath;
  }

  /** Removes every copy. Later copies are refused. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sessionPath !== undefined) await rm(this.sessionPath, { recursive: true, force: true });
  }

  /** For a process 'exit' handler, where nothing asynchronous runs any more. */
  closeSync(): void {
    this.closed = true;
    if (this.sessionPath !== undefined) rmSync(this.sessionPath, { recursive: true, force: true });
  }
}
