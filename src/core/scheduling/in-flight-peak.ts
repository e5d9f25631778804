/**
 * The most requests a model has had in flight (queued or executing) lately: the dynamic batcher's
 * measure of how many clients are there to join a batch. While every one of them is already waiting, no
 * request can join before some are answered, so waiting out max_queue_delay only adds latency
 * (`early_dispatch`, see dynamic-batcher.ts). "Lately" is the current window and the one before it, so the
 * peak follows a load that grows at once and one that shrinks within two windows.
 */

/** Window length: long enough to span many batches, short enough to forget clients that left. */
export const PEAK_WINDOW_NS = 1_000_000_000n;

export class InFlightPeak {
  private windowStart: bigint | undefined;
  private current = 0;
  private previous = 0;

  constructor(private readonly windowNs: bigint = PEAK_WINDOW_NS) {}

  /** Records the number in flight at `now` (call it whenever the number grows). */
  observe(inFlight: number, now: bigint): void {
    this.roll(now);
    if (inFlight > this.current) this.current = inFlight;
  }

  /** The peak over the current and the previous window, as of `now`. */
  peak(now: bigint): number {
    this.roll(now);
    return Math.max(this.current, this.previous);
  }

  private roll(now: bigint): void {
    if (this.windowStart === undefined) {
      this.windowStart = now;
      return;
    }
    const elapsed = now - this.windowStart;
    if (elapsed < this.windowNs) return;
    // One window on: the current peak becomes the previous one. Two or more: both are stale.
    this.previous = elapsed < 2n * this.windowNs ? this.current : 0;
    this.current = 0;
    this.windowStart = now - (elapsed % this.windowNs);
  }
}
