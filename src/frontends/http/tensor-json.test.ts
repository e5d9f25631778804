import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DataType } from '../../common/datatype.js';
import { NereidError } from '../../common/errors.js';
import { joinBytesElements } from '../../common/tensor.js';
import { isRoundedIntegerError, parseJsonExact, type JsonIn } from './json.js';
import { jsonToTensorData, tensorDataToJson } from './tensor-json.js';

const BIG = 1 << 26;

function toData(datatype: DataType, shape: number[], data: JsonIn[], exact = false): Buffer {
  const elementCount = shape.reduce((a, b) => a * b, 1);
  return jsonToTensorData({ name: 'IN', datatype, shape, elementCount }, data, BIG, exact);
}

function throwsInvalid(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof NereidError, String(err));
    assert.equal(err.code, 'INVALID_ARG');
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

void test('every fixed-size datatype: JSON → little-endian bytes → JSON', () => {
  const cases: [DataType, JsonIn[], (b: Buffer) => unknown[]][] = [
    ['BOOL', [true, false, true], (b) => [...b]],
    ['UINT8', [0, 255, 7], (b) => [...b]],
    ['UINT16', [0, 65535, 300], (b) => [b.readUInt16LE(0), b.readUInt16LE(2), b.readUInt16LE(4)]],
    ['UINT32', [0, 4294967295, 70000], (b) => [b.readUInt32LE(0), b.readUInt32LE(4), b.readUInt32LE(8)]],
    ['INT8', [-128, 127, -1], (b) => [b.readInt8(0), b.readInt8(1), b.readInt8(2)]],
    ['INT16', [-32768, 32767, -2], (b) => [b.readInt16LE(0), b.readInt16LE(2), b.readInt16LE(4)]],
    ['INT32', [-2147483648, 2147483647, 5], (b) => [b.readInt32LE(0), b.readInt32LE(4), b.readInt32LE(8)]],
    [
      'INT64',
      [-5, 9007199254740991, -9007199254740991],
      (b) => [b.readBigInt64LE(0), b.readBigInt64LE(8), b.readBigInt64LE(16)],
    ],
    [
      'UINT64',
      [0, 9007199254740991, 4294967296],
      (b) => [b.readBigUInt64LE(0), b.readBigUInt64LE(8), b.readBigUInt64LE(16)],
    ],
    ['FP32', [1.5, -0.25, 3], (b) => [b.readFloatLE(0), b.readFloatLE(4), b.readFloatLE(8)]],
    ['FP64', [1.1, -2.5e300, 0], (b) => [b.readDoubleLE(0), b.readDoubleLE(8), b.readDoubleLE(16)]],
  ];
  for (const [dt, data, read] of cases) {
    const buf = toData(dt, [3], data);
    const expected =
      dt === 'BOOL'
        ? data.map((v) => (v ? 1 : 0))
        : dt === 'INT64' || dt === 'UINT64'
          ? data.map((v) => BigInt(v as number))
          : data;
    assert.deepEqual(read(buf), expected, dt);
    const back = tensorDataToJson('OUT', dt, buf, 3);
    assert.deepEqual(JSON.parse(back!), data, dt);
  }
});

void test('nested and flat data give the same row-major bytes', () => {
  const flat = toData('INT32', [2, 3], [1, 2, 3, 4, 5, 6]);
  const nested = toData(
    'INT32',
    [2, 3],
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
  );
  assert.deepEqual(nested, flat);
  // Triton only counts scalars; irregular nesting with the right count is accepted
  assert.deepEqual(toData('INT32', [2, 3], [[1], [2, [3, 4]], 5, [[6]]]), flat);
});

void test('INT64 / UINT64 keep full 64-bit precision (bigint from the exact parser)', () => {
  const data = parseJsonExact('[-9223372036854775808, 9223372036854775807, 9007199254740993]') as JsonIn[];
  const buf = toData('INT64', [3], data, true);
  assert.equal(buf.readBigInt64LE(0), -9223372036854775808n);
  assert.equal(buf.readBigInt64LE(8), 9223372036854775807n);
  assert.equal(buf.readBigInt64LE(16), 9007199254740993n);
  assert.equal(
    tensorDataToJson('O', 'INT64', buf, 3),
    '[-9223372036854775808,9223372036854775807,9007199254740993]',
  );

  const u = toData(
    'UINT64',
    [2],
    parseJsonExact('[18446744073709551615, 9223372036854775808]') as JsonIn[],
    true,
  );
  assert.equal(u.readBigUInt64LE(0), 18446744073709551615n);
  assert.equal(tensorDataToJson('O', 'UINT64', u, 2), '[18446744073709551615,9223372036854775808]');
});

