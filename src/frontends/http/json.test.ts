import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import { isRoundedInteger, parseJson, parseJsonExact, describeJson } from './json.js';

void test('exact parser agrees with JSON.parse on ordinary documents', () => {
  const docs = [
    '{"a":1,"b":[true,false,null],"c":{"d":"x\\ny\\u00e9\\"q"},"e":-0.5e-3,"f":[]}',
    '[1, 2.5, -3, 1e21, 0, "", {}]',
    '  "just a string"  ',
    '{"nested":[[[[1]]]],"unicode":"héllo ☃ 𝄞"}',
    '12345',
    '{"k":123456789012345}',
  ];
  for (const d of docs) assert.deepEqual(parseJsonExact(d), JSON.parse(d), d);
});

void test('integers beyond 2^53 stay exact as bigint; safe ones are numbers', () => {
  const v = parseJsonExact(
    '[9007199254740991, 9007199254740993, -9223372036854775808, 18446744073709551615, 1.5e300]',
  );
  assert.deepEqual(v, [
    9007199254740991,
    9007199254740993n,
    -9223372036854775808n,
    18446744073709551615n,
    1.5e300,
  ]);
  // a 16+ digit number written with a fraction or exponent is a double
  assert.deepEqual(
    parseJsonExact('[12345678901234567.0, 1234567890123456789e0]'),
    [12345678901234567, 1234567890123456789],
  );
});

void test('NaN and Infinity literals are accepted as Triton does', () => {
  const v = parseJson('[NaN, Infinity, -Infinity, Inf, -Inf]') as number[];
  assert.ok(Number.isNaN(v[0]));
  assert.deepEqual(v.slice(1), [Infinity, -Infinity, Infinity, -Infinity]);
});

void test('250000 levels of nesting do not exhaust the stack', () => {
  const depth = 250000;
  const text = '{"ready":' + '['.repeat(depth) + 'true' + ']'.repeat(depth) + '}';
  let v = (parseJsonExact(text) as { ready: unknown }).ready;
  let n = 0;
  while (Array.isArray(v)) {
    v = v[0];
    n++;
  }
  assert.equal(n, depth);
  assert.equal(v, true);
});

// Each answer below is what Triton 2.51 (rapidjson 1.1.0) answered for the same bytes.
const TRITON_PARSE_ERRORS: [string | Buffer, string][] = [
  ['{"inputs": [', 'Invalid value. at 12'],
  ['[1,', 'Invalid value. at 3'],
  ['[tru]', 'Invalid value. at 4'],
  ['[Infinit]', 'Invalid value. at 8'],
  ['Nope', 'Invalid value. at 1'],
  ['-', 'Invalid value. at 1'],
  ['', 'The document is empty. at 0'],
  ['  \t', 'The document is empty. at 3'],
  ['{"a":1}x', 'The document root must not be followed by other values. at 7'],
  ['{"a":1,}', 'Missing a name for object member. at 7'],
  ['{', 'Missing a name for object member. at 1'],
  ['{"a" 1}', 'Missing a colon after a name of object member. at 5'],
  ['{"a":1 "b":2}', "Missing a comma or '}' after an object member. at 7"],
  ['[1 2]', "Missing a comma or ']' after an array element. at 3"],
  ['[01]', "Missing a comma or ']' after an array element. at 2"],
  ['"abc', 'Missing a closing quotation mark in string. at 4'],
  [Buffer.from('["a\0b"]', 'latin1'), 'Missing a closing quotation mark in string. at 3'],
  ['["a\\x"]', 'Invalid escape character in string. at 3'],
  ['["abc\\', 'Invalid escape character in string. at 5'],
  ['["a\nb"]', 'Invalid escape character in string. at 3'],
  ['["\\u12G4"]', 'Incorrect hex digit after \\u escape in string. at 2'],
  ['["\\uD800"]', 'The surrogate pair in string is invalid. at 2'],
  ['["\\uD800\\u0041"]', 'The surrogate pair in string is invalid. at 2'],
  ['[1.]', 'Miss fraction part in number. at 3'],
  ['1e+', 'Miss exponent in number. at 3'],
  ['[1e400]', 'Number too big to be stored in double. at 1'],
  ['[1' + '0'.repeat(309) + ']', 'Number too big to be stored in double. at 1'],
  ['[0.' + '0'.repeat(100000) + '1e100310]', 'Number too big to be stored in double. at 1'],
  // Offsets count bytes: "é" is two.
  ['["é", x]', 'Invalid value. at 7'],
  [Buffer.from([0xef, 0xbb, 0xbf, 0x20, 0x78]), 'Invalid value. at 4'],
];

void test("refusals are INVALID_ARG with rapidjson's message and byte offset, as Triton prints them", () => {
  for (const [input, expected] of TRITON_PARSE_ERRORS) {
    // JSON.parse takes a number too big for a double (as Infinity): callers re-parse where it matters.
    const parsers = expected.startsWith('Number too big') ? [parseJsonExact] : [parseJson, parseJsonExact];
    for (const parse of parsers) {
      assert.throws(
        () => parse(input),
        (err: unknown) => {
          assert.ok(err instanceof NereidError);
          assert.equal(err.code, 'INVALID_ARG');
          assert.equal(err.message, `failed to parse the request JSON buffer: ${expected}`, String(input));
          return true;
        },
      );
    }
  }
});

