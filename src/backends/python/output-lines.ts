/**
 * Bounded forwarding of a stub's stdout and stderr to the log. A model may write anything to them: a line
 * of gigabytes without a newline, or millions of lines a second. The splitter never holds more than one
 * line's cap of text (a longer line is cut at the cap and marked, the rest of it dropped up to its newline),
 * and the rate limit lets a burst through, then a steady rate, and sums up what it dropped in one
 * "N lines dropped" note when output is let through again (or when the stream ends).
 */
import { StringDecoder } from 'node:string_decoder';

/** Longest line forwarded, in characters; the rest of a longer line is dropped. */
export const MAX_OUTPUT_LINE = 64 * 1024;
/** Lines let through at once, then per second. */
export const OUTPUT_LINE_BURST = 1000;
export const OUTPUT_LINES_PER_SECOND = 200;

export const TRUNCATED_MARK = '… [line truncated]';

/**
 * Splits a byte stream into lines, holding at most `maxLine` characters of an unfinished line. A line over
 * the cap is emitted once, cut at the cap with TRUNCATED_MARK, and the rest of it up to the newline is
 * skipped without being kept.
 */
export class BoundedLineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private skipping = false;

  constructor(
    private readonly emit: (line: string) => void,
    private readonly maxLine = MAX_OUTPUT_LINE,
  ) {}

  push(chunk: Buffer): void {
    this.text(this.decoder.write(chunk));
  }

  /** The stream ended: an unfinished line is emitted as it is. */
  end(): void {
    this.text(this.decoder.end());
    if (!this.skipping && this.pending.length > 0) this.emit(this.pending);
    this.pending = '';
    this.skipping = false;
  }

  private text(s: string): void {
    let start = 0;
    while (start < s.length) {
      const nl = s.indexOf('\n', start);
      const stop = nl === -1 ? s.length : nl;
      if (!this.skipping) {
        const room = this.maxLine - this.pending.length;
        if (stop - start > room) {
          this.emit(`${this.pending}${s.slice(start, start + room)}${TRUNCATED_MARK}`);
          this.pending = '';
          this.skipping = true;
        } else {
          this.pending += s.slice(start, stop);
        }
      }
      if (nl === -1) break;
      if (!this.skipping) {
        const line = this.pending.endsWith('\r') ? this.pending.slice(0, -1) : this.pending;
        this.emit(line);
      }
      this.pending = '';
      this.skipping = false;
      start = nl + 1;
    }
  }
}

/**
 * A token bucket over lines: `burst` at once, refilled at `perSecond`. Lines over it are counted, and the
 * count is reported as a note before the next line let through, or by flush().
 */
export class LineRateLimit {
  private tokens: number;
  private last: number;
  private dropped = 0;

  constructor(
    private readonly sink: (line: string) => void,
    private readonly burst = OUTPUT_LINE_BURST,
    private readonly perSecond = OUTPUT_LINES_PER_SECOND,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  line(text: string): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.perSecond);
    this.last = t;
    if (this.tokens < 1) {
      this.dropped++;
      return;
    }
    this.tokens--;
    this.flush();
    this.sink(text);
  }

  /** Reports the lines dropped since the last note, if any. */
  flush(): void {
    if (this.dropped === 0) return;
    const n = this.dropped;
    this.dropped = 0;
    this.sink(`${n} line${n === 1 ? '' : 's'} dropped (more output than the log takes)`);
  }

  get droppedSinceNote(): number {
    return this.dropped;
  }
}