void test('a possibly rounded INT64 number asks for an exact re-parse; out-of-range values are rejected', () => {
  assert.throws(
    () => toData('INT64', [1], [2 ** 60]),
    (err: unknown) => isRoundedIntegerError(err),
  );
  throwsInvalid(
    () => toData('INT64', [1], [9223372036854775808n], true),
    "Unable to parse 'data' for input 'IN': element 0 is 9223372036854775808, expected an integer in [-2^63, 2^63-1]",
  );
  throwsInvalid(
    () => toData('UINT64', [2], [1, -1]),
    "Unable to parse 'data' for input 'IN': element 1 is -1, expected an integer in [0, 18446744073709551615]",
  );
  // 1e20 written as a float is not an exact integer even after the exact parse
  throwsInvalid(
    () => toData('INT64', [1], [1e20], true),
    /element 0 is 100000000000000000000, expected an integer/,
  );
});

void test('narrow integer types reject out-of-range, fractional and non-number values (no wrapping)', () => {
  throwsInvalid(
    () => toData('INT8', [2], [1, 128]),
    "Unable to parse 'data' for input 'IN': element 1 is 128, expected an integer in [-128, 127]",
  );
  throwsInvalid(() => toData('UINT8', [1], [-1]), /element 0 is -1, expected an integer in \[0, 255\]/);
  throwsInvalid(() => toData('INT32', [1], [1.5]), /element 0 is 1.5, expected an integer/);
  throwsInvalid(
    () => toData('UINT32', [1], ['7']),
    /element 0 is "7", expected an integer in \[0, 4294967295\]/,
  );
  throwsInvalid(
    () => toData('BOOL', [1], [1]),
    "Unable to parse 'data' for input 'IN': element 0 is 1, expected true or false",
  );
  throwsInvalid(
    () => toData('FP32', [2], [1, null]),
    "Unable to parse 'data' for input 'IN': element 1 is null, expected a number",
  );
  throwsInvalid(() => toData('INT16', [1], [{ a: 1 }]), /element 0 is \{"a":1\}/);
});

void test('FP16 and BF16 have no JSON form', () => {
  throwsInvalid(
    () => toData('FP16', [1], [1]),
    'receiving FP16 data via JSON is not supported. Please use the binary data format for input IN',
  );
  throwsInvalid(
    () => toData('BF16', [1], [1]),
    'receiving BF16 data via JSON is not supported. Please use the binary data format for input IN',
  );
  assert.equal(tensorDataToJson('O', 'FP16', Buffer.alloc(2), 1), undefined);
  assert.equal(tensorDataToJson('O', 'BF16', Buffer.alloc(2), 1), undefined);
});

void test('element count must match the shape', () => {
  throwsInvalid(
    () => toData('FP32', [2, 2], [1, 2, 3]),
    "unexpected number of elements in 'data' for input 'IN': shape [2,2] has 4 elements, 'data' has 3",
  );
  throwsInvalid(
    () => toData('FP32', [2], [1, 2, 3, 4, 5]),
    "unexpected number of elements in 'data' for input 'IN': shape [2] has 2 elements, 'data' has 5",
  );
  throwsInvalid(
    () => toData('BYTES', [3], ['a', 'b']),
    "unexpected number of elements in 'data' for input 'IN': shape [3] has 3 elements, 'data' has 2",
  );
  assert.equal(toData('FP32', [0, 4], []).length, 0);
});