void test('takes what rapidjson 1.1.0 takes beyond JSON, as Triton does', () => {
  // A byte order mark, a NUL byte ending the document, a lone low surrogate, NaN/Infinity spellings.
  assert.deepEqual(parseJson(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d])), {});
  assert.deepEqual(parseJson(Buffer.from('{"a":1}\0 junk', 'latin1')), { a: 1 });
  assert.deepEqual(parseJson('["\\uDC00"]'), ['\uDC00']);
  const v = parseJson('[-NaN, NInf, -Inf, Infinity, NaN.5, -Inf.25e1]') as number[];
  assert.ok(Number.isNaN(v[0]));
  assert.deepEqual(v.slice(1), [Infinity, -Infinity, Infinity, 0.5, -2.5]);
  // Exponents up to 308 minus the fraction digits folded in, and 308 digits, are fine.
  assert.deepEqual(parseJson('[1e308, 0.001e310, 10e308]'), [1e308, 1e307, Infinity]);
  assert.equal(parseJsonExact('1' + '0'.repeat(307)), 10n ** 307n);
});

void test('a surrogate pair escape is one character; the fast path and the exact parser agree', () => {
  const text = '{"s":"\\uD83D\\uDE00 \\u00e9","n":[1.5,-2e-3]}';
  assert.deepEqual(parseJson(text), JSON.parse(text));
  assert.deepEqual(parseJsonExact(text), JSON.parse(text));
});

void test('invalid UTF-8 is not refused (rapidjson does not validate it) and offsets stay in bytes', () => {
  assert.deepEqual(parseJson(Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x5d])), ['\ufffd']);
  assert.throws(
    () => parseJson(Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x20, 0x78])),
    /Missing a comma or '\]' after an array element\. at 5$/,
  );
});

void test('time stays linear on hostile numbers', () => {
  const start = process.hrtime.bigint();
  assert.throws(() => parseJsonExact('[' + '9'.repeat(5_000_000) + ']'), /Number too big/);
  assert.throws(() => parseJsonExact('[0.' + '0'.repeat(5_000_000) + '1e9999999]'), /Number too big/);
  assert.ok(Number(process.hrtime.bigint() - start) / 1e9 < 5);
});

void test('a "__proto__" key is an own property, not a prototype change', () => {
  const v = parseJsonExact('{"__proto__":{"polluted":true},"x":1}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ['__proto__', 'x']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

void test('isRoundedInteger flags only integer-valued numbers beyond 2^53', () => {
  assert.equal(isRoundedInteger(2 ** 53), true);
  assert.equal(isRoundedInteger(-(2 ** 60)), true);
  assert.equal(isRoundedInteger(2 ** 53 - 1), false);
  assert.equal(isRoundedInteger(0.5), false);
  assert.equal(isRoundedInteger(5n), false);
  assert.equal(isRoundedInteger('9007199254740993'), false);
});

void test('describeJson is short and handles bigint', () => {
  assert.equal(describeJson(12n), '12');
  assert.equal(describeJson({ a: 1n }), '{"a":"1"}');
  assert.equal(describeJson('x'.repeat(100)).length, 40);
  assert.equal(describeJson(undefined), 'nothing');
});

void test('the fast path and the exact parser agree on mutated documents (seeded)', () => {
  const base = Buffer.from(
    '{"inputs":[{"name":"I\\u00e9","datatype":"FP32","shape":[2],"data":[1.5e3,-0]}],' +
      '"id":"x\\n\\ud83d\\ude00","p":[true,false,null,{"a":{}},[],"é",12345]}',
  );
  const bytes = Buffer.from(' \t\n\r\0\x01"\\/{}[],:-+.09eEnulltrfsaNIiy\x7f\x80\xc3\xff', 'latin1');
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const outcome = (parse: (b: Buffer) => unknown, b: Buffer): unknown => {
    try {
      return { value: parse(b) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  let accepted = 0;
  for (let i = 0; i < 3000; i++) {
    const k = next(base.length);
    const c = bytes.subarray(next(bytes.length)).subarray(0, 1);
    const op = next(4);
    const doc =
      op === 0
        ? Buffer.concat([base.subarray(0, k), c, base.subarray(k + 1)])
        : op === 1
          ? Buffer.concat([base.subarray(0, k), c, base.subarray(k)])
          : op === 2
            ? Buffer.concat([base.subarray(0, k), base.subarray(k + 1)])
            : base.subarray(0, k);
    const fast = outcome(parseJson, doc);
    assert.deepEqual(fast, outcome(parseJsonExact, doc), doc.toString('latin1'));
    if ('value' in (fast as object)) accepted++;
  }
  // Both kinds of outcome were exercised.
  assert.ok(accepted > 300 && accepted < 2700, String(accepted));
});
