/**
 * The HTTP inference wire format (KServe v2 JSON plus Triton's binary tensor data extension) ↔ the core's
 * InferenceRequest / InferenceResponse. Pure functions (but for a cache of parsed request headers,
 * header-cache.ts): no sockets, no api calls.
 *
 * Binary inputs are views into the request body (no copies); binary outputs are written as the tensors'
 * own Buffers after the JSON header. Messages follow Triton's wording where clients match on them.
 */
import { isDataType, byteSizeOf, type DataType } from '../../common/datatype.js';
import { NereidError, invalidArg } from '../../common/errors.js';
import { setOwn } from '../../common/own.js';
import type { Tensor } from '../../common/tensor.js';
import type {
  DecodedRequest,
  InferenceResponse,
  InferInput,
  Parameters,
  ParameterValue,
  RequestedOutput,
  SharedMemoryRef,
} from '../../core/index.js';
import {
  isJsonObject,
  isRoundedInteger,
  isRoundedIntegerError,
  parseJson,
  parseJsonExact,
  roundedIntegerError,
  type JsonIn,
  type JsonInObject,
} from './json.js';
import { jsonToTensorData, tensorDataToJson } from './tensor-json.js';
import { HeaderCache } from './header-cache.js';

/** A type with its members writable, for objects built member by member before they are handed on. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** How each output goes back: binary data or JSON `data`. */
export interface OutputFormat {
  /** Request parameter `binary_data_output`: the default for outputs without their own `binary_data`. */
  readonly defaultBinary: boolean;
  /** Per requested output `parameters.binary_data`. */
  readonly binary: ReadonlyMap<string, boolean>;
}

export interface DecodedInferRequest {
  /** The request without the call's context (routes.ts runs it with core/call.ts runCall). */
  readonly request: DecodedRequest;
  readonly format: OutputFormat;
}

export interface DecodeOptions {
  readonly modelName: string;
  /** '' or undefined = default version. */
  readonly modelVersion?: string;
  /** --http-max-input-size: bound on the JSON header and on each JSON input's byte size. */
  readonly maxInputSize: number;
}

const EMPTY = Buffer.alloc(0);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** Triton's "Unable to parse '<field>': <TritonJson reason>" errors. */
function parseError(field: string, reason: string): NereidError {
  return invalidArg(`Unable to parse '${field}': ${reason}`);
}
const NOT_STRING = 'attempt to access JSON non-string as string';
const NOT_BOOL = 'attempt to access JSON non-boolean as boolean';
const NOT_UINT = 'attempt to access JSON non-unsigned-integer as unsigned-integer';
const NOT_ARRAY = 'attempt to access JSON non-array as array';
const NOT_OBJECT = 'attempt to access JSON non-object as object';
const missing = (member: string): string => `attempt to access non-existing object member '${member}'`;

function isUint(v: JsonIn | undefined): v is number | bigint {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
  return typeof v === 'bigint' && v >= 0n && v <= UINT64_MAX;
}

function memberString(obj: JsonInObject, member: string): string {
  const v = obj[member];
  if (v === undefined) throw parseError(member, missing(member));
  if (typeof v !== 'string') throw parseError(member, NOT_STRING);
  return v;
}

function memberBool(obj: JsonInObject, member: string): boolean {
  const v = obj[member];
  if (typeof v !== 'boolean') throw parseError(member, NOT_BOOL);
  return v;
}

/** The "not an unsigned integer" error; marked for an exact re-parse when JSON.parse may have rounded it. */
function uintError(field: string, v: JsonIn | undefined, exact: boolean): NereidError {
  const err = parseError(field, NOT_UINT);
  return !exact && isRoundedInteger(v) ? roundedIntegerError(err) : err;
}

function memberUint(obj: JsonInObject, member: string, exact: boolean): number | bigint {
  const v = obj[member];
  if (!isUint(v)) throw uintError(member, v, exact);
  return v;
}

function optionalObject(obj: JsonInObject, member: string): JsonInObject | undefined {
  const v = obj[member];
  if (v === undefined) return undefined;
  if (!isJsonObject(v)) throw parseError(member, NOT_OBJECT);
  return v;
}

