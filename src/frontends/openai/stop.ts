/**
 * Stop sequences, applied by the frontend so they hold for every model (one that reads `stop` itself and
 * stops earlier makes this a no-op). Text arrives in pieces; a piece that ends with the start of a stop
 * sequence is held back until the next piece shows whether the sequence completes, so a client never sees
 * part of a stop string. As in OpenAI's API the stop string itself is not part of the output.
 */
export class StopMatcher {
  private held = '';
  private stopped = false;
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = stops.reduce((n, s) => Math.max(n, s.length), 0);
  }

  /** True once a stop sequence matched: everything after it is dropped. */
  get done(): boolean {
    return this.stopped;
  }

  /** Feeds a piece; returns the text that may be sent now. */
  push(piece: string): string {
    if (this.stopped) return '';
    if (this.longest === 0) return piece;
    const text = this.held + piece;
    let cut = -1;
    for (const s of this.stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.held = '';
      return text.slice(0, cut);
    }
    // Hold back the longest tail that is a proper prefix of some stop sequence.
    let keep = 0;
    for (let k = Math.min(this.longest - 1, text.length); k > 0; k--) {
      const tail = text.slice(text.length - k);
      if (this.stops.some((s) => s.startsWith(tail))) {
        keep = k;
        break;
      }
    }
    this.held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** The end of the text: whatever was held back was not a stop sequence after all. */
  flush(): string {
    const rest = this.stopped ? '' : this.held;
    this.held = '';
    return rest;
  }
}
