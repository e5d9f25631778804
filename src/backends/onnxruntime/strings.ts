/**
 * What a BYTES element must be to pass through onnxruntime-node: it turns JS strings into UTF-8 C
 * strings, so bytes that are not UTF-8 cannot survive the trip and an element is cut at its first NUL.
 * Such elements are refused rather than silently altered. Checked per request on the main thread, so one
 * bad request does not fail the others of its batch, and again in the worker as it decodes.
 */
import { isUtf8 } from 'node:buffer';
import { invalidArg, type NereidError } from '../../common/errors.js';
import { splitBytesElements } from '../../common/tensor.js';

/** The first problem with an element, or undefined when every element can be an ORT string. */
export function stringElementProblem(
  tensorName: string,
  elements: readonly Buffer[],
): NereidError | undefined {
  for (let i = 0; i < elements.length; i++) {
    const el = elements[i];
    if (el.includes(0)) {
      return invalidArg(
        `input '${tensorName}': BYTES element ${i} contains a NUL byte, which onnxruntime-node string tensors cannot carry`,
      );
    }
    if (!isUtf8(el)) {
      return invalidArg(
        `input '${tensorName}': BYTES element ${i} is not valid UTF-8, which onnxruntime-node string tensors require`,
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