/** A custom (pass-through) parameter value: string, integer, double or bool, like Triton. */
function customParameter(key: string, v: JsonIn, exact: boolean): ParameterValue {
  if (!exact && isRoundedInteger(v)) {
    throw roundedIntegerError(invalidArg(`parameter '${key}' holds an integer beyond 2^53`));
  }
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') {
    return v;
  }
  throw invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
}

/** Request-level parameters; returns them plus the `binary_data_output` default. */
function decodeRequestParameters(
  params: JsonInObject,
  exact: boolean,
): { parameters: Parameters; defaultBinary: boolean } {
  const parameters: Parameters = {};
  let defaultBinary = false;
  for (const key of Object.keys(params)) {
    const v = params[key];
    switch (key) {
      case 'sequence_id':
        if (isUint(v) || typeof v === 'string') parameters[key] = v;
        else if (!exact && isRoundedInteger(v)) throw roundedIntegerError(parseError(key, NOT_STRING));
        else throw parseError(key, NOT_STRING);
        break;
      case 'sequence_start':
      case 'sequence_end':
        parameters[key] = memberBool(params, key);
        break;
      case 'priority':
      case 'timeout':
        parameters[key] = memberUint(params, key, exact);
        break;
      case 'binary_data_output':
        defaultBinary = memberBool(params, key);
        break;
      default:
        if (key.startsWith('triton_')) {
          throw invalidArg(
            "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
          );
        }
        setOwn(parameters, key, customParameter(key, v, exact));
    }
  }
  return { parameters, defaultBinary };
}

const SHM_KEYS = new Set(['shared_memory_region', 'shared_memory_offset', 'shared_memory_byte_size']);

/**
 * A tensor's shared-memory parameters (Triton's rules: region and byte size together, offset optional;
 * offset or size without a region is an error). Values beyond 2^53 pass rounded: no region is that large,
 * and the core reports them out of bounds.
 */
function readSharedMemoryRef(
  params: JsonInObject | undefined,
  tensor: string,
  exact: boolean,
): SharedMemoryRef | undefined {
  if (params === undefined) return undefined;
  const region = params.shared_memory_region;
  const hasRegion = region !== undefined;
  for (const key of ['shared_memory_offset', 'shared_memory_byte_size']) {
    if (!hasRegion && params[key] !== undefined) {
      throw invalidArg(
        `'${key}' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`,
      );
    }
  }
  if (!hasRegion) return undefined;
  if (typeof region !== 'string') throw parseError('shared_memory_region', NOT_STRING);
  const size = (key: string): number | undefined => {
    const v = params[key];
    if (v === undefined) return undefined;
    if (typeof v === 'bigint' && v >= 0n && v <= UINT64_MAX) return Number(v);
    if (isRoundedInteger(v) && v > 0) return v;
    return Number(memberUint(params, key, exact));
  };
  const byteSize = size('shared_memory_byte_size');
  if (byteSize === undefined) {
    throw invalidArg(
      `'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${tensor}'`,
    );
  }
  return { region, offset: size('shared_memory_offset') ?? 0, byteSize };
}

export interface ShapeInfo {
  readonly shape: number[];
  readonly elementCount: number;
}

/**
 * Reads a JSON `shape`: dims are unsigned integers, the element count must fit int64 (Triton's messages),
 * and — because core shapes are plain numbers — every dim and the count must stay below 2^53.
 * `jsonDataType` is set for inputs carrying JSON `data`, which also get Triton's byte size overflow check.
 */
