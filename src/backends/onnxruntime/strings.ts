/**
 * What a BYTES element must be to pass through onnxruntime-node: valid UTF-8 without a NUL byte. Its
 * public API takes a string tensor only as an array of JavaScript strings (a Uint8Array or Buffer element
 * is refused: "Tensor.data[0] must be a string") and hands each to onnxruntime as the string's UTF-8
 * encoding, a NUL-terminated C string. So bytes that are not UTF-8 cannot be expressed (a byte-per-char
 * "latin1" string would reach the model as different bytes: 0xFF as C3 BF; a lone surrogate as EF BF BD),
 * and an element is cut at its first NUL. Triton's onnxruntime backend writes the elements into NUL-
 * terminated C strings itself, so there any bytes pass except that NUL cuts. Rather than let a model see
 * altered bytes, such elements are refused with a message saying which byte and why (docs/onnxruntime.md).
 * Checked per request on the main thread, so one bad request does not fail the others of its batch, and
 * again in the worker as it decodes.
 */
import { isUtf8 } from 'node:buffer';
import { invalidArg, type NereidError } from '../../common/errors.js';
import { splitBytesElements } from '../../common/tensor.js';

const WHY =
  'onnxruntime-node passes string tensors to onnxruntime as JavaScript strings, so an element reaches the ' +
  'model unchanged only if it is valid UTF-8 without NUL bytes (docs/onnxruntime.md)';

/** Where the first invalid UTF-8 sequence of `el` starts (el is known not to be valid UTF-8). */
function firstInvalidUtf8(el: Buffer): number {
  let i = 0;
  while (i < el.length) {
    const b = el[i];
    const n =
      b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > el.length || !isUtf8(el.subarray(i, i + n))) return i;
    i += n;
  }
  return i;
}

const hex = (b: number): string => `0x${b.toString(16).padStart(2, '0')}`;

/** The first problem with an element, or undefined when every element can be an ORT string. */
export function stringElementProblem(
  tensorName: string,
  elements: readonly Buffer[],
): NereidError | undefined {
  for (let i = 0; i < elements.length; i++) {
    const el = elements[i];
    const nul = el.indexOf(0);
    if (nul >= 0) {
      return invalidArg(
        `input '${tensorName}': BYTES element ${i} has a NUL byte at offset ${nul}, where onnxruntime would ` +
          `cut the element; ${WHY}`,
      );
    }
    if (!isUtf8(el)) {
      const at = firstInvalidUtf8(el);
      return invalidArg(
        `input '${tensorName}': BYTES element ${i} is not valid UTF-8 (byte ${hex(el[at])} at offset ${at}); ${WHY}`,
      );
    }
  }
  return undefined;
}

/** Checks a length-prefixed BYTES buffer; throws the first problem. */
export function checkStringTensor(tensorName: string, data: Buffer): Buffer[] {
  const elements = splitBytesElements(data);
  const problem = stringElementProblem(tensorName, elements);
  if (problem) throw problem;
  return elements;
}