void test('nesting: 99 levels are fine, 100 are rejected with Triton message', () => {
  const nest = (depth: number, v: JsonIn): JsonIn[] => {
    let x: JsonIn = v;
    for (let i = 0; i < depth; i++) x = [x];
    return x as JsonIn[];
  };
  assert.equal(toData('INT64', [1, 1], nest(99, 123)).readBigInt64LE(0), 123n);
  for (const dt of ['INT64', 'BYTES'] as const) {
    throwsInvalid(
      () => toData(dt, [1, 1], nest(100, dt === 'BYTES' ? 'hello' : 123)),
      "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)",
    );
    throwsInvalid(
      () => toData(dt, [1, 1], nest(120, dt === 'BYTES' ? 'hello' : 123)),
      /JSON nesting depth exceeds maximum allowed limit \(100\)/,
    );
  }
});

void test('BYTES: JSON strings ↔ length-prefixed UTF-8 elements', () => {
  const buf = toData('BYTES', [3], ['abc', '', 'héllo ☃']);
  assert.deepEqual(buf, joinBytesElements(['abc', '', 'héllo ☃']));
  assert.equal(tensorDataToJson('O', 'BYTES', buf, 3), '["abc","","héllo ☃"]');
  throwsInvalid(
    () => toData('BYTES', [1], [5]),
    "Unable to parse 'data' for input 'IN': element 0 is 5, expected a string",
  );
});

void test('BYTES output that is not UTF-8 has no JSON form (sent binary instead)', () => {
  const buf = joinBytesElements([Buffer.from('ok'), Buffer.from([0xff, 0xfe, 0x00])]);
  assert.equal(tensorDataToJson('O', 'BYTES', buf, 2), undefined);
});

void test('JSON byte size above the input limit is refused before allocating', () => {
  assert.throws(
    () => jsonToTensorData({ name: 'IN', datatype: 'FP32', shape: [1000], elementCount: 1000 }, [1], 100),
    /^NereidError: JSON input 'IN' has a byte_size \(4000 bytes\) that exceeds the maximum allowed value of 100 bytes\. Use --http-max-input-size to increase the limit\.$/,
  );
  assert.throws(
    () =>
      jsonToTensorData(
        { name: 'IN', datatype: 'BYTES', shape: [1], elementCount: 1 },
        ['x'.repeat(200)],
        100,
      ),
    /JSON input 'IN' has a byte_size \(204 bytes\)/,
  );
});

void test('outputs: float formatting, NaN/Infinity literals, misaligned buffers, size mismatch', () => {
  const f = Buffer.alloc(12);
  f.writeFloatLE(0.1, 0);
  f.writeFloatLE(NaN, 4);
  f.writeFloatLE(-Infinity, 8);
  assert.equal(tensorDataToJson('O', 'FP32', f, 3), '[0.10000000149011612,NaN,-Infinity]');

  // a view at an odd offset still reads correctly (copied once for alignment)
  const backing = Buffer.alloc(9);
  backing.writeInt32LE(-7, 1);
  backing.writeInt32LE(9, 5);
  assert.equal(tensorDataToJson('O', 'INT32', backing.subarray(1), 2), '[-7,9]');

  assert.throws(
    () => tensorDataToJson('O', 'INT32', Buffer.alloc(8), 3),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INTERNAL' &&
      err.message ===
        "Failed to write 'data' field: output tensor shape does not match size of output for 'O'",
  );
  assert.throws(
    () => tensorDataToJson('O', 'BYTES', joinBytesElements(['a']), 2),
    /does not match size of output for 'O'/,
  );
  assert.throws(() => tensorDataToJson('O', 'BYTES', Buffer.from([9, 0, 0, 0, 1]), 1), /does not match size/);
  assert.equal(tensorDataToJson('O', 'BOOL', Buffer.from([0, 2, 1]), 3), '[false,true,true]');
});

void test('float outputs keep the sign of -0 and print NaN/Infinity as Triton does', () => {
  const f32 = Buffer.from(new Float32Array([-0, 0, -1.5, NaN]).buffer);
  assert.equal(tensorDataToJson('o', 'FP32', f32, 4), '[-0.0,0,-1.5,NaN]');
  const f64 = Buffer.from(new Float64Array([-0, Infinity]).buffer);
  assert.equal(tensorDataToJson('o', 'FP64', f64, 2), '[-0.0,Infinity]');
  assert.equal(tensorDataToJson('o', 'FP64', Buffer.from(new Float64Array([0.25, 1]).buffer), 2), '[0.25,1]');
});
