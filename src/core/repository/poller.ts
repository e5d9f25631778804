/**
 * The poll-mode timer: runs one repository poll every interval (0 = no timer), never two at once (the next
 * interval starts when a poll finishes), and does not keep the process alive. trigger() asks for a poll
 * now (watch mode's file events): it runs at once when idle, or once more right after the running one, so
 * a change made while a poll reads the folders is never missed. stop() waits for a running poll.
 */
import type { Logger } from '../../common/logger.js';

export class Poller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** A trigger arrived while a poll was running: poll again when it ends. */
  private again = false;
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

  /** Polls as soon as possible (see the header); a no-op after stop(). */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.running) await this.running;
  }

  private schedule(): void {
    if (this.stopped || this.intervalMs <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, this.intervalMs);
    this.timer.unref();
  }

  private run(): void {
    this.again = false;
    this.running = this.poll()
      .then(
        () => undefined,
        (err: unknown) => {
          this.log.error(`model repository poll failed: ${err instanceof Error ? err.message : String(err)}`);
        },
      )
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.stopped) this.run();
        else this.schedule();
      });
  }
}
