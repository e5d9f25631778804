/**
 * The classification extension: replaces an output by its top-N entries as BYTES strings
 * "<value>:<index>[:<label>]", shape [batch, N] for batching models and [N] otherwise.
 */
import { invalidArg } from '../common/errors.js';
import { joinBytesElements, type Tensor } from '../common/tensor.js';

function readElements(t: Tensor): number[] {
  const d = t.data;
  const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const out: number[] = [];
  switch (t.datatype) {
    case 'FP32':
      for (let o = 0; o < d.length; o += 4) out.push(view.getFloat32(o, true));
      return out;
    case 'FP64':
      for (let o = 0; o < d.length; o += 8) out.push(view.getFloat64(o, true));
      return out;
    case 'INT8':
      for (let o = 0; o < d.length; o++) out.push(view.getInt8(o));
      return out;
    case 'UINT8':
    case 'BOOL':
      for (let o = 0; o < d.length; o++) out.push(view.getUint8(o));
      return out;
    case 'INT16':
      for (let o = 0; o < d.length; o += 2) out.push(view.getInt16(o, true));
      return out;
    case 'UINT16':
      for (let o = 0; o < d.length; o += 2) out.push(view.getUint16(o, true));
      return out;
    case 'INT32':
      for (let o = 0; o < d.length; o += 4) out.push(view.getInt32(o, true));
      return out;
    case 'UINT32':
      for (let o = 0; o < d.length; o += 4) out.push(view.getUint32(o, true));
      return out;
    case 'INT64':
      for (let o = 0; o < d.length; o += 8) out.push(Number(view.getBigInt64(o, true)));
      return out;
    case 'UINT64':
      for (let o = 0; o < d.length; o += 8) out.push(Number(view.getBigUint64(o, true)));
      return out;
    default:
      throw invalidArg(
        `class result not available for output '${t.name}' due to unsupported type '${t.datatype}'`,
      );
  }
}

function formatValue(datatype: string, v: number): string {
  // Triton prints floats with six decimals (std::to_string) and integers as they are.
  return datatype === 'FP32' || datatype === 'FP64' ? v.toFixed(6) : String(v);
}

export function classify(
  tensor: Tensor,
  topN: number,
  batching: boolean,
  labels: readonly string[] | undefined,
): Tensor {
  const values = readElements(tensor);
  const batch = batching ? (tensor.shape[0] ?? 1) : 1;
  const perItem = batch === 0 ? 0 : values.length / batch;
  const k = Math.min(topN, perItem);
  const entries: string[] = [];
  for (let b = 0; b < batch; b++) {
    const base = b * perItem;
    const idx = Array.from({ length: perItem }, (_, i) => i);
    idx.sort((x, y) => values[base + y] - values[base + x] || x - y);
    for (let i = 0; i < k; i++) {
      const c = idx[i];
      const label = labels?.[c];
      const s = `${formatValue(tensor.datatype, values[base + c])}:${c}`;
      entries.push(label !== undefined && label !== '' ? `${s}:${label}` : s);
    }
  }
  return {
    name: tensor.name,
    datatype: 'BYTES',
    shape: batching ? [batch, k] : [k],
    data: joinBytesElements(entries),
  };
}