export function readShape(
  inputName: string,
  raw: JsonIn | undefined,
  jsonDataType: DataType | undefined,
  exact: boolean,
): ShapeInfo {
  if (raw === undefined) throw parseError('shape', missing('shape'));
  if (!Array.isArray(raw)) throw parseError('shape', NOT_ARRAY);
  const shape: number[] = new Array<number>(raw.length);
  const dims: (number | bigint)[] = new Array<number | bigint>(raw.length);
  let safe = true;
  let count = 1;
  for (let i = 0; i < raw.length; i++) {
    const d = raw[i];
    if (!isUint(d)) throw uintError('shape', d, exact);
    if (typeof d === 'bigint') safe = false;
    dims[i] = d;
    shape[i] = Number(d);
    count *= shape[i];
  }
  if (safe && Number.isSafeInteger(count)) return { shape, elementCount: count };

  // Slow path with exact arithmetic, in Triton's order: element count overflow, then byte size overflow.
  const text = `[${dims.join(',')}]`;
  let big = 1n;
  for (let i = 0; i < dims.length; i++) {
    const d = BigInt(dims[i]);
    if (d === 0n) {
      big = 0n;
      break;
    }
    if (i > 0 && big > INT64_MAX / d) {
      throw invalidArg(
        `invalid shape for input '${inputName}': shape ${text} causes total element count to exceed maximum size of ${INT64_MAX}`,
      );
    }
    big = i === 0 ? d : big * d;
  }
  if (jsonDataType !== undefined && jsonDataType !== 'BYTES') {
    const size = BigInt(byteSizeOf(jsonDataType));
    if (size > 1n && big > INT64_MAX / size) {
      throw invalidArg(
        `byte size overflow for input '${inputName}': element count (${big}) * data type size (${size}) exceeds maximum allowed size (${INT64_MAX})`,
      );
    }
  }
  if (big <= BigInt(Number.MAX_SAFE_INTEGER)) {
    throw invalidArg(
      `invalid shape for input '${inputName}': shape ${text} has a dimension larger than the maximum supported value of ${Number.MAX_SAFE_INTEGER}`,
    );
  }
  throw invalidArg(
    `invalid shape for input '${inputName}': shape ${text} causes total element count to exceed maximum size of ${Number.MAX_SAFE_INTEGER}`,
  );
}

function decodeInput(
  item: JsonIn,
  body: Buffer,
  cursor: { offset: number },
  hasHeaderLength: boolean,
  opts: DecodeOptions,
  exact: boolean,
): InferInput {
  if (!isJsonObject(item)) throw parseError('inputs', NOT_OBJECT);
  const params = optionalObject(item, 'parameters');
  const hasData = item.data !== undefined;
  const hasBinary = params?.binary_data_size !== undefined;
  const hasShm = params?.shared_memory_region !== undefined;
  if (Number(hasData) + Number(hasBinary) + Number(hasShm) !== 1) {
    let msg =
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
      "'shared_memory_region' in 'parameters'. But";
    if (!hasData && !hasBinary && !hasShm) msg += ' no field is set';
    else
      msg +=
        ' set' +
        (hasData ? " 'data'" : '') +
        (hasBinary ? " 'binary_data_size'" : '') +
        (hasShm ? " 'shared_memory_region'" : '');
    throw invalidArg(msg);
  }

  const name = memberString(item, 'name');
  const datatypeName = memberString(item, 'datatype');
  if (!isDataType(datatypeName))
    throw invalidArg(`invalid datatype for input ${name} (got '${datatypeName}')`);
  const datatype: DataType = datatypeName;
  const sharedMemory = readSharedMemoryRef(params, name, exact);
  const { shape, elementCount } = readShape(name, item.shape, hasData ? datatype : undefined, exact);

  let data: Buffer;
  if (sharedMemory !== undefined) {
    data = EMPTY; // the core reads the region
  } else if (hasBinary) {
    const size = Number(memberUint(params, 'binary_data_size', exact));
    if (size > 0 && !hasHeaderLength) {
      throw invalidArg(
        "must specify valid 'Inference-Header-Content-Length' in request header and 'binary_data_size' when " +
          'passing inputs in binary data format',
      );
    }
    const available = body.length - cursor.offset;
    if (size > available) {
      throw invalidArg(
        `unexpected size for input '${name}', expecting ${size - available} additional bytes for model '${opts.modelName}'`,
      );
    }
    data = body.subarray(cursor.offset, cursor.offset + size);
    cursor.offset += size;
  } else {
    const raw = item.data;
    if (!Array.isArray(raw)) throw parseError('data', NOT_ARRAY);
    data = jsonToTensorData({ name, datatype, shape, elementCount }, raw, opts.maxInputSize, exact);
  }

  let parameters: Parameters | undefined;
  if (params !== undefined) {
    for (const key of Object.keys(params)) {
      if (key === 'binary_data_size' || SHM_KEYS.has(key)) continue;
      setOwn((parameters ??= {}), key, customParameter(key, params[key], exact));
    }
  }
  // Optional members assigned, not spread: a spread of `false` or of a one-member object takes V8's slow
  // object-literal path on every request.
  const input: Mutable<InferInput> = { name, datatype, shape, data };
  if (sharedMemory !== undefined) input.sharedMemory = sharedMemory;
  if (parameters !== undefined) input.parameters = parameters;
  return input;
}

