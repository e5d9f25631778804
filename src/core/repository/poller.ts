/**
 * The poll-mode timer: runs one repository poll every interval, never two at once (the next interval
 * starts when a poll finishes), and does not keep the process alive. stop() waits for a running poll.
 */
import type { Logger } from '../../common/logger.js';

export class Poller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly poll: () => Promise<unknown>,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.stopped || this.timer || this.running) return;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.poll()
        .then(
          () => undefined,
          (err: unknown) => {
            this.log.error(
              `model repository poll failed: ${err instanceof Error ? err.message : String(err)}`,
            );
          },
        )
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
    this.timer.unref();
  }
}
