/**
 * FP16 and BF16 ↔ JavaScript number. Node 20 has no Float16Array, so half-precision tensors travel as
 * Uint16Array bit patterns; these helpers convert numbers to those bits (round to nearest, ties to even,
 * straight from the double so there is no double rounding through float32) and back.
 */

interface HalfFormat {
  readonly exponentBits: number;
  readonly mantissaBits: number;
}

const FP16: HalfFormat = { exponentBits: 5, mantissaBits: 10 };
const BF16: HalfFormat = { exponentBits: 8, mantissaBits: 7 };

const f64 = new Float64Array(1);
const f64Words = new Uint32Array(f64.buffer);
// Index of the word holding sign and exponent of a double in this host's byte order.
const HIGH_WORD = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** Binary exponent of a finite, non-zero double (floor(log2(|v|)) for normal doubles). */
function exponentOf(a: number): number {
  f64[0] = a;
  const biased = (f64Words[HIGH_WORD] >>> 20) & 0x7ff;
  // Doubles below 2^-1022 are far below any half's range; treat them as the smallest normal exponent.
  return biased === 0 ? -1022 : biased - 1023;
}

/** Rounds to an integer, ties to even. */
function roundEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

function toBits(v: number, fmt: HalfFormat): number {
  const { exponentBits: E, mantissaBits: M } = fmt;
  const maxExp = (1 << E) - 1;
  const bias = maxExp >> 1;
  const signBit = 1 << (E + M);
  const infBits = maxExp << M;
  if (Number.isNaN(v)) return infBits | (1 << (M - 1));
  const sign = v < 0 || Object.is(v, -0) ? signBit : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | infBits;
  if (a === 0) return sign;
  const minNormalExp = 1 - bias;
  const e = exponentOf(a);
  if (e < minNormalExp) {
    // Subnormal (or zero after rounding): units of 2^(minNormalExp - M). A carry to 2^M is the smallest
    // normal number, whose bit pattern is exactly that integer.
    return sign | roundEven(a * 2 ** (M - minNormalExp));
  }
  let mant = roundEven(a * 2 ** (M - e) - 2 ** M);
  let field = e + bias;
  if (mant === 2 ** M) {
    mant = 0;
    field++;
  }
  if (field >= maxExp) return sign | infBits;
  return sign | (field << M) | mant;
}

function fromBits(bits: number, fmt: HalfFormat): number {
  const { exponentBits: E, mantissaBits: M } = fmt;
  const maxExp = (1 << E) - 1;
  const bias = maxExp >> 1;
  const sign = bits & (1 << (E + M)) ? -1 : 1;
  const field = (bits >>> M) & maxExp;
  const mant = bits & ((1 << M) - 1);
  if (field === maxExp) return mant === 0 ? sign * Infinity : NaN;
  if (field === 0) return sign * mant * 2 ** (1 - bias - M);
  return sign * (2 ** M + mant) * 2 ** (field - bias - M);
}

/** IEEE 754 half-precision bits of `v`, rounded to nearest even. */
export const toFloat16Bits = (v: number): number => toBits(v, FP16);
/** The number a half-precision bit pattern stands for. */
export const fromFloat16Bits = (bits: number): number => fromBits(bits, FP16);
/** bfloat16 bits of `v`, rounded to nearest even. */
export const toBFloat16Bits = (v: number): number => toBits(v, BF16);
/** The number a bfloat16 bit pattern stands for. */
export const fromBFloat16Bits = (bits: number): number => fromBits(bits, BF16);
