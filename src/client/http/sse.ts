/**
 * A reader of Server-Sent Events (the WHATWG event-stream format) as Triton's generate_stream sends them:
 * bytes in, one event's `data` text out per blank-line-terminated block. Lines may end in LF, CRLF or CR
 * and may be split anywhere across chunks (UTF-8 sequences included); several `data:` lines of one event
 * are joined with LF; comments (`:`) and the fields event/id/retry are read and ignored. A block without
 * data dispatches nothing, as the format says.
 */
import { StringDecoder } from 'node:string_decoder';

export class SseParser {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  #data: string[] = [];
  /** The last chunk ended in CR: a LF starting the next one belongs to the same line end. */
  #skipLf = false;

  /** Feeds bytes; returns the data of every event they completed. */
  push(chunk: Buffer): string[] {
    let text = this.#decoder.write(chunk);
    if (this.#skipLf && text.startsWith('\n')) text = text.slice(1);
    this.#skipLf = false;
    this.#pending += text;
    const events: string[] = [];
    let start = 0;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = start;
      const found = m.exec(this.#pending);
      if (found === null) break;
      // A CR at the very end may be the first half of a CRLF still to come.
      if (found[0] === '\r' && found.index === this.#pending.length - 1) this.#skipLf = true;
      this.#line(this.#pending.slice(start, found.index), events);
      start = found.index + found[0].length;
    }
    this.#pending = this.#pending.slice(start);
    return events;
  }

  /** The stream ended: an event not terminated by a blank line is dropped, as the format says. */
  end(): boolean {
    const unfinished = this.#pending + this.#decoder.end();
    const incomplete = unfinished !== '' || this.#data.length > 0;
    this.#pending = '';
    this.#data = [];
    return incomplete;
  }

  #line(line: string, events: string[]): void {
    if (line === '') {
      if (this.#data.length > 0) events.push(this.#data.join('\n'));
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
  }
}
