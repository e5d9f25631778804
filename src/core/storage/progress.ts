/**
 * Progress lines for a model folder copied from an object store: what is coming and how big, then every
 * few seconds the bytes so far and the rate while it lasts, then the total and the time it took. A slow
 * download then says so in the log instead of leaving the server silent while a model is LOADING.
 */

/** Where progress lines go (the server's info log). */
export type ProgressSink = (line: string) => void;

export const PROGRESS_INTERVAL_MS = 5000;

export class DownloadProgress {
  private done = 0;
  private readonly started: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly what: string,
    private readonly totalBytes: number,
    files: number,
    private readonly sink: ProgressSink,
    intervalMs = PROGRESS_INTERVAL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.started = now();
    sink(`downloading ${what}: ${files} ${files === 1 ? 'file' : 'files'}, ${formatBytes(totalBytes)}`);
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.report(), intervalMs);
      this.timer.unref();
    }
  }

  /** Counts bytes as they arrive. */
  add(bytes: number): void {
    this.done += bytes;
  }

  /** One line with the bytes so far, the share of the total and the rate since the start. */
  report(): void {
    const share = this.totalBytes > 0 ? ` (${Math.floor((100 * this.done) / this.totalBytes)}%)` : '';
    this.sink(
      `downloading ${this.what}: ${formatBytes(this.done)} of ${formatBytes(this.totalBytes)}${share}, ${this.rate()}`,
    );
  }

  /** The download is complete: one last line with the total and the time. */
  finish(): void {
    this.stop();
    const secs = (this.now() - this.started) / 1000;
    this.sink(`downloaded ${this.what}: ${formatBytes(this.done)} in ${secs.toFixed(1)} s, ${this.rate()}`);
  }

  /** The download failed or was cancelled: no more lines (the failure is logged where it is handled). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private rate(): string {
    const secs = (this.now() - this.started) / 1000;
    return secs > 0 ? `${formatBytes(this.done / secs)}/s` : 'rate not known yet';
  }
}

/** Bytes in the unit a person reads at a glance: 512 B, 3.4 KiB, 12.0 MiB, 1.50 GiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}
