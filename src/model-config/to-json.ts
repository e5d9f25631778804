/**
 * The JSON Triton returns for GET /v2/models/<m>/config (and hands to Python models as `model_config`).
 * Triton prints the proto with protobuf's JSON printer (proto field names, enum names, every scalar,
 * list and map even at its default, set sub-messages and oneof members only, 64-bit integers as strings)
 * and then turns a fixed list of 64-bit fields back into numbers (core: ModelConfigToJson). This
 * reproduces that output field for field, including the 64-bit fields Triton leaves as strings.
 */
import type { JsonObject, JsonValue } from './json.js';
import type { FrozenModelConfig } from './model-config.js';
import { messageDescriptor, MODEL_CONFIG, type FieldDescriptor, type MessageDescriptor } from './schema.js';
import { scalarDefault, setEntry } from './values.js';

/**
 * 64-bit fields Triton's ModelConfigToJson converts to JSON numbers (path of field names; `value` steps
 * into a map's values). Every other int64/uint64 stays a string, as protobuf prints it: notably
 * `sequence_batching.state.initial_state.dims` (Triton looks for `initial_state` in the wrong object),
 * `instance_group.secondary_devices.device_id` and the CUDA graph shapes.
 */
const NUMERIC_INT64_PATHS: ReadonlySet<string> = new Set([
  'input.dims',
  'input.reshape.shape',
  'output.dims',
  'output.reshape.shape',
  'version_policy.specific.versions',
  'dynamic_batching.max_queue_delay_microseconds',
  'dynamic_batching.priority_levels',
  'dynamic_batching.default_priority_level',
  'dynamic_batching.default_queue_policy.default_timeout_microseconds',
  'dynamic_batching.priority_queue_policy.value.default_timeout_microseconds',
  'sequence_batching.max_sequence_idle_microseconds',
  'sequence_batching.oldest.max_queue_delay_microseconds',
  'sequence_batching.direct.max_queue_delay_microseconds',
  'sequence_batching.state.dims',
  'ensemble_scheduling.step.model_version',
  'model_warmup.inputs.value.dims',
]);

/** protobuf prints a float with 6 significant digits if that reads back as the same float, else 9. */
function float32Json(v: number): number {
  const f = Math.fround(v);
  const short = Number(f.toPrecision(6));
  return Math.fround(short) === f ? short : Number(f.toPrecision(9));
}

function nonFinite(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  return v > 0 ? 'Infinity' : '-Infinity';
}

type Readable = Readonly<Record<string, unknown>>;

function valueToJson(field: FieldDescriptor, v: unknown, path: string): JsonValue {
  switch (field.type) {
    case 'message':
      return messageToJson(messageDescriptor(field.typeName ?? ''), (v ?? {}) as Readable, path);
    case 'int64':
    case 'uint64': {
      const n = typeof v === 'number' ? v : Number(v ?? 0);
      return NUMERIC_INT64_PATHS.has(path) ? n : String(n);
    }
    case 'float':
    case 'double': {
      const n = typeof v === 'number' ? v : Number(v ?? 0);
      if (!Number.isFinite(n)) return nonFinite(n);
      return field.type === 'float' ? float32Json(n) : n;
    }
    default:
      return (v ?? scalarDefault(field.type, field.typeName)) as JsonValue;
  }
}

function messageToJson(desc: MessageDescriptor, msg: Readable, path: string): JsonObject {
  const out: JsonObject = {};
  for (const field of desc.fields) {
    const fieldPath = path === '' ? field.name : `${path}.${field.name}`;
    const v = msg[field.name];
    if (field.label === 'repeated') {
      out[field.name] = (Array.isArray(v) ? (v as unknown[]) : []).map((x) =>
        valueToJson(field, x, fieldPath),
      );
    } else if (field.label === 'map') {
      const entries: JsonObject = {};
      for (const [k, x] of Object.entries((v ?? {}) as Readable)) {
        setEntry(entries, k, valueToJson(field, x, `${fieldPath}.value`));
      }
      out[field.name] = entries;
    } else if (field.type === 'message' || field.oneof !== undefined) {
      if (v !== undefined) out[field.name] = valueToJson(field, v, fieldPath);
    } else {
      out[field.name] = valueToJson(field, v, fieldPath);
    }
  }
  return out;
}

/** Triton's JSON form of a model configuration, ready for JSON.stringify. */
export function modelConfigToJson(cfg: FrozenModelConfig): JsonObject {
  return messageToJson(messageDescriptor(MODEL_CONFIG), cfg, '');
}
