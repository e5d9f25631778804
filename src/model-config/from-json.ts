/**
 * Reads the JSON form of ModelConfig, as given in the `config` parameter of the repository load API.
 * Triton parses it with protobuf's JSON reader (proto or lowerCamelCase field names, unknown fields
 * rejected, enums by name case-insensitively or by number, 64-bit integers as numbers or strings, null =
 * unset); this does the same, driven by the schema, with proto3 defaults, and bounds size and nesting first.
 */
import { invalidArg, type NereidError } from '../common/errors.js';
import { didYouMean } from '../common/nearest-name.js';
import { finishModelConfig } from './message.js';
import type { ModelConfig } from './model-config.js';
import {
  enumDescriptor,
  messageDescriptor,
  MODEL_CONFIG,
  type FieldDescriptor,
  type MessageDescriptor,
  type ScalarType,
} from './schema.js';
import { checkInteger, FieldTracker, isIntegerType, newMessage, setEntry } from './values.js';
import type { ProtoMessage, ProtoValue } from './values.js';

/** Same limit Triton applies to nested request JSON. */
export const MAX_JSON_DEPTH = 100;
/** Default cap on the JSON text (Triton's default --http-max-input-size). */
export const DEFAULT_MAX_JSON_LENGTH = 64 * 1024 * 1024;

export interface JsonReadOptions {
  /** Longest accepted JSON text in UTF-16 code units. */
  readonly maxLength?: number;
}

function depthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

