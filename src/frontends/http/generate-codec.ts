/**
 * The generate extension's JSON, both ways, as Triton's http_server.cc maps it. Request: every top-level
 * key (and every key of the reserved `parameters` object) that names a model input becomes that input,
 * its JSON scalar or array shaped by the model metadata (fixed dims divide the element count, the innermost
 * -1 takes the rest, other -1 become 1); every other key becomes a request parameter; `id` also sets the
 * request id. Keys are taken in document order, so a repeated input key is an error. Response: one flat
 * object of `id` (when set), `model_name`, `model_version`, the response parameters and the outputs by
 * name (one element → the bare value), keys in sorted order as Triton's std::map writes them.
 */
import { byteSizeOf, type DataType } from '../../common/datatype.js';
import { internal, invalidArg, NereidError } from '../../common/errors.js';
import { setOwn } from '../../common/own.js';
import { elementCount, splitBytesElements } from '../../common/tensor.js';
import type { InferenceResponse, InferInput, ModelMetadata, Parameters } from '../../core/index.js';
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

export interface GenerateRequestParts {
  readonly id?: string;
  readonly inputs: InferInput[];
  readonly parameters: Parameters;
}

const PARAMETERS_KEY = 'parameters';

/**
 * The keys of a JSON object text's top level, in order, repeats included (JSON.parse keeps only the last
 * of a repeated key). `text` must already be known to parse; anything but an object gives [].
 */
export function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let i = 0;
  const n = text.length;
  const ws = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const skipString = (): void => {
    i++; // opening quote
    while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
  };
  // The JSON parser drops a leading byte order mark (rapidjson does); the keys must be read past it too.
  if (text.charCodeAt(0) === 0xfeff) i = 1;
  ws();
  if (text[i] !== '{') return keys;
  i++;
  for (;;) {
    ws();
    if (i >= n || text[i] === '}') return keys;
    const start = i;
    skipString();
    keys.push(JSON.parse(text.slice(start, i)) as string);
    ws();
    i++; // ':'
    // Skip the value: strings whole, containers by depth, scalars up to the next ',' or '}'.
    let depth = 0;
    while (i < n) {
      const c = text[i];
      if (c === '"') {
        skipString();
        continue;
      }
      if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
      i++;
    }
    if (text[i] === ',') i++;
  }
}

/** Every scalar of a value (a scalar itself, or the leaves of nested arrays), row-major. */
function scalarsOf(value: JsonIn): JsonIn[] {
  if (!Array.isArray(value)) return [value];
  const out: JsonIn[] = [];
  const stack: { arr: readonly JsonIn[]; i: number }[] = [{ arr: value, i: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top.i >= top.arr.length) {
      stack.pop();
      continue;
    }
    const v = top.arr[top.i++];
    if (Array.isArray(v)) {
      if (stack.length >= 100) throw invalidArg('JSON nesting depth exceeds maximum allowed limit (100)');
      stack.push({ arr: v, i: 0 });
    } else out.push(v);
  }
  return out;
}

const isInteger = (v: JsonIn): boolean =>
  typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));

/** Triton's TritonJson wording for a scalar of the wrong JSON type. */
function checkScalar(datatype: DataType, v: JsonIn): void {
  let problem: string | undefined;
  if (datatype === 'BOOL') {
    if (typeof v !== 'boolean') problem = 'attempt to access JSON non-boolean as boolean';
  } else if (datatype === 'BYTES') {
    if (typeof v !== 'string') problem = 'attempt to access JSON non-string as string';
  } else if (datatype.startsWith('UINT')) {
    if (!isInteger(v) || (v as number | bigint) < 0)
      problem = 'attempt to access JSON non-unsigned-integer as unsigned-integer';
  } else if (datatype.startsWith('INT')) {
    if (!isInteger(v)) problem = 'attempt to access JSON non-signed-integer as signed-integer';
  } else if (typeof v !== 'number' && typeof v !== 'bigint') {
    problem = 'attempt to access JSON non-number as double';
  }
  if (problem !== undefined) throw invalidArg(problem);
}

/** Shapes `count` elements by the metadata dims (Triton's two-pass fill of the -1 dims). */
export function shapeFor(name: string, dims: readonly number[], count: number): number[] {
  const cannot = (): never => {
    throw invalidArg(`The schema can not convert input '${name}' to tensor with proper shape`);
  };
  const shape = [...dims];
  let rest = count;
  for (let k = shape.length - 1; k >= 0; k--) {
    if (shape[k] === -1) continue;
    if (shape[k] === 0 ? rest !== 0 : rest % shape[k] !== 0) cannot();
    rest = shape[k] === 0 ? 1 : rest / shape[k];
  }
  for (let k = shape.length - 1; k >= 0; k--) {
    if (shape[k] === -1) {
      shape[k] = rest;
      rest = 1;
    }
  }
  if (rest !== 1) cannot();
  return shape;
}

/** A JSON parameter value (Triton's SetTritonParameterFromJsonParameter). */
function parameterOf(key: string, v: JsonIn): Parameters[string] {
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'bigint') {
    return v;
  }
  throw invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
}

