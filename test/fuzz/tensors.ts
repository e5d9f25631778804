/**
 * Tensors for the fuzzer: valid ones in wire form (row-major little-endian bytes, BOOL one byte of 0/1,
 * BYTES as u32-LE length-prefixed elements) with small shapes, which the round-trip targets send through a
 * client encoder and a server decoder, and the helpers to compare what came back.
 */
import fc from 'fast-check';
import { ALL_DATATYPES, byteSizeOf, type DataType } from '../../src/common/datatype.js';
import { joinBytesElements } from '../../src/common/tensor.js';
import { hostileString } from './arbitraries.js';

export interface WireTensor {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: number[];
  readonly data: Buffer;
}

export const shapeArb: fc.Arbitrary<number[]> = fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 });

export const elementCountOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Bytes of `count` elements of `datatype`; `utf8` keeps BYTES elements UTF-8 text (for JSON). */
export function dataArb(datatype: DataType, count: number, utf8 = false): fc.Arbitrary<Buffer> {
  if (datatype === 'BYTES') {
    const element = utf8
      ? fc.string({ unit: 'grapheme', maxLength: 6 }).map((s) => Buffer.from(s, 'utf8'))
      : fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b));
    return fc.array(element, { minLength: count, maxLength: count }).map((els) => joinBytesElements(els));
  }
  if (datatype === 'BOOL') {
    return fc
      .array(fc.boolean(), { minLength: count, maxLength: count })
      .map((b) => Buffer.from(b.map(Number)));
  }
  const size = byteSizeOf(datatype);
  // Elements as random bits, or the values that break converters: ±0, ±Infinity, NaN, extremes.
  const element = fc.oneof(
    { arbitrary: fc.uint8Array({ minLength: size, maxLength: size }), weight: 3 },
    { arbitrary: fc.constantFrom(...SPECIAL_ELEMENTS[size]), weight: 1 },
  );
  return fc.array(element, { minLength: count, maxLength: count }).map((els) =>
    Buffer.concat(
      els.map((e) => Buffer.from(e)),
      count * size,
    ),
  );
}

const hex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));
/** Little-endian bit patterns: 0, -0, ±Infinity, NaNs, the extremes of signed and unsigned integers. */
const SPECIAL_ELEMENTS: Readonly<Record<number, readonly Uint8Array[]>> = {
  1: [hex('00'), hex('80'), hex('7f'), hex('ff')],
  2: [hex('0000'), hex('0080'), hex('007c'), hex('00fc'), hex('017e'), hex('ff7f'), hex('ffff'), hex('0100')],
  4: [
    hex('00000000'),
    hex('00000080'),
    hex('0000807f'),
    hex('000080ff'),
    hex('0000c07f'),
    hex('0100807f'),
    hex('ffff7f7f'),
    hex('01000000'),
    hex('ffffffff'),
    hex('ffffff7f'),
  ],
  8: [
    hex('0000000000000000'),
    hex('0000000000000080'),
    hex('000000000000f07f'),
    hex('000000000000f0ff'),
    hex('000000000000f87f'),
    hex('ffffffffffffef7f'),
    hex('0100000000000000'),
    hex('ffffffffffffffff'),
    hex('ffffffffffffff7f'),
    hex('0000000000002000'),
  ],
};

export const datatypeArb: fc.Arbitrary<DataType> = fc.constantFrom(...ALL_DATATYPES);

/** A tensor name: plausible, or anything a client may send. */
export const tensorNameArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom('INPUT0', 'INPUT1', 'x'), weight: 4 },
  { arbitrary: hostileString.filter((s) => s !== ''), weight: 1 },
);

export function wireTensorArb(
  options: { utf8?: boolean; datatypes?: readonly DataType[]; names?: readonly string[] } = {},
): fc.Arbitrary<WireTensor> {
  const dt = options.datatypes ? fc.constantFrom(...options.datatypes) : datatypeArb;
  const name = options.names ? fc.constantFrom(...options.names) : tensorNameArb;
  return fc
    .record({ name, datatype: dt, shape: shapeArb })
    .chain((t) =>
      dataArb(t.datatype, elementCountOf(t.shape), options.utf8 ?? false).map((data) => ({ ...t, data })),
    );
}

/**
 * Float bytes compared as values (every NaN equal, -0 distinct from 0): JSON carries NaN but not its
 * payload bits. Other datatypes compare byte for byte.
 */
export function sameTensorData(datatype: DataType, a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false;
  if (datatype !== 'FP32' && datatype !== 'FP64') return a.equals(b);
  const size = datatype === 'FP32' ? 4 : 8;
  for (let i = 0; i < a.length; i += size) {
    const x = size === 4 ? a.readFloatLE(i) : a.readDoubleLE(i);
    const y = size === 4 ? b.readFloatLE(i) : b.readDoubleLE(i);
    if (!Object.is(x, y) && !(Number.isNaN(x) && Number.isNaN(y))) return false;
  }
  return true;
}
