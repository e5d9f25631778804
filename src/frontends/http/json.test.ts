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

void test('syntax errors are INVALID_ARG with a reason and an offset', () => {
  const cases: [string, RegExp][] = [
    ['{"a":1,}', /Missing a name for object member at 7$/],
    ['{"a" 1}', /Missing a colon after a name of object member at 5$/],
    ['[1 2]', /Missing a comma or \] after an array element at 3$/],
    ['{"a":1 "b":2}', /Missing a comma or \} after an object member at 7$/],
    ['', /The document is empty at 0$/],
    ['[1,', /Unexpected end of input at 3$/],
    ['"abc', /Missing a closing quotation mark in string at 0$/],
    ['{} x', /The document root must not be followed by other values at 3$/],
    ['[tru]', /Invalid value at 1$/],
    ['[01]', /Missing a comma or \] after an array element at 2$/],
    ['[1.]', /Missing fraction part in number at 3$/],
    ['["a\\x"]', /Invalid escape character in string at 1$/],
    ['["a\nb"]', /Invalid encoding in string at 3$/],
  ];
  for (const [text, re] of cases) {
    assert.throws(
      () => parseJson(text),
      (err: unknown) => {
        assert.ok(err instanceof NereidError);
        assert.equal(err.code, 'INVALID_ARG');
        assert.match(err.message, /^failed to parse the request JSON buffer: /);
        assert.match(err.message, re, text);
        return true;
      },
    );
  }
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
