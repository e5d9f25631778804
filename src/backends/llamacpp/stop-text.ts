/**
 * Streamed text with stop strings, as vLLM applies them: the text ends before the first stop string and
 * leaves it out. While streaming, text that could still become a stop string is held back until the next
 * token says whether it does, so a client never receives part of a stop string. A trailing U+FFFD (a
 * UTF-8 character split across tokens) is held back the same way until its bytes are complete.
 */
export class StopText {
  private text = '';
  private sent = 0;
  private stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  /** True once a stop string matched: nothing after it is text. */
  get done(): boolean {
    return this.stopped;
  }

  /** Replaces the whole decoded text so far; returns the part that is now safe to send. */
  update(full: string): string {
    if (this.stopped) return '';
    this.text = full;
    let end = full.length;
    for (const s of this.stops) {
      const at = full.indexOf(s);
      if (at >= 0 && at < end) {
        end = at;
        this.stopped = true;
      }
    }
    if (!this.stopped) end -= this.heldBack(full);
    return this.take(end);
  }

  /** Everything not sent yet (the generation ended): held-back text is text after all. */
  flush(): string {
    if (this.stopped) return '';
    return this.take(this.text.length);
  }

  /** Characters at the end that may still be the start of a stop string or of a split character. */
  private heldBack(full: string): number {
    let hold = 0;
    while (hold < full.length && full.charCodeAt(full.length - 1 - hold) === 0xfffd) hold++;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, full.length); k > hold; k--) {
        if (full.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }

  private take(end: number): string {
    if (end <= this.sent) return '';
    const piece = this.text.slice(this.sent, end);
    this.sent = end;
    return piece;
  }
}
