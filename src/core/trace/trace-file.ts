/**
 * One trace file as Triton keeps it (TraceManager::TraceFile): traces saved without an index go to
 * `<path>` (opened at the first save, '[' ... ',' ... and ']' when the file is closed), traces saved with
 * an index each go to a new `<path>.<n>` (n from 0, per file) as a complete JSON array. Writes are queued
 * and done with fs.promises, in order, never on the request path; a write error is logged and the server
 * goes on (a full disk must not fail inference).
 */
import { open, writeFile, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../../common/logger.js';

export class TraceFile {
  private index = 0;
  private handle: Promise<FileHandle> | undefined;
  private firstWrite = true;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    readonly path: string,
    private readonly log: Logger,
  ) {}

  /** Saves `body` (trace objects joined by ','); `indexed`: to `<path>.<n>`. */
  save(body: string, indexed: boolean): void {
    if (this.closed || body === '') return;
    if (indexed) {
      const name = `${this.path}.${this.index++}`;
      this.enqueue(() => writeFile(name, `[${body}]`));
      return;
    }
    const text = this.firstWrite ? `[${body}` : `,${body}`;
    this.firstWrite = false;
    this.handle ??= open(this.path, 'w');
    const handle = this.handle;
    this.enqueue(async () => {
      await (await handle).write(text);
    });
  }

  /** Writes the closing ']' (if anything went to `<path>`) and closes; resolves when all writes are done. */
  close(): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    const handle = this.handle;
    if (handle) {
      this.enqueue(async () => {
        const h = await handle;
        try {
          await h.write(']');
        } finally {
          await h.close();
        }
      });
    }
    return this.chain;
  }

  /** Resolves when every write queued so far is done. */
  flushed(): Promise<void> {
    return this.chain;
  }

  private enqueue(write: () => Promise<unknown>): void {
    this.chain = this.chain.then(write).then(
      () => undefined,
      (err: unknown) => {
        this.log.error(`failed writing trace file '${this.path}': ${(err as Error).message}`);
      },
    );
  }
}