class RequestBuilder {
  readonly inputs: InferInput[] = [];
  readonly parameters: Parameters = {};
  private consumed = 0;
  private readonly byName: ReadonlyMap<string, ModelMetadata['inputs'][number]>;

  constructor(
    metadata: ModelMetadata,
    private readonly maxInputSize: number,
    private readonly exact: boolean,
  ) {
    this.byName = new Map(metadata.inputs.map((i) => [i.name, i]));
  }

  member(key: string, value: JsonIn): void {
    const meta = this.byName.get(key);
    if (meta === undefined) {
      if (!this.exact && isRoundedInteger(value)) {
        throw roundedIntegerError(invalidArg(`parameter '${key}' is beyond 2^53`));
      }
      setOwn(this.parameters, key, parameterOf(key, value));
      return;
    }
    if (this.inputs.some((i) => i.name === key)) throw invalidArg(`input '${key}' already exists in request`);
    const datatype = meta.datatype;
    const scalars = scalarsOf(value);
    for (const s of scalars) checkScalar(datatype, s);
    const byteSize =
      datatype === 'BYTES'
        ? scalars.reduce<number>((n, s) => n + 4 + Buffer.byteLength(s as string, 'utf8'), 0)
        : scalars.length * byteSizeOf(datatype);
    if (byteSize + this.consumed > this.maxInputSize) {
      throw invalidArg(
        `request size of ${this.consumed} bytes with input '${key}' of size ${byteSize} bytes exceeds the ` +
          `maximum allowed input size of ${this.maxInputSize}. Use --http-max-input-size to increase the limit.`,
      );
    }
    this.consumed += byteSize;
    const shape = shapeFor(key, meta.shape, scalars.length);
    const data = jsonToTensorData(
      { name: key, datatype, shape, elementCount: elementCount(shape) },
      scalars,
      this.maxInputSize,
      this.exact,
    );
    this.inputs.push({ name: key, datatype, shape, data });
  }
}

function build(
  doc: JsonInObject,
  keys: readonly string[],
  metadata: ModelMetadata,
  maxInputSize: number,
  exact: boolean,
): GenerateRequestParts {
  let id: string | undefined;
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string')
      throw invalidArg("Unable to parse 'id': attempt to access JSON non-string as string");
    id = doc.id;
  }
  const b = new RequestBuilder(metadata, maxInputSize, exact);
  for (const key of keys) {
    const value = doc[key];
    if (key !== PARAMETERS_KEY) {
      b.member(key, value);
      continue;
    }
    if (metadata.inputs.some((i) => i.name === PARAMETERS_KEY)) {
      throw invalidArg("Keyword 'parameters' for nested schema also given as input tensor name");
    }
    if (!isJsonObject(value)) {
      throw invalidArg(
        "Expected JSON object for keyword: 'parameters': attempt to access JSON non-object as object",
      );
    }
    try {
      for (const [k, v] of Object.entries(value)) b.member(k, v);
    } catch (err) {
      if (!(err instanceof NereidError) || isRoundedIntegerError(err)) throw err;
      throw new NereidError(err.code, `Converting keyword: 'parameters': ${err.message}`);
    }
  }
  return { id, inputs: b.inputs, parameters: b.parameters };
}

/**
 * Parses a generate request body against the model's metadata. An empty body is an empty object (a model
 * without required inputs may take it). Integers beyond 2^53 bound for 64-bit inputs are kept exact.
 */
export function parseGenerateRequest(
  text: string,
  metadata: ModelMetadata,
  maxInputSize: number,
): GenerateRequestParts {
  if (text.trim() === '') return { inputs: [], parameters: {} };
  const doc = parseJson(text);
  if (!isJsonObject(doc)) throw invalidArg('generate request must be a JSON object');
  const keys = topLevelKeys(text);
  try {
    return build(doc, keys, metadata, maxInputSize, false);
  } catch (err) {
    if (!isRoundedIntegerError(err)) throw err;
    return build(parseJsonExact(text) as JsonInObject, keys, metadata, maxInputSize, true);
  }
}

function parameterJson(v: Parameters[string]): string {
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
}

/** One response as the generate JSON object (text). */
export function generateResponseJson(response: InferenceResponse): string {
  const members = new Map<string, string>();
  const add = (key: string, json: string): void => {
    if (!members.has(key)) members.set(key, json);
  };
  if (response.id !== '') add('id', JSON.stringify(response.id));
  add('model_name', JSON.stringify(response.modelName));
  add('model_version', JSON.stringify(response.modelVersion));
  for (const [k, v] of Object.entries(response.parameters)) add(k, parameterJson(v));
  for (const t of response.outputs) {
    const count = elementCount(t.shape);
    let json = tensorDataToJson(t.name, t.datatype, t.data, count);
    if (json === undefined) {
      if (t.datatype !== 'BYTES')
        throw internal(`output '${t.name}' of datatype ${t.datatype} has no JSON form`);
      // Not UTF-8: JSON can only carry it as text, so invalid sequences become U+FFFD.
      json = JSON.stringify(splitBytesElements(t.data).map((e) => e.toString('utf8')));
    }
    add(t.name, count === 1 ? json.slice(1, -1) : json);
  }
  const keys = [...members.keys()].sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + members.get(k)!).join(',') + '}';
}