function decodeOutputs(raw: JsonIn, binary: Map<string, boolean>, exact: boolean): RequestedOutput[] {
  if (!Array.isArray(raw)) throw parseError('outputs', NOT_ARRAY);
  const outputs: RequestedOutput[] = [];
  const seen = new Set<string>();
  for (const item of raw) {
    if (!isJsonObject(item)) throw parseError('outputs', NOT_OBJECT);
    const name = memberString(item, 'name');
    if (seen.has(name)) throw invalidArg(`output '${name}' already exists in request`);
    seen.add(name);
    const params = optionalObject(item, 'parameters');
    if (params === undefined) {
      outputs.push({ name });
      continue;
    }
    const sharedMemory = readSharedMemoryRef(params, name, exact);
    if (sharedMemory !== undefined) {
      if (params.classification !== undefined) {
        throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
      }
      if (params.binary_data === true) {
        throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
      }
    }
    let parameters: Parameters | undefined;
    for (const key of Object.keys(params)) {
      if (SHM_KEYS.has(key)) continue;
      if (key === 'binary_data') {
        const v = params[key];
        if (typeof v !== 'boolean') throw parseError('binary_data', NOT_BOOL);
        binary.set(name, v);
      } else if (key === 'classification') {
        const v = params[key];
        if (!isUint(v)) {
          const err = invalidArg(`Unable to set 'classification': ${NOT_UINT}`);
          throw !exact && isRoundedInteger(v) ? roundedIntegerError(err) : err;
        }
        (parameters ??= {})[key] = v;
      } else {
        setOwn((parameters ??= {}), key, customParameter(key, params[key], exact));
      }
    }
    const output: Mutable<RequestedOutput> = { name };
    if (parameters !== undefined) output.parameters = parameters;
    if (sharedMemory !== undefined) output.sharedMemory = sharedMemory;
    outputs.push(output);
  }
  return outputs;
}

/** std::stoi's reading: leading whitespace, a sign, then the digits up to the first other character. */
const STOI = /^[ \t\n\v\f\r]*([+-]?)0*(\d+)/;

/**
 * Inference-Header-Content-Length as Triton reads it: std::stoi (so `5abc` is 5 and `-5` is -5), then
 * 0..body length. Without the header the JSON is the whole body, and an empty body (header length 0) is a
 * raw binary request, as in Triton. Unparsable or out-of-int range values are refused with current
 * Triton's messages (2.51's std::atoi took them as 0 or wrapped them).
 */
export function inferenceHeaderLength(
  value: string | string[] | undefined,
  bodyLength: number,
): number | undefined {
  if (value === undefined) return bodyLength === 0 ? 0 : undefined;
  const text = Array.isArray(value) ? value.join(',') : value.trim();
  const m = STOI.exec(text);
  if (m === null) throw invalidArg(`Unable to parse Inference-Header-Content-Length, got: ${text}`);
  const n = m[2].length > 10 ? Infinity : Number(m[1] + m[2]);
  if (n < -2147483648 || n > 2147483647) {
    throw invalidArg(
      'Unable to parse Inference-Header-Content-Length, value is out of range ' +
        `[ -2147483648, 2147483647 ], got: ${text}`,
    );
  }
  if (n < 0 || n > bodyLength) {
    throw invalidArg(`inference header size should be in range (0, ${bodyLength}), got: ${text}`);
  }
  return n === 0 ? 0 : n;
}

/** Documents of recently seen request headers (header-cache.ts): decodeDocument only reads them. */
const recentHeaders = new HeaderCache();

