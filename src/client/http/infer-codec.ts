/**
 * KServe v2 inference over HTTP, client side: InferInputs and options → a JSON header plus the binary
 * blobs of the binary tensor data extension (sent as separate chunks, so tensors are never copied into
 * one body), and a response body → InferResult (binary blobs sliced from the body without copies).
 */
import type { InferInput, InferRequestedOutput, ParameterValue } from '../infer-input.js';
import { InferResult, type OutputTensor } from '../infer-result.js';
import {
  checkOutputData,
  checkOutputHeader,
  malformed,
  primitiveParameters,
  requestParameters,
} from '../request.js';
import { encodeValues, flattenJsonData, jsonValues } from '../tensor-data.js';
import type { InferOptions } from '../types.js';
import { parseJsonExact, parseServerJson, toJsonText, type JsonIn, type JsonOut } from './json.js';

export interface EncodedInferRequest {
  /** The JSON header, then the binary blobs in input order. */
  readonly chunks: readonly Buffer[];
  readonly byteLength: number;
  /** Byte length of the JSON header, for Inference-Header-Content-Length; undefined when all JSON. */
  readonly headerLength: number | undefined;
}

function shmParameters(
  p: Record<string, JsonOut>,
  ref: { region: string; byteSize: number; offset: number },
): void {
  p.shared_memory_region = ref.region;
  p.shared_memory_byte_size = ref.byteSize;
  if (ref.offset !== 0) p.shared_memory_offset = ref.offset;
}

function outputJson(o: InferRequestedOutput): JsonOut {
  const p: Record<string, JsonOut> = { ...o.parameters };
  if (o.classCount > 0) p.classification = o.classCount;
  if (o.sharedMemory) shmParameters(p, o.sharedMemory);
  else p.binary_data = o.binary;
  return { name: o.name, parameters: p };
}

export function encodeInferRequest(
  inputs: readonly InferInput[],
  options: InferOptions,
): EncodedInferRequest {
  const blobs: Buffer[] = [];
  const inputsJson: JsonOut[] = [];
  for (const input of inputs) {
    input.validate();
    const p: Record<string, JsonOut> = { ...input.parameters };
    const entry: Record<string, JsonOut> = { name: input.name, shape: input.shape, datatype: input.datatype };
    if (input.sharedMemory) {
      shmParameters(p, input.sharedMemory);
    } else if (input.binary) {
      const data = input.data!;
      p.binary_data_size = data.length;
      blobs.push(data);
    } else {
      entry.data = jsonValues(input.datatype, input.data!, `input '${input.name}'`);
    }
    if (Object.keys(p).length > 0) entry.parameters = p;
    inputsJson.push(entry);
  }
  const params: Record<string, JsonOut> = requestParameters(options);
  const header: Record<string, JsonOut> = {};
  if (options.requestId) header.id = options.requestId;
  if (options.outputs === undefined) params.binary_data_output = true;
  if (Object.keys(params).length > 0) header.parameters = params;
  header.inputs = inputsJson;
  if (options.outputs !== undefined) {
    if (options.outputs.length === 0)
      throw new TypeError('outputs: give at least one output, or omit the option');
    header.outputs = options.outputs.map(outputJson);
  }
  const json = Buffer.from(toJsonText(header), 'utf8');
  let byteLength = json.length;
  for (const b of blobs) byteLength += b.length;
  return { chunks: [json, ...blobs], byteLength, headerLength: blobs.length > 0 ? json.length : undefined };
}

interface OutputJson {
  name?: unknown;
  datatype?: unknown;
  shape?: unknown;
  parameters?: Record<string, unknown>;
  data?: unknown;
}

const asObject = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** True when JSON.parse may have rounded 64-bit integer tensor data. */
function needsExactParse(outputs: readonly OutputJson[]): boolean {
  return outputs.some(
    (o) =>
      (o.datatype === 'INT64' || o.datatype === 'UINT64') &&
      Array.isArray(o.data) &&
      flattenJsonData(o.data, 'output').some((v) => typeof v === 'number' && !Number.isSafeInteger(v)),
  );
}

