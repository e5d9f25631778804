/**
 * Protocol-neutral pieces of building requests and reading answers: the request parameters an
 * InferOptions stands for, model versions, parameter filtering, and the check that an output's bytes fit
 * its datatype and shape (server bytes are checked before anyone reads them).
 */
import { byteSizeOf, isDataType, type DataType } from '../common/datatype.js';
import { countBytesElements } from '../common/tensor.js';
import { setOwn } from '../common/own.js';
import { NereidClientError } from './errors.js';
import type { ParameterValue } from './infer-input.js';
import type { InferOptions } from './types.js';

/** Parameters with an InferOptions field of their own (or owned by the transport). */
const OWN_OPTION: Readonly<Record<string, string>> = {
  sequence_id: 'sequenceId',
  sequence_start: 'sequenceStart',
  sequence_end: 'sequenceEnd',
  priority: 'priority',
  timeout: 'timeout',
  binary_data_output: 'outputs',
};

function checkUnsigned(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${v}`);
  return v;
}

/** The request-level parameters of an inference: custom keys plus sequence, priority and timeout. */
export function requestParameters(options: InferOptions): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const [key, value] of Object.entries(options.parameters ?? {})) {
    // hasOwn: 'constructor' or '__proto__' are parameter names like any other, not Object.prototype's.
    const own = Object.hasOwn(OWN_OPTION, key) ? OWN_OPTION[key] : undefined;
    if (own !== undefined) throw new TypeError(`parameter '${key}' is set with the '${own}' option`);
    setOwn(out, key, value);
  }
  const seq = options.sequenceId;
  if (typeof seq === 'number') {
    if (checkUnsigned('sequenceId', seq) !== 0) out.sequence_id = seq;
  } else if (typeof seq === 'bigint') {
    if (seq < 0n || seq >= 2n ** 64n) throw new RangeError(`sequenceId ${seq} does not fit uint64`);
    if (seq !== 0n) out.sequence_id = seq;
  } else if (typeof seq === 'string') {
    if (seq !== '') out.sequence_id = seq;
  }
  if (options.sequenceStart) out.sequence_start = true;
  if (options.sequenceEnd) out.sequence_end = true;
  if (options.priority !== undefined && checkUnsigned('priority', options.priority) !== 0) {
    out.priority = options.priority;
  }
  if (options.timeout !== undefined) out.timeout = checkUnsigned('timeout', options.timeout);
  return out;
}

/** '' for "the policy's default version". */
export function versionString(version: string | number | undefined): string {
  if (version === undefined) return '';
  if (typeof version === 'number') return String(checkUnsigned('model version', version));
  if (typeof version !== 'string') throw new TypeError('model version must be a string or a number');
  return version;
}

/** Keeps the primitive members of a parameters object from the wire (anything else is dropped). */
export function primitiveParameters(v: unknown, drop?: string): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    if (key === drop) continue;
    const t = typeof value;
    if (t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean')
      setOwn(out, key, value as ParameterValue);
  }
  return out;
}

/** Malformed server data: a NereidClientError that says so. */
export function malformed(message: string, status?: number): NereidClientError {
  return new NereidClientError(`malformed response from the server: ${message}`, { status });
}

/** Validates an output's datatype and shape as sent by the server. */
export function checkOutputHeader(
  name: unknown,
  datatype: unknown,
  shape: unknown,
): [string, DataType, number[]] {
  if (typeof name !== 'string') throw malformed('an output has no name');
  if (typeof datatype !== 'string' || !isDataType(datatype)) {
    throw malformed(`output '${name}' has an unknown datatype ${JSON.stringify(datatype)}`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    throw malformed(`output '${name}' has an invalid shape`);
  }
  return [name, datatype, shape as number[]];
}

/** Checks that wire-form bytes hold exactly the elements of `shape`. */
export function checkOutputData(
  name: string,
  datatype: DataType,
  shape: readonly number[],
  data: Buffer,
): void {
  let count = 1;
  for (const d of shape) count *= d;
  if (datatype === 'BYTES') {
    let got: number;
    try {
      got = countBytesElements(data);
    } catch (err) {
      throw malformed(`output '${name}': ${(err as Error).message}`);
    }
    if (got !== count)
      throw malformed(`output '${name}' has ${got} BYTES elements for shape [${shape.join(',')}]`);
    return;
  }
  const expected = count * byteSizeOf(datatype);
  if (data.length !== expected) {
    throw malformed(
      `output '${name}' has ${data.length} bytes; ${datatype} [${shape.join(',')}] needs ${expected}`,
    );
  }
}
