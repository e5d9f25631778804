import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { invalidArg } from '../common/errors.js';
import { ResponseStream } from './response-stream.js';

describe('ResponseStream', () => {
  it('takes its listener off a long-lived signal once it is over, however it ended', async () => {
    // The core gives every in-process call without a signal one shared never-aborted signal: a listener
    // left on it per request kept each request's stream and responses alive for good.
    const shared = new AbortController().signal;
    for (let i = 0; i < 50; i++) {
      const answered = new ResponseStream<number>({ signal: shared });
      answered.push(i, true);
      for await (const v of answered) assert.equal(v, i);
      const failed = new ResponseStream<number>({ signal: shared });
      failed.fail(invalidArg('bad'));
      await assert.rejects(async () => {
        for await (const _ of failed) assert.fail('no response');
      });
      const closed = new ResponseStream<number>({ signal: shared });
      closed.push(1, false);
      closed.close();
      for await (const v of closed) assert.equal(v, 1);
    }
    assert.equal(getEventListeners(shared, 'abort').length, 0);
    // While responses wait to be taken, the listener stays: an abort must still free them.
    const waiting = new ResponseStream<number>({ signal: shared });
    waiting.push(1, true);
    assert.equal(getEventListeners(shared, 'abort').length, 1);
    for await (const _ of waiting) break;
    assert.equal(getEventListeners(shared, 'abort').length, 0);
  });

  it('delivers pushes made before and after iteration starts, ending at the final one', async () => {
    const s = new ResponseStream<number>();
    s.push(1, false);
    setTimeout(() => {
      s.push(2, false);
      s.push(3, true);
      s.push(4, true); // after the end: ignored
    }, 5);
    const seen: number[] = [];
    for await (const v of s) seen.push(v);
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('rejects the waiting consumer on failure, after already-queued items', async () => {
    const s = new ResponseStream<number>();
    s.push(1, false);
    s.fail(invalidArg('boom'));
    const it = s[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { value: 1, done: false });
    await assert.rejects(it.next(), /boom/);
  });

  it('close() ends the stream without another item', async () => {
    const s = new ResponseStream<number>();
    setTimeout(() => s.close(), 1);
    const seen: number[] = [];
    for await (const v of s) seen.push(v);
    assert.deepEqual(seen, []);
    assert.equal(s.done, true);
  });
});

/** Lets timers of zero and pending immediates run `n` times. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

/** A producer that sends `count` responses, awaiting room before each; returns how many it sent. */
function producer(s: ResponseStream<number>, count: number): { sent: () => number; done: Promise<void> } {
  let sent = 0;
  const done = (async () => {
    for (let i = 0; i < count; i++) {
      await s.writable();
      if (s.done) return;
      s.push(i, i === count - 1);
      sent++;
    }
  })();
  return { sent: () => sent, done };
}

describe('ResponseStream bound on undelivered responses (issue 33)', () => {
  it('makes a producer wait at the bound while nobody reads, and go on as the consumer takes responses', async () => {
    const s = new ResponseStream<number>({ maxUndelivered: 4, idleTimeoutMs: 0 });
    const p = producer(s, 1_000_000);
    await turns(50);
    assert.equal(s.undelivered, 4);
    assert.equal(p.sent(), 4);
    const it = s[Symbol.asyncIterator]();
    for (let i = 0; i < 10; i++) assert.deepEqual(await it.next(), { value: i, done: false });
    await turns(50);
    assert.equal(s.undelivered, 4, 'never more than the bound queued');
    assert.equal(p.sent(), 14);
    s.fail(invalidArg('stop'));
    await p.done;
  });

  it('drops the queue and releases the producer when the request is cancelled', async () => {
    const controller = new AbortController();
    const s = new ResponseStream<number>({ maxUndelivered: 3, idleTimeoutMs: 0, signal: controller.signal });
    const p = producer(s, 1_000_000);
    await turns(20);
    assert.equal(s.undelivered, 3);
    controller.abort();
    assert.equal(s.undelivered, 0, 'the client left: nothing it will not read is kept');
    // The producer is released; pushes after the abort are not queued (the backend then sees the signal).
    await turns(5);
    assert.equal(s.undelivered, 0);
    s.fail(invalidArg('cancelled'));
    await p.done;
  });

  it('cancels the request when the reader takes nothing for the idle deadline', async () => {
    const s = new ResponseStream<number>({ maxUndelivered: 2, idleTimeoutMs: 20 });
    const p = producer(s, 1_000_000);
    await p.done; // released by the idle deadline
    assert.equal(s.done, true);
    assert.equal(s.undelivered, 0);
    const it = s[Symbol.asyncIterator]();
    await assert.rejects(it.next(), (e: unknown) => (e as { code?: string }).code === 'CANCELLED');
  });

  it('never makes a producer wait once the stream has ended', async () => {
    const s = new ResponseStream<number>({ maxUndelivered: 1, idleTimeoutMs: 0 });
    s.push(1, true);
    await s.writable();
    assert.equal(s.done, true);
  });
});
