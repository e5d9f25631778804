// The text of generated tokens (token-text.ts), on a byte-level tokenizer written here that reads as
// llama.cpp's does: the bytes of the tokens decoded as UTF-8 (an incomplete character as U+FFFD), less
// the leading space of the first token (SentencePiece). Its tokens split multi-byte characters and stop
// strings, and the tokens each step detokenizes are counted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Token } from './engine.js';
import { StopText } from './stop-text.js';
import { CONTEXT_TOKENS, MAX_SPLIT, TokenText, textAfter } from './token-text.js';

/** A tokenizer over the given token byte strings; `calls` records how many tokens each call read. */
function tokenizer(pieces: readonly Buffer[]) {
  const calls: number[] = [];
  const detokenize = (tokens: readonly Token[]): string => {
    calls.push(tokens.length);
    let bytes = Buffer.concat(tokens.map((t) => pieces[t]));
    if (bytes[0] === 0x20) bytes = bytes.subarray(1);
    return bytes.toString('utf8');
  };
  return { detokenize, calls };
}

const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

/** Tokens for `vocab` entries, by index. */
const ids = (...n: number[]): Token[] => n as Token[];

/** Each push's text, then the flush, for `tokens`. */
function pieces(detokenize: (t: readonly Token[]) => string, tokens: readonly Token[]): string[] {
  const text = new TokenText(detokenize);
  return [...tokens.map((t) => text.push(t)), text.flush()];
}

// 'é' is C3 A9, '€' E2 82 AC, '🙂' F0 9F 99 82.
const VOCAB = [
  bytes(' h'), // 0
  bytes([0xc3]), // 1: the first byte of é
  bytes([0xa9], 'l'), // 2: the rest of é, then l
  bytes('lo'), // 3
  bytes(' ', [0xe2]), // 4: a space and the first byte of €
  bytes([0x82]), // 5
  bytes([0xac], '!'), // 6: the end of € and !
  bytes([0xf0, 0x9f]), // 7: half of 🙂
  bytes([0x99]), // 8
  bytes([0x82]), // 9: the end of 🙂
  bytes('xS'), // 10
  bytes('TO'), // 11
  bytes('P!'), // 12
  bytes(' a'), // 13
  bytes([0x80]), // 14: a continuation byte with nothing before it
];

describe('the text of generated tokens', () => {
  it('gives a character split over tokens whole once its last byte is in, never as U+FFFD', () => {
    const { detokenize } = tokenizer(VOCAB);
    const tokens = ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0);
    const got = pieces(detokenize, tokens);
    assert.deepEqual(got, ['h', '', 'él', 'lo', ' ', '', '€!', '', '', '🙂', ' h', '']);
    assert.ok(got.every((p) => !p.includes('\ufffd')));
    assert.equal(got.join(''), detokenize(tokens));
  });

  it('reads the first token as the start of the text and later ones after the tokens before them', () => {
    const { detokenize } = tokenizer(VOCAB);
    assert.deepEqual(pieces(detokenize, ids(13, 13, 0)), ['a', ' a', ' h', '']);
    assert.equal(textAfter(detokenize, [], ids(13)), 'a');
    assert.equal(textAfter(detokenize, ids(0), ids(13)), ' a');
    assert.equal(textAfter(detokenize, ids(0), ids(1)), '\ufffd');
  });

  it('gives an incomplete character at the end as U+FFFD, and bytes that are no character as they read', () => {
    const { detokenize } = tokenizer(VOCAB);
    assert.deepEqual(pieces(detokenize, ids(13, 4, 5)), ['a', ' ', '', '\ufffd']);
    // Lone continuation bytes never become a character: held for MAX_SPLIT tokens, then given out.
    const junk = ids(13, ...Array<number>(MAX_SPLIT + 3).fill(14), 13);
    const got = pieces(detokenize, junk);
    assert.equal(got.join(''), detokenize(junk));
    assert.equal(got.join(''), `a${'\ufffd'.repeat(MAX_SPLIT + 3)} a`);
    assert.equal(got[MAX_SPLIT + 1], '\ufffd'); // the first junk byte, once MAX_SPLIT more came
  });

  it('with stop strings: one over three tokens ends the text, one with a split character too', () => {
    const { detokenize } = tokenizer(VOCAB);
    const run = (stops: string[], tokens: Token[]) => {
      const text = new TokenText(detokenize);
      const stop = new StopText(stops);
      const sent: string[] = [];
      for (const t of tokens) {
        sent.push(stop.push(text.push(t)));
        if (stop.done) break;
      }
      if (!stop.done) sent.push(stop.push(text.flush()) + stop.flush());
      return { sent, done: stop.done };
    };
    // 'STOP' is split 'xS' | 'TO' | 'P!': nothing of it is sent, the text ends at 'x'.
    assert.deepEqual(run(['STOP'], ids(13, 10, 11, 12, 13)), { sent: ['a', 'x', '', ''], done: true });
    // A stop that begins like the text but does not match: held, then sent.
    assert.deepEqual(run(['STOX'], ids(13, 10, 11, 12)), { sent: ['a', 'x', '', 'STOP!', ''], done: false });
    // '€!' is split ' \xE2' | '\x82' | '\xAC!': the stop needs the whole character.
    assert.deepEqual(run(['€!'], ids(0, 4, 5, 6, 13)), { sent: ['h', ' ', '', ''], done: true });
    assert.deepEqual(run(['\ufffd'], ids(0, 4, 5, 6)), { sent: ['h', ' ', '', '€!', ''], done: false });
  });

  it('detokenizes a bounded number of tokens a step, however long the text', () => {
    const { detokenize, calls } = tokenizer(VOCAB);
    const text = new TokenText(detokenize);
    const perStep: number[] = [];
    const all: Token[] = [];
    let out = '';
    for (let i = 0; i < 3000; i++) {
      // Whole characters of one to four tokens, and junk, in a fixed order.
      const group = [[0], [1, 2], [3], [4, 5, 6], [7, 8, 9], [10, 11, 12], [14, 14], [13]][i % 8];
      for (const t of ids(...group)) {
        const before = calls.reduce((a, b) => a + b, 0);
        out += text.push(t);
        perStep.push(calls.reduce((a, b) => a + b, 0) - before);
        all.push(t);
      }
    }
    out += text.flush();
    assert.equal(out, detokenize(all));
    const bound = 4 * CONTEXT_TOKENS + 2 * MAX_SPLIT + 1;
    assert.ok(Math.max(...perStep) <= bound, `a step detokenized ${Math.max(...perStep)} tokens`);
    // The last steps cost what the first ones did.
    assert.equal(Math.max(...perStep.slice(-100)), Math.max(...perStep.slice(0, 100)));
  });
});
