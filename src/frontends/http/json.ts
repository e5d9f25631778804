/**
 * Request JSON parsing for the HTTP frontend. JSON.parse is fast but rounds integers beyond 2^53, while
 * Triton clients send exact 64-bit values (INT64/UINT64 tensor data, sequence ids, dims). The hot path
 * stays JSON.parse; a decoder that meets an integer-valued number beyond 2^53 where exactness matters
 * throws a marked error, and the request is parsed again with the exact parser below, which keeps such
 * integers as bigint. The exact parser is iterative, so hostile nesting cannot exhaust the stack.
 */
import { invalidArg, NereidError } from '../../common/errors.js';

export type JsonIn = null | boolean | number | bigint | string | JsonIn[] | JsonInObject;
export interface JsonInObject {
  [key: string]: JsonIn;
}

const D0 = 0x30;
const D9 = 0x39;

/**
 * Parses request JSON with JSON.parse, falling back to the exact parser when JSON.parse refuses the text
 * (the NaN / Infinity literals Triton accepts, or a syntax error, which the exact parser words with an
 * offset). Integers beyond 2^53 come back rounded: callers that need them exactly detect such values
 * (isRoundedInteger) and re-parse with parseJsonExact.
 */
export function parseJson(text: string): JsonIn {
  try {
    return JSON.parse(text) as JsonIn;
  } catch {
    return parseJsonExact(text);
  }
}

/** A number JSON.parse may have rounded: integer-valued and beyond 2^53. */
export function isRoundedInteger(v: JsonIn | undefined): v is number {
  return typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v);
}

const roundedErrors = new WeakSet<NereidError>();

/** Marks an error caused by a possibly rounded integer: the caller re-parses exactly and decodes again. */
export function roundedIntegerError(err: NereidError): NereidError {
  roundedErrors.add(err);
  return err;
}

export function isRoundedIntegerError(err: unknown): boolean {
  return err instanceof NereidError && roundedErrors.has(err);
}

function fail(reason: string, at: number): never {
  throw invalidArg(`failed to parse the request JSON buffer: ${reason} at ${at}`);
}

interface Frame {
  readonly container: JsonIn[] | JsonInObject;
  /** Object member key waiting for its value. */
  key: string | undefined;
}