/**
 * Decodes a JSON (+ binary) inference request body. `headerLength` is the Inference-Header-Content-Length
 * value (1..body.length), or undefined when the header is absent and the whole body is JSON.
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: number | undefined,
  opts: DecodeOptions,
): DecodedInferRequest {
  const jsonLength = headerLength ?? body.length;
  if (jsonLength > opts.maxInputSize) {
    throw invalidArg(
      `request JSON size of ${jsonLength} bytes exceeds the maximum allowed input size of ${opts.maxInputSize} ` +
        'bytes. Use --http-max-input-size to increase the limit.',
    );
  }
  const json = body.subarray(0, jsonLength);
  try {
    let doc = recentHeaders.get(json);
    if (doc === undefined) {
      doc = parseJson(json);
      recentHeaders.set(json, doc);
    }
    return decodeDocument(doc, body, jsonLength, headerLength !== undefined, opts, false);
  } catch (err) {
    // Rare: an integer beyond 2^53 or a number too big for a double where it matters. Parse again exactly.
    if (!isRoundedIntegerError(err)) throw err;
    return decodeDocument(parseJsonExact(json), body, jsonLength, headerLength !== undefined, opts, true);
  }
}

function decodeDocument(
  doc: JsonIn,
  body: Buffer,
  jsonLength: number,
  hasHeaderLength: boolean,
  opts: DecodeOptions,
  exact: boolean,
): DecodedInferRequest {
  if (!isJsonObject(doc)) throw parseError('inputs', missing('inputs'));

  let id: string | undefined;
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw parseError('id', NOT_STRING);
    id = doc.id;
  }
  let parameters: Parameters | undefined;
  let defaultBinary = false;
  const rawParams = optionalObject(doc, 'parameters');
  if (rawParams !== undefined) {
    const decoded = decodeRequestParameters(rawParams, exact);
    parameters = decoded.parameters;
    defaultBinary = decoded.defaultBinary;
  }

  const rawInputs = doc.inputs;
  if (rawInputs === undefined) throw parseError('inputs', missing('inputs'));
  if (!Array.isArray(rawInputs)) throw parseError('inputs', NOT_ARRAY);
  const cursor = { offset: jsonLength };
  const inputs = rawInputs.map((item) => decodeInput(item, body, cursor, hasHeaderLength, opts, exact));
  if (cursor.offset !== body.length) {
    throw invalidArg(`unexpected additional input data for model '${opts.modelName}'`);
  }

  const binary = new Map<string, boolean>();
  const outputs = doc.outputs === undefined ? undefined : decodeOutputs(doc.outputs, binary, exact);

  // One literal, every member written out (core/call.ts, performance rules).
  const request: DecodedRequest = {
    modelName: opts.modelName,
    modelVersion: opts.modelVersion ?? '',
    id,
    inputs,
    outputs,
    parameters,
  };
  return { request, format: { defaultBinary, binary } };
}

/** An encoded response: the JSON header, then the binary chunks (in output order) that follow it. */
export interface EncodedInferResponse {
  readonly json: string;
  readonly binary: readonly Buffer[];
  /** True when any output is sent as binary data (→ octet-stream + Inference-Header-Content-Length). */
  readonly hasBinary: boolean;
}

function parameterJson(v: ParameterValue): string {
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
}

function parametersJson(params: Readonly<Parameters>): string | undefined {
  let out: string | undefined;
  for (const key of Object.keys(params)) {
    const entry = JSON.stringify(key) + ':' + parameterJson(params[key]);
    out = out === undefined ? entry : out + ',' + entry;
  }
  return out === undefined ? undefined : '{' + out + '}';
}

export function elementCountOf(t: Tensor): number {
  let n = 1;
  for (const d of t.shape) n *= d;
  return n;
}

/**
 * The largest JSON answer the HTTP frontend writes (issue 33): 256 MiB, half of V8's longest string, so an
 * output too large for JSON is refused with 400 naming binary data instead of failing with a 500
 * "Invalid array length" after the event loop spent seconds building it. Large answers are written in
 * slices (json-answer.ts); this bounds the shortest text they could take.
 */
export const MAX_JSON_RESPONSE_BYTES = 256 * 1024 * 1024;

export const jsonTooLarge = (name: string, limit: number): NereidError =>
  invalidArg(
    `output '${name}' is too large to be returned as JSON (the response would exceed ${limit} bytes); ` +
      `request it as binary tensor data: set the output parameter "binary_data": true, or the request ` +
      `parameter "binary_data_output": true`,
  );

