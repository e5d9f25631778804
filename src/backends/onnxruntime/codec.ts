/**
 * Worker-side conversion between wire tensors (Triton's raw bytes) and onnxruntime-node tensors. Numeric
 * data is viewed in place: a typed array over the transferred ArrayBuffer, and on the way back the
 * output's own ArrayBuffer. BYTES become the string[] ORT wants and are encoded back to Triton's
 * length-prefixed form (UTF-8 without NUL only, see strings.ts). FP16 travels as raw uint16 data. BF16
 * has no type in onnxruntime-node 1.30.
 */
import { Tensor as OrtTensor } from 'onnxruntime-node';
import { dataTypeInfo, fromOrtType } from '../../common/datatype.js';
import { invalidArg, unsupported } from '../../common/errors.js';
import { TYPED_ARRAY_OF } from '../../common/typed-arrays.js';
import type { OrtWireTensor } from './protocol.js';
import { settleFloat16AsUint16 } from './float16-as-uint16.js';
import { checkStringTensor } from './strings.js';

// Before any tensor is built here: FP16 data stays Uint16Array on Node 24 (see float16-as-uint16.ts).
settleFloat16AsUint16();

function elements(t: OrtWireTensor, size: number): number {
  if (t.data.byteLength % size !== 0) {
    throw invalidArg(`input '${t.name}': ${t.data.byteLength} bytes is not a multiple of ${size}`);
  }
  return t.data.byteLength / size;
}

/**
 * Views a wire tensor as an ORT tensor; only BYTES are decoded (to strings). The ORT type name comes from
 * the datatype table (common/datatype.ts) and the typed array from common/typed-arrays.ts.
 */
export function toOrtTensor(t: OrtWireTensor): OrtTensor {
  if (t.datatype === 'BF16') {
    // The table names ONNX's bfloat16 (autocomplete reads it), but onnxruntime-node has no tensor type for it.
    throw unsupported(`input '${t.name}': onnxruntime-node has no BF16 (bfloat16) tensor type`);
  }
  // Every other datatype has an ORT type in the table, and all of them are onnxruntime-node tensor types.
  const ortType = dataTypeInfo(t.datatype).ortType as OrtTensor.Type;
  if (t.datatype === 'BYTES') return new OrtTensor(ortType, decodeStrings(t), t.shape);
  const View = TYPED_ARRAY_OF[t.datatype];
  return new OrtTensor(ortType, new View(t.data, 0, elements(t, View.BYTES_PER_ELEMENT)), t.shape);
}

function decodeStrings(t: OrtWireTensor): string[] {
  return checkStringTensor(t.name, Buffer.from(t.data)).map((el) => el.toString('utf8'));
}

/** Triton's length-prefixed form in a buffer of its own (not Node's pool), so it can be transferred. */
export function encodeStrings(strings: readonly string[]): ArrayBuffer {
  let total = 0;
  for (const s of strings) total += 4 + Buffer.byteLength(s, 'utf8');
  const out = Buffer.allocUnsafeSlow(total);
  let off = 0;
  for (const s of strings) {
    const len = out.write(s, off + 4, 'utf8');
    out.writeUInt32LE(len, off);
    off += 4 + len;
  }
  return out.buffer;
}

/** An ArrayBuffer holding exactly the view's bytes: the view's own when it spans all of it, else a copy. */
export function ownArrayBuffer(view: ArrayBufferView): ArrayBuffer {
  const ab = view.buffer;
  if (ab instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === ab.byteLength) return ab;
  // A view into a larger (or shared) buffer: transferring would take its neighbours along, so copy.
  return new Uint8Array(ab, view.byteOffset, view.byteLength).slice().buffer;
}

/** Turns an ORT output into a wire tensor, keeping the output's memory where possible. */
export function fromOrtTensor(name: string, t: OrtTensor): OrtWireTensor {
  const datatype = fromOrtType(t.type);
  if (datatype === undefined || dataTypeInfo(datatype).ortType !== t.type) {
    throw unsupported(`output '${name}' has onnxruntime type '${t.type}', which Triton cannot represent`);
  }
  const shape = t.dims.map(Number);
  if (t.type === 'string') {
    return { name, datatype, shape, data: encodeStrings(t.data as string[]) };
  }
  const data = t.data;
  if (!ArrayBuffer.isView(data)) {
    throw unsupported(`output '${name}' is not in CPU memory (location '${t.location}')`);
  }
  return { name, datatype, shape, data: ownArrayBuffer(data) };
}
