/**
 * One Server-Sent Events reply: `data: <json>\n\n` per event, `data: [DONE]\n\n` at the end, as OpenAI's
 * streaming API sends them. The caller awaits drained() before taking the model's next response, so a
 * reader slower than the model holds the model back (the core's bounded response stream makes its send
 * wait, issue 33). What the socket has not taken yet is still capped at `maxBufferedBytes`; past it the
 * stream is cut and its request cancelled, so one slow or stalled client holds at most that much memory.
 */
import type { ServerResponse } from 'node:http';
import { drainOrClose } from '../drain.js';

const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
} as const;

export class SseWriter {
  private started = false;
  private overflowed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly maxBufferedBytes: number,
    /** Called once when the reader fell too far behind: cancels the request. */
    private readonly onOverflow: () => void,
  ) {}

  get isStarted(): boolean {
    return this.started;
  }

  /** The client is gone or was cut off: nothing more will be written. */
  get closed(): boolean {
    return this.overflowed || this.res.destroyed;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, SSE_HEADERS);
    // The headers go out with the first event, not in a packet of their own.
  }

  /** Writes one event; false when the stream is closed (client gone or cut off). */
  send(json: string): boolean {
    return this.write(`data: ${json}\n\n`);
  }

  /** Resolves when the socket can take more (below its high-water mark), or the stream is closed. */
  drained(): Promise<void> {
    const res = this.res;
    if (this.closed || !res.writableNeedDrain) return Promise.resolve();
    return drainOrClose(res);
  }

  done(): void {
    if (this.write('data: [DONE]\n\n')) this.res.end();
  }

  private write(text: string): boolean {
    if (this.closed) return false;
    this.start();
    this.res.write(text);
    if (this.res.writableLength > this.maxBufferedBytes) {
      this.overflowed = true;
      this.onOverflow();
      this.res.destroy();
      return false;
    }
    return true;
  }
}