/** The shortest JSON text an output's data could take: one character and a comma per element, quotes for strings. */
export function shortestJsonBytes(t: Tensor, count: number): number {
  return t.datatype === 'BYTES' ? Math.max(2 * count, t.data.length - count) : 2 * count;
}

/**
 * One output's data as JSON text within `room` bytes (of a `limit`-byte answer), or undefined when it has no JSON form. Refused
 * before any formatting when even its shortest text (one digit and a comma per element) would not fit.
 */
function outputJson(t: Tensor, room: number, limit: number): string | undefined {
  const count = elementCountOf(t);
  if (shortestJsonBytes(t, count) > room) throw jsonTooLarge(t.name, limit);
  let data: string | undefined;
  try {
    data = tensorDataToJson(t.name, t.datatype, t.data, count);
  } catch (err) {
    if (err instanceof RangeError) throw jsonTooLarge(t.name, limit);
    throw err;
  }
  if (data !== undefined && data.length > room) throw jsonTooLarge(t.name, limit);
  return data;
}

/** `{"id":...,"model_name":...,"model_version":...,"parameters":...,"outputs":[` — a response's text before its outputs. */
export function responseHead(response: InferenceResponse): string {
  let json = '{';
  if (response.id) json += '"id":' + JSON.stringify(response.id) + ',';
  json += '"model_name":' + JSON.stringify(response.modelName);
  json += ',"model_version":' + JSON.stringify(response.modelVersion);
  const params = parametersJson(response.parameters);
  if (params !== undefined) json += ',"parameters":' + params;
  return json + ',"outputs":[';
}

/** `{"name":...,"datatype":...,"shape":[...]` — an output's text before its data or parameters. */
export function outputHead(t: Tensor): string {
  return (
    '{"name":' +
    JSON.stringify(t.name) +
    ',"datatype":"' +
    t.datatype +
    '","shape":[' +
    t.shape.join(',') +
    ']'
  );
}

/** The rest of an output written into the client's shared-memory region: where and how much, no data. */
export function sharedMemoryTail(shm: SharedMemoryRef): string {
  return (
    ',"parameters":{"shared_memory_region":' +
    JSON.stringify(shm.region) +
    (shm.offset !== 0 ? ',"shared_memory_offset":' + shm.offset : '') +
    ',"shared_memory_byte_size":' +
    shm.byteSize +
    '}}'
  );
}

/** The rest of an output sent as binary data after the JSON header. */
export function binaryTail(byteSize: number): string {
  return ',"parameters":{"binary_data_size":' + byteSize + '}}';
}

/** Whether an output is asked for as binary data (per-output `binary_data`, else `binary_data_output`). */
export function wantsBinary(t: Tensor, format: OutputFormat): boolean {
  return format.binary.get(t.name) ?? format.defaultBinary;
}

/**
 * Encodes a response. Outputs go as binary when asked (per-output `binary_data`, else `binary_data_output`),
 * and also when they have no JSON form (FP16, BF16, BYTES elements that are not UTF-8) — lossless, and
 * Triton's clients read either form.
 */
export function encodeInferResponse(
  response: InferenceResponse,
  format: OutputFormat,
  maxJsonBytes = MAX_JSON_RESPONSE_BYTES,
): EncodedInferResponse {
  let json = responseHead(response);
  const binary: Buffer[] = [];
  let hasBinary = false;
  for (let i = 0; i < response.outputs.length; i++) {
    const t = response.outputs[i];
    if (i > 0) json += ',';
    json += outputHead(t);
    const shm = t.sharedMemory;
    if (shm !== undefined) {
      // Written into the client's region: no data, no binary blob; the parameters say where and how much.
      json += sharedMemoryTail(shm);
      continue;
    }
    const data = wantsBinary(t, format) ? undefined : outputJson(t, maxJsonBytes - json.length, maxJsonBytes);
    if (data === undefined) {
      json += binaryTail(t.data.length);
      hasBinary = true;
      if (t.data.length > 0) binary.push(t.data);
    } else {
      json += ',"data":' + data + '}';
    }
  }
  json += ']}';
  return { json, binary, hasBinary };
}
