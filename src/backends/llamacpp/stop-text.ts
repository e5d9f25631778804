/**
 * Streamed text with stop strings, as vLLM applies them: the text ends before the first stop string and
 * leaves it out. While streaming, text that could still become a stop string is held back until the next
 * piece says whether it does, so a client never receives part of a stop string. Only the held-back text
 * and the new piece are searched: nothing given out can begin a stop string, or it would have been held.
 */
export class StopText {
  /** Text not given out yet: the end of what came, which may still begin a stop string. */
  private tail = '';
  private stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  /** True once a stop string matched: nothing after it is text. */
  get done(): boolean {
    return this.stopped;
  }

  /** Adds the next piece of text; returns the part that is now safe to send. */
  push(piece: string): string {
    if (this.stopped) return '';
    const text = this.tail + piece;
    let end = text.length;
    for (const s of this.stops) {
      const at = text.indexOf(s);
      if (at >= 0 && at < end) {
        end = at;
        this.stopped = true;
      }
    }
    if (!this.stopped) end -= this.heldBack(text);
    this.tail = this.stopped ? '' : text.slice(end);
    return text.slice(0, end);
  }

  /** Everything not sent yet (the generation ended): held-back text is text after all. */
  flush(): string {
    const rest = this.tail;
    this.tail = '';
    return rest;
  }

  /** Characters at the end that may still be the start of a stop string. */
  private heldBack(text: string): number {
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, text.length); k > hold; k--) {
        if (text.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }
}
