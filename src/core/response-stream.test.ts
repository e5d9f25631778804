import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { invalidArg } from '../common/errors.js';
import { ResponseStream } from './response-stream.js';

describe('ResponseStream', () => {
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