function parseHeader(text: string, status: number): Record<string, unknown> {
  let doc: JsonIn;
  try {
    doc = parseServerJson(text);
    const outputs = asObject(doc)?.outputs;
    if (Array.isArray(outputs) && needsExactParse(outputs as OutputJson[])) doc = parseJsonExact(text);
  } catch (err) {
    throw malformed(`invalid JSON (${(err as Error).message})`, status);
  }
  const obj = asObject(doc);
  if (obj === undefined) throw malformed('the response is not a JSON object', status);
  return obj;
}

/** Reads an inference response body; `headerLength` from Inference-Header-Content-Length, if any. */
export function decodeInferResponse(
  body: Buffer,
  headerLength: number | undefined,
  status = 200,
): InferResult {
  if (
    headerLength !== undefined &&
    (!Number.isSafeInteger(headerLength) || headerLength < 0 || headerLength > body.length)
  ) {
    throw malformed(
      `Inference-Header-Content-Length ${headerLength} does not fit a ${body.length}-byte body`,
      status,
    );
  }
  const end = headerLength ?? body.length;
  const doc = parseHeader(body.toString('utf8', 0, end), status);
  const outputsJson = doc.outputs ?? [];
  if (!Array.isArray(outputsJson)) throw malformed("'outputs' is not an array", status);
  let offset = end;
  const outputs: OutputTensor[] = [];
  for (const raw of outputsJson as unknown[]) {
    const o = (asObject(raw) ?? {}) as OutputJson;
    const [name, datatype, shape] = checkOutputHeader(o.name, o.datatype, o.shape);
    const parameters = primitiveParameters(o.parameters, 'binary_data_size');
    const size = o.parameters?.binary_data_size;
    const region = parameters.shared_memory_region;
    let data: Buffer | undefined;
    if (size !== undefined) {
      if (
        typeof size !== 'number' ||
        !Number.isSafeInteger(size) ||
        size < 0 ||
        offset + size > body.length
      ) {
        throw malformed(
          `output '${name}': binary_data_size ${JSON.stringify(size)} runs past the body`,
          status,
        );
      }
      data = body.subarray(offset, offset + size);
      offset += size;
    } else if (o.data !== undefined) {
      try {
        data = encodeValues(datatype, flattenJsonData(o.data, `output '${name}'`), `output '${name}'`);
      } catch (err) {
        throw malformed(`output '${name}': ${(err as Error).message}`, status);
      }
    } else if (typeof region !== 'string') {
      throw malformed(`output '${name}' has neither data nor binary_data_size`, status);
    }
    if (data !== undefined) checkOutputData(name, datatype, shape, data);
    outputs.push({
      name,
      datatype,
      shape,
      parameters,
      data,
      ...(typeof region === 'string' && data === undefined
        ? { sharedMemory: sharedMemoryOf(parameters) }
        : {}),
    });
  }
  if (offset !== body.length)
    throw malformed(`${body.length - offset} unexpected bytes after the last output`, status);
  return new InferResult({
    modelName: typeof doc.model_name === 'string' ? doc.model_name : '',
    modelVersion: typeof doc.model_version === 'string' ? doc.model_version : '',
    id: typeof doc.id === 'string' ? doc.id : '',
    parameters: primitiveParameters(doc.parameters),
    outputs,
    raw: doc,
  });
}

function sharedMemoryOf(p: Record<string, ParameterValue>): {
  region: string;
  byteSize: number;
  offset: number;
} {
  return {
    region: String(p.shared_memory_region),
    byteSize: Number(p.shared_memory_byte_size ?? 0),
    offset: Number(p.shared_memory_offset ?? 0),
  };
}

/** The server's `{"error": "..."}` message, or the best text available. */
export function errorMessage(body: Buffer, statusText: string): string {
  const text = body.toString('utf8');
  try {
    const doc = JSON.parse(text) as unknown;
    const msg = asObject(doc)?.error;
    if (typeof msg === 'string') return msg;
  } catch {
    // not JSON: use the text itself
  }
  return text.trim() !== '' ? text.trim() : statusText;
}
