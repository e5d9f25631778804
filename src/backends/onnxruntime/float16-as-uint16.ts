/**
 * Keeps FP16 tensor data in Uint16Array on runtimes that have Float16Array (Node 24 and later).
 *
 * onnxruntime-common checks once, at the first Tensor it builds, whether `globalThis.Float16Array` exists,
 * and from then on turns every float16 tensor's data into a Float16Array. onnxruntime-node 1.30's binding
 * reads a Float16Array input as 0 bytes ("not enough space: expected 12, got 0"; microsoft/onnxruntime
 * PR #32323, open), so on Node 24 every FP16 model failed. Settling that one-time check while Float16Array
 * is hidden keeps Uint16Array, as on Node 20 and 22; Float16Array is put back at once for everyone else.
 */
import { Tensor as OrtTensor } from 'onnxruntime-node';

export function settleFloat16AsUint16(): void {
  const global = globalThis as { Float16Array?: unknown };
  if (global.Float16Array === undefined) {
    new OrtTensor('float32', new Float32Array(0), [0]);
    return;
  }
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'Float16Array');
  delete global.Float16Array;
  try {
    new OrtTensor('float32', new Float32Array(0), [0]);
  } finally {
    if (saved !== undefined) Object.defineProperty(globalThis, 'Float16Array', saved);
  }
}
