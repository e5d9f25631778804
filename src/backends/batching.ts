/**
 * Batch assembly for backends: join the inputs of several requests along dim 0 into one tensor, and cut a
 * batched output back into one tensor per request. Pure functions over Tensor, shared by every backend
 * that runs a batch as one call.
 *
 * Copies: concatBatch makes exactly one allocation and one copy (joining is a copy by nature); a single
 * tensor is returned as it is. splitBatch makes none: the pieces are views over the batched output.
 * concatBatch allocates outside Node's Buffer pool, so the result owns its whole ArrayBuffer and can be
 * transferred to a worker thread.
 */
import { byteSizeOf } from '../common/datatype.js';
import { internal } from '../common/errors.js';
import { elementCount, type Tensor } from '../common/tensor.js';

/** Shape without the leading batch dimension. */
function itemShape(t: Tensor): readonly number[] {
  return t.shape.slice(1);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Joins the tensors of one input along dim 0. All parts must share the datatype and the non-batch dims
 * (the core guarantees it; a violation is an internal error). The result carries the first part's name.
 */
export function concatBatch(parts: readonly Tensor[]): Tensor {
  if (parts.length === 0) throw internal('cannot concatenate an empty batch');
  const first = parts[0];
  if (parts.length === 1) return first;
  if (first.shape.length === 0) {
    throw internal(`cannot batch tensor '${first.name}': it has no batch dimension`);
  }
  const inner = itemShape(first);
  let batch = 0;
  let bytes = 0;
  for (const p of parts) {
    if (p.datatype !== first.datatype) {
      throw internal(
        `cannot batch tensor '${first.name}': datatype ${p.datatype} differs from ${first.datatype}`,
      );
    }
    if (p.shape.length === 0 || !sameShape(itemShape(p), inner)) {
      throw internal(
        `cannot batch tensor '${first.name}': shape [${p.shape.join(',')}] differs from [${first.shape.join(',')}] beyond the batch dimension`,
      );
    }
    batch += p.shape[0];
    bytes += p.data.length;
  }
  // allocUnsafeSlow: every byte is written below, and the result must not share a pooled ArrayBuffer.
  const data = Buffer.allocUnsafeSlow(bytes);
  let off = 0;
  for (const p of parts) {
    data.set(p.data, off);
    off += p.data.length;
  }
  return { name: first.name, datatype: first.datatype, shape: [batch, ...inner], data };
}

/** Byte offsets of BYTES elements: offsets[i] is where element i starts; offsets[n] is the end. */
function bytesElementOffsets(data: Buffer): number[] {
  const offsets = [0];
  let off = 0;
  while (off < data.length) {
    if (off + 4 > data.length) throw internal('malformed BYTES output: truncated element length');
    off += 4 + data.readUInt32LE(off);
    if (off > data.length) throw internal('malformed BYTES output: element length exceeds the data');
    offsets.push(off);
  }
  return offsets;
}

/**
 * Cuts a batched tensor into one tensor per request, `batchSizes[i]` rows each, as views over the input.
 * The sizes must add up to dim 0.
 */
export function splitBatch(tensor: Tensor, batchSizes: readonly number[]): Tensor[] {
  if (batchSizes.length === 1 && tensor.shape[0] === batchSizes[0]) return [tensor];
  const total = batchSizes.reduce((a, b) => a + b, 0);
  if (tensor.shape.length === 0 || tensor.shape[0] !== total) {
    throw internal(
      `output '${tensor.name}' has shape [${tensor.shape.join(',')}], expected a batch dimension of ${total}`,
    );
  }
  const inner = itemShape(tensor);
  const perItem = elementCount(inner);
  const out: Tensor[] = [];
  const pieces = (start: number, end: number, rows: number): void => {
    out.push({
      name: tensor.name,
      datatype: tensor.datatype,
      shape: [rows, ...inner],
      data: tensor.data.subarray(start, end),
    });
  };

  if (tensor.datatype === 'BYTES') {
    const offsets = bytesElementOffsets(tensor.data);
    if (offsets.length - 1 !== total * perItem) {
      throw internal(
        `output '${tensor.name}' has ${offsets.length - 1} BYTES elements, shape [${tensor.shape.join(',')}] needs ${total * perItem}`,
      );
    }
    let element = 0;
    for (const rows of batchSizes) {
      const next = element + rows * perItem;
      pieces(offsets[element], offsets[next], rows);
      element = next;
    }
    return out;
  }

  const rowBytes = perItem * byteSizeOf(tensor.datatype);
  if (tensor.data.length !== total * rowBytes) {
    throw internal(
      `output '${tensor.name}' has ${tensor.data.length} bytes, shape [${tensor.shape.join(',')}] needs ${total * rowBytes}`,
    );
  }
  let off = 0;
  for (const rows of batchSizes) {
    pieces(off, off + rows * rowBytes, rows);
    off += rows * rowBytes;
  }
  return out;
}
