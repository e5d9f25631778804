/**
 * Request JSON parsing for the HTTP frontend. Triton parses request JSON with rapidjson; Nereid takes what
 * it takes and refuses what it refuses, with its messages (json-exact.ts). The hot path is JSON.parse,
 * which agrees with rapidjson on ordinary documents; whatever JSON.parse refuses (a syntax error, or the
 * NaN / Infinity literals and byte order mark rapidjson takes) goes to the exact parser. JSON.parse rounds
 * integers beyond 2^53 and turns a number too big for a double into Infinity, where Triton clients send
 * exact 64-bit values and rapidjson refuses the overflow: a decoder that meets such a value where it
 * matters throws a marked error, and the request is parsed again with the exact parser.
 */
import { NereidError } from '../../common/errors.js';
import { parseJsonExact, type JsonIn, type JsonInObject } from '../../common/json-exact.js';

// The exact parser and its value types live in common/ (the HTTP client reads responses with them too).
export { parseJsonExact, type JsonIn, type JsonInObject } from '../../common/json-exact.js';

/** A \u escape of a high surrogate: rapidjson wants its low surrogate right after it, JSON.parse does not. */
const HIGH_SURROGATE_ESCAPE = /\\u[dD][89abAB]/;

/**
 * Parses request JSON (UTF-8 bytes, or text) with JSON.parse, or with the exact parser where JSON.parse
 * refuses the text or rapidjson might refuse what JSON.parse takes. Integers beyond 2^53 and numbers too
 * big for a double come back rounded: callers that need them detect such values (isRoundedInteger,
 * isOverflowedNumber) and re-parse with parseJsonExact.
 */
export function parseJson(source: string | Uint8Array): JsonIn {
  const text =
    typeof source === 'string'
      ? source
      : Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString('utf8');
  if (text.includes('\\u') && HIGH_SURROGATE_ESCAPE.test(text)) return parseJsonExact(source);
  try {
    return JSON.parse(text) as JsonIn;
  } catch {
    return parseJsonExact(source);
  }
}

/** A number JSON.parse may have rounded: integer-valued and beyond 2^53. */
export function isRoundedInteger(v: JsonIn | undefined): v is number {
  return typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v);
}

/**
 * A number JSON.parse made Infinity because it is too big for a double, where rapidjson (Triton) refuses
 * it. Only from JSON.parse: the exact parser refuses those and keeps Infinity for the literals it takes.
 */
export function isOverflowedNumber(v: JsonIn | undefined): v is number {
  return v === Infinity || v === -Infinity;
}

const roundedErrors = new WeakSet<NereidError>();

/**
 * Marks an error caused by a value JSON.parse may have altered (isRoundedInteger, isOverflowedNumber):
 * the caller re-parses exactly and decodes again.
 */
export function roundedIntegerError(err: NereidError): NereidError {
  roundedErrors.add(err);
  return err;
}

export function isRoundedIntegerError(err: unknown): boolean {
  return err instanceof NereidError && roundedErrors.has(err);
}

/** A plain JSON object (not null, not an array). */
export function isJsonObject(v: JsonIn | undefined): v is JsonInObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Short printable form of a JSON value for error messages. */
export function describeJson(v: JsonIn | undefined): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return String(v);
  const s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  return s.length > 40 ? s.slice(0, 37) + '...' : s;
}
