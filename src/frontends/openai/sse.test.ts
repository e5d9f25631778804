// SseWriter's back-pressure (issue 33): drained() holds the caller while the socket is above its
// high-water mark and lets it go on 'drain' or 'close'; the hard cap still cuts a reader far behind.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { SseWriter } from './sse.js';

/** The parts of a ServerResponse SseWriter uses, with a socket that takes nothing. */
class StalledResponse extends EventEmitter {
  writableLength = 0;
  writableNeedDrain = false;
  destroyed = false;
  readonly highWaterMark = 100;
  writeHead(): void {}
  write(text: string): boolean {
    this.writableLength += Buffer.byteLength(text);
    this.writableNeedDrain = this.writableLength >= this.highWaterMark;
    return !this.writableNeedDrain;
  }
  end(): void {}
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
  /** The client read everything. */
  flush(): void {
    this.writableLength = 0;
    this.writableNeedDrain = false;
    this.emit('drain');
  }
}

describe('SseWriter back-pressure', () => {
  it('holds the caller until the socket drains', async () => {
    const res = new StalledResponse();
    const sse = new SseWriter(res as unknown as ServerResponse, 10_000, () => {});
    assert.equal(sse.send('x'.repeat(200)), true);
    let released = false;
    const waiting = sse.drained().then(() => (released = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(released, false, 'still above the high-water mark');
    res.flush();
    await waiting;
    assert.equal(released, true);
    assert.equal(res.listenerCount('drain'), 0);
  });

  it('lets a waiting caller go when the client leaves, and cuts a reader past the cap', async () => {
    const res = new StalledResponse();
    let overflowed = 0;
    const sse = new SseWriter(res as unknown as ServerResponse, 300, () => overflowed++);
    sse.send('x'.repeat(200));
    const waiting = sse.drained();
    assert.equal(sse.send('y'.repeat(200)), false, 'past the cap: cut');
    await waiting;
    assert.equal(overflowed, 1);
    assert.equal(sse.closed, true);
    await sse.drained(); // closed: never waits
  });
});