/** The exact (slower) parser; exported for tests. */
export function parseJsonExact(text: string): JsonIn {
  const n = text.length;
  let pos = 0;
  const stack: Frame[] = [];
  let result: JsonIn | undefined;

  const skipWs = (): void => {
    while (pos < n) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else break;
    }
  };

  const parseString = (): string => {
    // pos is at the opening quote.
    const start = pos;
    let i = pos + 1;
    let escaped = false;
    for (;;) {
      if (i >= n) fail('Missing a closing quotation mark in string', start);
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        i += 2;
        continue;
      }
      if (c < 0x20) fail('Invalid encoding in string', i);
      i++;
    }
    pos = i + 1;
    if (!escaped) return text.slice(start + 1, i);
    try {
      return JSON.parse(text.slice(start, i + 1)) as string;
    } catch {
      return fail('Invalid escape character in string', start);
    }
  };

  const matchWord = (word: string): boolean => {
    if (text.startsWith(word, pos)) {
      pos += word.length;
      return true;
    }
    return false;
  };

  const parseNumber = (): number | bigint => {
    const start = pos;
    let negative = false;
    if (text.charCodeAt(pos) === 0x2d) {
      negative = true;
      pos++;
    }
    if (matchWord('Infinity') || matchWord('Inf')) return negative ? -Infinity : Infinity;
    if (!negative && matchWord('NaN')) return NaN;
    const intStart = pos;
    let c = text.charCodeAt(pos);
    if (c === D0) {
      pos++;
    } else if (c > D0 && c <= D9) {
      while (pos < n && (c = text.charCodeAt(pos)) >= D0 && c <= D9) pos++;
    } else {
      fail('Invalid value', start);
    }
    const intDigits = pos - intStart;
    let isInteger = true;
    if (text.charCodeAt(pos) === 0x2e) {
      isInteger = false;
      pos++;
      const fracStart = pos;
      while (pos < n && (c = text.charCodeAt(pos)) >= D0 && c <= D9) pos++;
      if (pos === fracStart) fail('Missing fraction part in number', pos);
    }
    c = text.charCodeAt(pos);
    if (c === 0x65 || c === 0x45) {
      isInteger = false;
      pos++;
      c = text.charCodeAt(pos);
      if (c === 0x2b || c === 0x2d) pos++;
      const expStart = pos;
      while (pos < n && (c = text.charCodeAt(pos)) >= D0 && c <= D9) pos++;
      if (pos === expStart) fail('Missing exponent in number', pos);
    }
    const token = text.slice(start, pos);
    if (!isInteger || intDigits < 16) return Number(token);
    const big = BigInt(token);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(big)
      : big;
  };

  const attach = (value: JsonIn): void => {
    const top = stack.length > 0 ? stack[stack.length - 1] : undefined;
    if (top === undefined) {
      result = value;
    } else if (Array.isArray(top.container)) {
      top.container.push(value);
    } else {
      const key = top.key!;
      top.key = undefined;
      if (key === '__proto__') {
        Object.defineProperty(top.container, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        top.container[key] = value;
      }
    }
  };

  /** After '{' or ',' inside an object: reads `"key" :`. */
  const readKey = (frame: Frame): void => {
    skipWs();
    if (text.charCodeAt(pos) !== 0x22) fail('Missing a name for object member', pos);
    frame.key = parseString();
    skipWs();
    if (text.charCodeAt(pos) !== 0x3a) fail('Missing a colon after a name of object member', pos);
    pos++;
  };

  // Each loop iteration reads one value, then consumes any closing brackets and one separator.
  for (;;) {
    skipWs();
    if (pos >= n) fail(stack.length === 0 ? 'The document is empty' : 'Unexpected end of input', pos);
    const c = text.charCodeAt(pos);
    let opened = false;
    if (c === 0x7b) {
      pos++;
      const frame: Frame = { container: {}, key: undefined };
      attach(frame.container);
      stack.push(frame);
      skipWs();
      if (text.charCodeAt(pos) === 0x7d) {
        pos++;
        stack.pop();
      } else {
        readKey(frame);
        opened = true;
      }
    } else if (c === 0x5b) {
      pos++;
      const frame: Frame = { container: [], key: undefined };
      attach(frame.container);
      stack.push(frame);
      skipWs();
      if (text.charCodeAt(pos) === 0x5d) {
        pos++;
        stack.pop();
      } else {
        opened = true;
      }
    } else if (c === 0x22) {
      attach(parseString());
    } else if (c === 0x74) {
      if (!matchWord('true')) fail('Invalid value', pos);
      attach(true);
    } else if (c === 0x66) {
      if (!matchWord('false')) fail('Invalid value', pos);
      attach(false);
    } else if (c === 0x6e) {
      if (!matchWord('null')) fail('Invalid value', pos);
      attach(null);
    } else {
      attach(parseNumber());
    }
    if (opened) continue;

    // Close finished containers, then expect a separator or the end.
    for (;;) {
      if (stack.length === 0) {
        skipWs();
        if (pos < n) fail('The document root must not be followed by other values', pos);
        return result!;
      }
      skipWs();
      const top = stack[stack.length - 1];
      const isArray = Array.isArray(top.container);
      const s = text.charCodeAt(pos);
      if (s === 0x2c) {
        pos++;
        if (!isArray) readKey(top);
        break;
      }
      if (isArray && s === 0x5d) {
        pos++;
        stack.pop();
        continue;
      }
      if (!isArray && s === 0x7d) {
        pos++;
        stack.pop();
        continue;
      }
      fail(
        isArray
          ? 'Missing a comma or ] after an array element'
          : 'Missing a comma or } after an object member',
        pos,
      );
    }
  }
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
