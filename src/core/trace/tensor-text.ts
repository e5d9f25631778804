/**
 * A tensor's values as Triton's trace file writes them at level TENSORS ("data": "1,2,3"): numbers as a
 * C++ ostream prints them (floats with 6 significant digits, %g style), BOOL as 0/1, BYTES elements in
 * escaped quotes, FP16/BF16 left empty (Triton skips them). Triton prints INT8/UINT8 as raw characters;
 * here they are numbers, so the file stays valid JSON whatever the bytes are (docs/tracing.md).
 */
import type { Tensor } from '../../common/tensor.js';

/** C++'s default `ostream << double`: %g with precision 6. */
export function formatG6(x: number): string {
  if (Number.isNaN(x)) return x < 0 ? '-nan' : 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const exp = Math.floor(Math.log10(Math.abs(Number(x.toPrecision(6)))));
  if (exp < -4 || exp >= 6) {
    const [mantissa, e] = x.toExponential(5).split('e');
    const m = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
    const n = Number(e);
    return `${m}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  const fixed = x.toFixed(Math.max(0, 5 - exp));
  return fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
}

/** JSON-string-safe text of a BYTES element (Triton writes the bytes as they are). */
function bytesElement(b: Buffer): string {
  return `\\"${JSON.stringify(b.toString('latin1')).slice(1, -1)}\\"`;
}

/** The comma-separated values of `t` (its data is trusted: the core validated it). */
export function tensorText(t: Tensor): string {
  const d = t.data;
  const parts: string[] = [];
  const each = (size: number, read: (off: number) => string): void => {
    for (let off = 0; off + size <= d.length; off += size) parts.push(read(off));
  };
  switch (t.datatype) {
    case 'BOOL':
      each(1, (o) => (d[o] === 0 ? '0' : '1'));
      break;
    case 'UINT8':
      each(1, (o) => String(d.readUInt8(o)));
      break;
    case 'INT8':
      each(1, (o) => String(d.readInt8(o)));
      break;
    case 'UINT16':
      each(2, (o) => String(d.readUInt16LE(o)));
      break;
    case 'INT16':
      each(2, (o) => String(d.readInt16LE(o)));
      break;
    case 'UINT32':
      each(4, (o) => String(d.readUInt32LE(o)));
      break;
    case 'INT32':
      each(4, (o) => String(d.readInt32LE(o)));
      break;
    case 'UINT64':
      each(8, (o) => String(d.readBigUInt64LE(o)));
      break;
    case 'INT64':
      each(8, (o) => String(d.readBigInt64LE(o)));
      break;
    case 'FP32':
      each(4, (o) => formatG6(d.readFloatLE(o)));
      break;
    case 'FP64':
      each(8, (o) => formatG6(d.readDoubleLE(o)));
      break;
    case 'BYTES': {
      let off = 0;
      while (off + 4 <= d.length) {
        const len = d.readUInt32LE(off);
        off += 4;
        if (off + len > d.length) break;
        parts.push(bytesElement(d.subarray(off, off + len)));
        off += len;
      }
      break;
    }
    default:
      // FP16 and BF16: Triton writes no values.
      break;
  }
  return parts.join(',');
}
