// The event-stream reader: events split at every byte, line-end styles, multi-line data, comments.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser } from './sse.js';

function feed(parser: SseParser, bytes: Buffer, step: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(...parser.push(bytes.subarray(i, i + step)));
  return out;
}

describe('SseParser', () => {
  const text = 'data: {"a":1}\n\n: a comment\nevent: x\ndata: {"b":"é"}\n\ndata:x\ndata: y\n\n';
  const expected = ['{"a":1}', '{"b":"é"}', 'x\ny'];

  it('reads the same events whatever the chunk size (UTF-8 split mid-character included)', () => {
    const bytes = Buffer.from(text, 'utf8');
    for (const step of [1, 2, 3, 7, bytes.length]) {
      const p = new SseParser();
      assert.deepEqual(feed(p, bytes, step), expected, `step ${step}`);
      assert.equal(p.end(), false);
    }
  });

  it('accepts CRLF and CR line ends, also split between chunks', () => {
    for (const eol of ['\r\n', '\r']) {
      const bytes = Buffer.from(text.replaceAll('\n', eol), 'utf8');
      for (const step of [1, 5, bytes.length]) {
        assert.deepEqual(feed(new SseParser(), bytes, step), expected, `${JSON.stringify(eol)} step ${step}`);
      }
    }
  });

  it('a block without data dispatches nothing; an unterminated event is reported by end()', () => {
    const p = new SseParser();
    assert.deepEqual(p.push(Buffer.from('event: only\n\nid: 3\n\ndata: cut')), []);
    assert.equal(p.end(), true);
  });
});