function typeOfJson(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  return typeof v;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

class JsonReader {
  constructor(private readonly origin: string) {}

  fail(path: string, message: string): NereidError {
    return invalidArg(`${this.origin}: ${message}${path === '' ? '' : ` (at ${path})`}`);
  }

  readMessage(desc: MessageDescriptor, raw: unknown, path: string): ProtoMessage {
    if (!isPlainObject(raw))
      throw this.fail(path, `message ${desc.name} must be a JSON object, got ${typeOfJson(raw)}`);
    const msg = newMessage(desc);
    const tracker = new FieldTracker(desc);
    for (const [key, value] of Object.entries(raw)) {
      const field = desc.fields.find((f) => f.name === key || f.jsonName === key);
      const at = path === '' ? key : `${path}.${key}`;
      if (field === undefined) {
        const hint = didYouMean(
          key,
          desc.fields.flatMap((f) => [f.name, f.jsonName]),
        );
        throw this.fail(path, `unknown field '${key}' in message ${desc.name}${hint}`);
      }
      // null means "not set" in protobuf's JSON mapping.
      if (value === null) continue;
      const problem = tracker.claim(field);
      if (problem !== undefined) throw this.fail(path, problem);
      msg[field.name] = this.readField(field, value, at);
    }
    return msg;
  }

  private readField(field: FieldDescriptor, raw: unknown, path: string): ProtoValue {
    if (field.label === 'repeated') {
      if (!Array.isArray(raw))
        throw this.fail(path, `field '${field.name}' must be a JSON array, got ${typeOfJson(raw)}`);
      return raw.map((item, i) => this.readSingle(field, item, `${path}[${i}]`));
    }
    if (field.label === 'map') {
      if (!isPlainObject(raw))
        throw this.fail(path, `map field '${field.name}' must be a JSON object, got ${typeOfJson(raw)}`);
      const out: ProtoMessage = {};
      for (const [k, v] of Object.entries(raw)) {
        const key = this.readMapKey(field, k, path);
        setEntry(out, key, this.readSingle(field, v, `${path}[${JSON.stringify(k)}]`));
      }
      return out;
    }
    return this.readSingle(field, raw, path);
  }

  private readMapKey(field: FieldDescriptor, key: string, path: string): string {
    const type = field.keyType ?? 'string';
    if (type === 'string') return key;
    if (type === 'bool') {
      if (key === 'true' || key === 'false') return key;
      throw this.fail(path, `map field '${field.name}' has bool keys, got ${JSON.stringify(key)}`);
    }
    if (isIntegerType(type) && /^-?\d{1,40}$/.test(key)) {
      const checked = checkInteger(type, BigInt(key));
      if (typeof checked === 'number') return String(checked);
      throw this.fail(path, `${checked} (key of map field '${field.name}')`);
    }
    throw this.fail(path, `map field '${field.name}' has ${type} keys, got ${JSON.stringify(key)}`);
  }

  private readSingle(field: FieldDescriptor, raw: unknown, path: string): ProtoValue {
    if (raw === null) throw this.fail(path, `field '${field.name}' cannot hold null inside a list or map`);
    if (field.type === 'message') return this.readMessage(messageDescriptor(field.typeName ?? ''), raw, path);
    if (field.type === 'enum') return this.readEnum(field, raw, path);
    return this.readScalar(field.type, field, raw, path);
  }

  private readEnum(field: FieldDescriptor, raw: unknown, path: string): string {
    const en = enumDescriptor(field.typeName ?? '');
    if (typeof raw === 'string') {
      // Triton enables protobuf's case-insensitive enum parsing for config overrides.
      const v = en.values.find((x) => x.name === raw) ?? en.values.find((x) => x.name === raw.toUpperCase());
      if (v !== undefined) return v.name;
    } else if (typeof raw === 'number') {
      const v = en.values.find((x) => x.number === raw);
      if (v !== undefined) return v.name;
    }
    throw this.fail(
      path,
      `invalid value ${typeOfJson(raw)} for enum field '${field.name}' (enum ${en.name})`,
    );
  }

  private readScalar(type: ScalarType, field: FieldDescriptor, raw: unknown, path: string): ProtoValue {
    const wrong = (): NereidError =>
      this.fail(path, `field '${field.name}' expects ${type}, got ${typeOfJson(raw)}`);
    switch (type) {
      case 'string':
        if (typeof raw !== 'string') throw wrong();
        return raw;
      case 'bool':
        if (typeof raw !== 'boolean') throw wrong();
        return raw;
      case 'float':
      case 'double': {
        let v: number;
        if (typeof raw === 'number') v = raw;
        else if (raw === 'NaN') v = NaN;
        else if (raw === 'Infinity') v = Infinity;
        else if (raw === '-Infinity') v = -Infinity;
        else if (typeof raw === 'string' && /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) v = Number(raw);
        else throw wrong();
        if (type === 'float' && Number.isFinite(v) && !Number.isFinite(Math.fround(v))) {
          throw this.fail(path, `value ${String(raw)} is out of range for float field '${field.name}'`);
        }
        return v;
      }
      default: {
        if (!isIntegerType(type)) throw wrong();
        let big: bigint;
        if (typeof raw === 'number') {
          if (!Number.isInteger(raw)) throw wrong();
          if (!Number.isSafeInteger(raw)) {
            throw this.fail(
              path,
              `value ${raw} of field '${field.name}' is beyond 2^53 and cannot be represented exactly`,
            );
          }
          big = BigInt(raw);
        } else if (typeof raw === 'string' && /^-?\d{1,40}$/.test(raw)) {
          big = BigInt(raw);
        } else {
          throw wrong();
        }
        const checked = checkInteger(type, big);
        if (typeof checked === 'string') throw this.fail(path, `${checked} (field '${field.name}')`);
        return checked;
      }
    }
  }
}

/** Reads any message of model_config.proto from its JSON form (used for ModelConfig and in tests). */
export function parseJsonMessage(
  json: string,
  origin: string,
  messageName: string,
  options: JsonReadOptions = {},
): ProtoMessage {
  const reader = new JsonReader(origin);
  const maxLength = options.maxLength ?? DEFAULT_MAX_JSON_LENGTH;
  if (json.length > maxLength) {
    throw reader.fail(
      '',
      `model configuration JSON is ${json.length} characters, more than the limit of ${maxLength}`,
    );
  }
  if (depthExceeds(json, MAX_JSON_DEPTH)) {
    throw reader.fail('', `JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_DEPTH})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw reader.fail('', `invalid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  return reader.readMessage(messageDescriptor(messageName), parsed, '');
}

/**
 * Parses the JSON form of a ModelConfig (`origin` names where it came from, for messages). Errors are
 * INVALID_ARG; the repository layer prefixes them with Triton's "Invalid config override: ".
 */
export function parseModelConfigJson(
  json: string,
  origin: string,
  options: JsonReadOptions = {},
): ModelConfig {
  return finishModelConfig(parseJsonMessage(json, origin, MODEL_CONFIG, options));
}
