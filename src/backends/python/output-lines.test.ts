import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundedLineSplitter, LineRateLimit, MAX_OUTPUT_LINE, TRUNCATED_MARK } from './output-lines.js';

void test('lines are split on newlines, across chunks, with CRLF and a last unfinished line', () => {
  const lines: string[] = [];
  const s = new BoundedLineSplitter((l) => lines.push(l));
  s.push(Buffer.from('one\ntw'));
  s.push(Buffer.from('o\r\nthree\n\nfo'));
  s.push(Buffer.from([0xc3])); // half of 'é'
  s.push(Buffer.from([0xa9]));
  s.end();
  assert.deepEqual(lines, ['one', 'two', 'three', '', 'foé']);
});

void test('a line without a newline is cut at the cap and never held beyond it', () => {
  const lines: string[] = [];
  const s = new BoundedLineSplitter((l) => lines.push(l), 100);
  // 64 MiB of output in 1 MiB chunks with no newline: one truncated line, then the next real line.
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  for (let i = 0; i < 64; i++) s.push(chunk);
  s.push(Buffer.from('tail of the long line\nnext\n'));
  s.end();
  assert.deepEqual(lines, [`${'x'.repeat(100)}${TRUNCATED_MARK}`, 'next']);
});

void test('the default cap is 64 KiB', () => {
  const lines: string[] = [];
  const s = new BoundedLineSplitter((l) => lines.push(l));
  s.push(Buffer.alloc(MAX_OUTPUT_LINE * 3, 'y'));
  s.end();
  assert.equal(lines.length, 1);
  assert.equal(lines[0], `${'y'.repeat(MAX_OUTPUT_LINE)}${TRUNCATED_MARK}`);
  assert.equal(MAX_OUTPUT_LINE, 64 * 1024);
});

void test('a flood of lines is dropped past the burst and counted in one note', () => {
  let now = 0;
  const out: string[] = [];
  const limit = new LineRateLimit(
    (l) => out.push(l),
    10,
    5,
    () => now,
  );
  for (let i = 0; i < 100000; i++) limit.line(`line ${i}`);
  assert.equal(out.length, 10);
  assert.equal(limit.droppedSinceNote, 99990);
  now = 1000; // five lines' worth of tokens
  limit.line('after');
  assert.deepEqual(out.slice(10), ['99990 lines dropped (more output than the log takes)', 'after']);
  limit.line('a');
  limit.line('b');
  limit.line('c');
  limit.line('d');
  limit.line('e'); // over: only 5 tokens came back
  limit.flush();
  assert.deepEqual(out.slice(12), ['a', 'b', 'c', 'd', '1 line dropped (more output than the log takes)']);
});
