import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from './half.js';

void test('FP16: known bit patterns, rounding to nearest even, overflow and specials', () => {
  const cases: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [0.1, 0x2e66],
    [65504, 0x7bff],
    [65519, 0x7bff], // below the halfway point to 65536
    [65520, 0x7c00], // halfway: ties to even rounds up to infinity
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -25, 0x0000], // halfway to the smallest subnormal: ties to even (zero)
    [3 * 2 ** -25, 0x0002], // 1.5 units: ties to even (2)
    [1 + 2 ** -11, 0x3c00], // halfway between 1 and the next half: even mantissa wins
    [1 + 3 * 2 ** -11, 0x3c02],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [1e-10, 0x0000],
  ];
  for (const [v, bits] of cases) assert.equal(toFloat16Bits(v), bits, `toFloat16Bits(${v})`);
  assert.ok(Number.isNaN(fromFloat16Bits(toFloat16Bits(NaN))));
  assert.equal(fromFloat16Bits(0x3555), 0.333251953125);
});

void test('FP16 and BF16: every non-NaN bit pattern survives bits → number → bits', () => {
  for (let bits = 0; bits < 0x10000; bits++) {
    const h = fromFloat16Bits(bits);
    if (!Number.isNaN(h)) assert.equal(toFloat16Bits(h), bits);
    const b = fromBFloat16Bits(bits);
    if (!Number.isNaN(b)) assert.equal(toBFloat16Bits(b), bits);
  }
});

void test('BF16: known bit patterns and rounding', () => {
  assert.equal(toBFloat16Bits(1), 0x3f80);
  assert.equal(toBFloat16Bits(-2), 0xc000);
  assert.equal(toBFloat16Bits(3.140625), 0x4049);
  assert.equal(toBFloat16Bits(Math.PI), 0x4049);
  assert.equal(toBFloat16Bits(1 + 2 ** -8), 0x3f80); // tie → even
  assert.equal(toBFloat16Bits(1 + 3 * 2 ** -8), 0x3f82);
  assert.equal(toBFloat16Bits(3.39e38), 0x7f7f); // the largest finite bfloat16
  assert.equal(toBFloat16Bits(3.4e38), 0x7f80); // past the halfway point to 2^128
  assert.equal(fromBFloat16Bits(0x7f7f), 3.3895313892515355e38);
  assert.ok(Number.isNaN(fromBFloat16Bits(toBFloat16Bits(NaN))));
});
