import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import { Lexer, type Token } from './lexer.js';

function tokens(src: string): Token[] {
  const lx = new Lexer(src, 'f.pbtxt');
  const out: Token[] = [];
  for (;;) {
    const t = lx.next();
    out.push(t);
    if (t.kind === 'eof') return out;
  }
}

function lexError(src: string): string {
  try {
    tokens(src);
  } catch (err) {
    assert.ok(err instanceof NereidError);
    assert.equal(err.code, 'INVALID_ARG');
    return err.message;
  }
  assert.fail(`expected a lexer error for ${JSON.stringify(src)}`);
}

void test('identifiers, symbols and positions', () => {
  const t = tokens('name: "x"\n  dims { }');
  assert.deepEqual(
    t.map((x) => [x.kind, x.text, x.line, x.col]),
    [
      ['ident', 'name', 1, 1],
      ['symbol', ':', 1, 5],
      ['string', 'x', 1, 7],
      ['ident', 'dims', 2, 3],
      ['symbol', '{', 2, 8],
      ['symbol', '}', 2, 10],
      ['eof', '', 2, 11],
    ],
  );
});

void test('comments are skipped, including a # inside a string is kept', () => {
  const t = tokens('# header\nname: "a#b" # trailing\n');
  assert.deepEqual(
    t.map((x) => x.text),
    ['name', ':', 'a#b', ''],
  );
});

void test('numbers: decimal, hex, octal, floats, exponents, f suffix', () => {
  const t = tokens('12 0x1F 017 1.5 .5 1e-3 2.5f 1f 0');
  assert.deepEqual(
    t.slice(0, -1).map((x) => [x.kind, x.text]),
    [
      ['int', '12'],
      ['int', '0x1F'],
      ['int', '017'],
      ['float', '1.5'],
      ['float', '.5'],
      ['float', '1e-3'],
      ['float', '2.5f'],
      ['float', '1f'],
      ['int', '0'],
    ],
  );
});

void test('string escapes decode to bytes', () => {
  const [t] = tokens(String.raw`"a\n\t\"\'\\\101\x41\u00e9\U0001F600"`);
  assert.equal(t.kind, 'string');
  assert.equal(t.text, 'a\n\t"\'\\AAé😀');
  const [raw] = tokens(String.raw`'\xC3\xA9'`);
  assert.deepEqual([...(raw.bytes ?? [])], [0xc3, 0xa9]);
  assert.equal(raw.text, 'é');
});

void test('single and double quotes, and quotes of the other kind inside', () => {
  const t = tokens(`'say "hi"' "it's"`);
  assert.deepEqual(
    t.slice(0, 2).map((x) => x.text),
    ['say "hi"', "it's"],
  );
});

void test('lexer errors carry file:line:col', () => {
  assert.equal(lexError('name: "abc'), 'f.pbtxt:1:7: unterminated string literal');
  assert.equal(lexError('name: "ab\nc"'), 'f.pbtxt:1:10: string literals cannot cross line boundaries');
  assert.equal(lexError('x: "\\q"'), 'f.pbtxt:1:5: invalid escape sequence in string literal');
  assert.equal(lexError('x: 09'), 'f.pbtxt:1:5: numbers starting with a leading zero must be in octal');
  assert.equal(lexError('x: 0x'), "f.pbtxt:1:6: '0x' must be followed by hex digits");
  assert.equal(lexError('x: 12abc'), 'f.pbtxt:1:6: need space between number and identifier');
  assert.equal(lexError('x: 1e'), "f.pbtxt:1:6: 'e' must be followed by an exponent");
  assert.equal(lexError('\n  x = 1'), "f.pbtxt:2:5: unexpected character '='");
  assert.equal(lexError('x: "\\400"'), 'f.pbtxt:1:5: octal escape sequence out of range');
});

void test('a leading byte-order mark is ignored', () => {
  const [t] = tokens('\uFEFFname');
  assert.deepEqual([t.kind, t.text, t.line, t.col], ['ident', 'name', 1, 1]);
});
