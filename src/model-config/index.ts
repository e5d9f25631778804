/**
 * Public API of model-config: read a config (text or JSON), fill Triton's defaults, validate, freeze,
 * and print Triton's JSON form. The types live in model-config.ts; the proto table in schema.ts.
 */
export { parseModelConfigText, parseTextMessage, MAX_NESTING_DEPTH } from './pbtxt/parser.js';
export {
  parseModelConfigJson,
  parseJsonMessage,
  MAX_JSON_DEPTH,
  DEFAULT_MAX_JSON_LENGTH,
  type JsonReadOptions,
} from './from-json.js';
export {
  normalizeModelConfig,
  DEFAULT_QUEUE_POLICY,
  ENSEMBLE_PLATFORM,
  SEQUENCE_IDLE_DEFAULT_MICROSECONDS,
  type NormalizeOptions,
  type PreferredInstanceGroup,
} from './normalize.js';
export { validateModelConfig } from './validate.js';
export { modelConfigToJson } from './to-json.js';
export { freezeModelConfig } from './freeze.js';
export * from './schema.js';
export type * from './model-config.js';
export type { JsonObject, JsonValue } from './json.js';
