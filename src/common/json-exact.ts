/**
 * The exact request JSON parser. It accepts and refuses what Triton's TritonJson accepts and refuses
 * (rapidjson 1.1.0's recursive reader with kParseNanAndInfFlag, the version Triton 2.51 is built with), and
 * words a refusal the way Triton prints it: `failed to parse the request JSON buffer: <GetParseError_En
 * text> at <byte offset>`. Values follow JSON.parse, so this parser and the JSON.parse fast path agree on
 * every document both take, except that integers beyond 2^53 stay exact as bigint.
 *
 * It reads the UTF-8 bytes, as rapidjson does, so offsets are byte offsets; like rapidjson (without
 * kParseValidateEncodingFlag) it does not validate UTF-8, and a NUL byte reads as the end of the input.
 * It is iterative (an explicit stack), so hostile nesting cannot exhaust the call stack, and every step
 * consumes input, so time is linear in the input's size.
 * It lives in common/ because both sides read JSON with it: the HTTP frontend (request bodies, through
 * frontends/http/json.ts) and the HTTP client (responses with exact 64-bit integers).
 */
import { invalidArg } from './errors.js';

/** A parsed JSON value; integers beyond 2^53 are bigint (the exact parser keeps them exact). */
export type JsonIn = null | boolean | number | bigint | string | JsonIn[] | JsonInObject;
export interface JsonInObject {
  [key: string]: JsonIn;
}

/**
 * GetParseError_En (rapidjson/error/en.h) for the ParseErrorCodes a document parse with Triton's flags
 * can end in. kParseErrorStringInvalidEncoding needs kParseValidateEncodingFlag, kParseErrorTermination a
 * handler that stops (the document's never does), kParseErrorUnspecificSyntaxError the iterative reader.
 */
export const RAPIDJSON_PARSE_ERRORS = {
  documentEmpty: 'The document is empty.',
  documentRootNotSingular: 'The document root must not be followed by other values.',
  valueInvalid: 'Invalid value.',
  objectMissName: 'Missing a name for object member.',
  objectMissColon: 'Missing a colon after a name of object member.',
  objectMissCommaOrCurlyBracket: "Missing a comma or '}' after an object member.",
  arrayMissCommaOrSquareBracket: "Missing a comma or ']' after an array element.",
  stringUnicodeEscapeInvalidHex: 'Incorrect hex digit after \\u escape in string.',
  stringUnicodeSurrogateInvalid: 'The surrogate pair in string is invalid.',
  stringEscapeInvalid: 'Invalid escape character in string.',
  stringMissQuotationMark: 'Missing a closing quotation mark in string.',
  numberTooBig: 'Number too big to be stored in double.',
  numberMissFraction: 'Miss fraction part in number.',
  numberMissExponent: 'Miss exponent in number.',
} as const;

export type RapidJsonParseError = keyof typeof RAPIDJSON_PARSE_ERRORS;

/** TritonJson's wording of a parse error (triton_json.h, Value::Parse). */
export function jsonParseErrorMessage(error: RapidJsonParseError, offset: number): string {
  return `failed to parse the request JSON buffer: ${RAPIDJSON_PARSE_ERRORS[error]} at ${offset}`;
}

function fail(error: RapidJsonParseError, offset: number): never {
  throw invalidArg(jsonParseErrorMessage(error, offset));
}

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const D0 = 0x30;
const D9 = 0x39;
const COLON = 0x3a;
const LBRACKET = 0x5b;
const BACKSLASH = 0x5c;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;

const isDigit = (c: number): boolean => c >= D0 && c <= D9;

/** The one-character escapes rapidjson knows, by the byte after the backslash. */
const SIMPLE_ESCAPES: readonly (string | undefined)[] = (() => {
  const table: (string | undefined)[] = new Array<string | undefined>(128).fill(undefined);
  for (const [c, s] of [
    ['"', '"'],
    ['\\', '\\'],
    ['/', '/'],
    ['b', '\b'],
    ['f', '\f'],
    ['n', '\n'],
    ['r', '\r'],
    ['t', '\t'],
  ] as const) {
    table[c.charCodeAt(0)] = s;
  }
  return table;
})();

/** rapidjson's integer limits before an integer becomes a double: 2^64-1, and 2^63 for a negative one. */
const UINT64_LIMIT = 2n ** 64n - 1n;
const NEGATIVE_LIMIT = 2n ** 63n;
/** DBL_MAX / 10: a double integer this large takes no further digit (kParseErrorNumberTooBig). */
const DOUBLE_DIGIT_LIMIT = 1.7976931348623157e307;

interface Frame {
  readonly container: JsonIn[] | JsonInObject;
  /** Object member key waiting for its value. */
  key: string | undefined;
}

function toBuffer(source: string | Uint8Array): Buffer {
  if (typeof source === 'string') return Buffer.from(source, 'utf8');
  return Buffer.isBuffer(source) ? source : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
}

/** Parses `source` (UTF-8 bytes, or a string taken as its UTF-8 encoding) as Triton would. */
export function parseJsonExact(source: string | Uint8Array): JsonIn {
  return new Reader(toBuffer(source)).document();
}

class Reader {
  private pos = 0;

  constructor(private readonly buf: Buffer) {}

  /** The byte at the cursor, 0 at the end (rapidjson's MemoryStream::Peek). */
  private peek(): number {
    return this.pos < this.buf.length ? this.buf[this.pos] : 0;
  }

  private consume(c: number): boolean {
    if (this.peek() !== c) return false;
    this.pos++;
    return true;
  }

  private skipWhitespace(): void {
    const buf = this.buf;
    while (this.pos < buf.length) {
      const c = buf[this.pos];
      if (c !== SPACE && c !== LF && c !== CR && c !== TAB) return;
      this.pos++;
    }
  }

  private skipDigits(): void {
    while (isDigit(this.peek())) this.pos++;
  }

  document(): JsonIn {
    // rapidjson's UTF-8 memory stream drops each byte of a byte order mark on its own.
    this.consume(0xef);
    this.consume(0xbb);
    this.consume(0xbf);
    this.skipWhitespace();
    if (this.peek() === 0) fail('documentEmpty', this.pos);
    const value = this.value();
    this.skipWhitespace();
    if (this.peek() !== 0) fail('documentRootNotSingular', this.pos);
    return value;
  }

  /** One value (whitespace before it skipped), containers through an explicit stack. */
  private value(): JsonIn {
    const stack: Frame[] = [];
    let root: JsonIn = null;
    const attach = (value: JsonIn): void => {
      const top = stack.length > 0 ? stack[stack.length - 1] : undefined;
      if (top === undefined) {
        root = value;
      } else if (Array.isArray(top.container)) {
        top.container.push(value);
      } else {
        const key = top.key!;
        top.key = undefined;
        if (key === '__proto__') {
          // An own property, as JSON.parse makes it, never a prototype change.
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

    for (;;) {
      const c = this.peek();
      if (c === LBRACE || c === LBRACKET) {
        this.pos++;
        this.skipWhitespace();
        const container: JsonIn[] | JsonInObject = c === LBRACE ? {} : [];
        attach(container);
        if (!this.consume(c === LBRACE ? RBRACE : RBRACKET)) {
          const frame: Frame = { container, key: undefined };
          stack.push(frame);
          if (c === LBRACE) frame.key = this.memberName();
          continue;
        }
      } else {
        attach(this.scalar(c));
      }

      // After a value: close what it ends, then a separator leads to the next value.
      for (;;) {
        if (stack.length === 0) return root;
        const top = stack[stack.length - 1];
        this.skipWhitespace();
        if (Array.isArray(top.container)) {
          if (this.consume(COMMA)) {
            this.skipWhitespace();
            break;
          }
          if (!this.consume(RBRACKET)) fail('arrayMissCommaOrSquareBracket', this.pos);
        } else {
          if (this.consume(COMMA)) {
            this.skipWhitespace();
            top.key = this.memberName();
            break;
          }
          if (!this.consume(RBRACE)) fail('objectMissCommaOrCurlyBracket', this.pos);
        }
        stack.pop();
      }
    }
  }

  /** `"name" :` and the whitespace after it. */
  private memberName(): string {
    if (this.peek() !== QUOTE) fail('objectMissName', this.pos);
    const name = this.string();
    this.skipWhitespace();
    if (!this.consume(COLON)) fail('objectMissColon', this.pos);
    this.skipWhitespace();
    return name;
  }

  private scalar(c: number): JsonIn {
    switch (c) {
      case 0x6e: // n
        this.pos++;
        this.literalRest('ull');
        return null;
      case 0x74: // t
        this.pos++;
        this.literalRest('rue');
        return true;
      case 0x66: // f
        this.pos++;
        this.literalRest('alse');
        return false;
      case QUOTE:
        return this.string();
      default:
        return this.number();
    }
  }

  /** The rest of a literal, refused at the first byte that differs. */
  private literalRest(rest: string): void {
    for (let i = 0; i < rest.length; i++) {
      if (!this.consume(rest.charCodeAt(i))) fail('valueInvalid', this.pos);
    }
  }

  /** A string from its opening quote; raw bytes are decoded as UTF-8 (invalid ones become U+FFFD). */
  private string(): string {
    const buf = this.buf;
    this.pos++;
    let out = '';
    let run = this.pos;
    for (;;) {
      const c = this.peek();
      if (c === QUOTE) {
        out += buf.toString('utf8', run, this.pos);
        this.pos++;
        return out;
      }
      if (c === BACKSLASH) {
        out += buf.toString('utf8', run, this.pos);
        out += this.escape();
        run = this.pos;
      } else if (c < SPACE) {
        // The end of the input (or a NUL byte), else an unescaped control character.
        fail(c === 0 ? 'stringMissQuotationMark' : 'stringEscapeInvalid', this.pos);
      } else {
        this.pos++;
      }
    }
  }

  /** One escape from its backslash; errors name the backslash's offset. */
  private escape(): string {
    const at = this.pos;
    this.pos++;
    const e = this.peek();
    const simple = e < 128 ? SIMPLE_ESCAPES[e] : undefined;
    if (simple !== undefined) {
      this.pos++;
      return simple;
    }
    if (e !== 0x75) fail('stringEscapeInvalid', at); // u
    this.pos++;
    const unit = this.hex4(at);
    // rapidjson 1.1.0 wants a high surrogate followed by a low one, and lets a lone low surrogate through.
    if (unit < 0xd800 || unit > 0xdbff) return String.fromCharCode(unit);
    if (!this.consume(BACKSLASH) || !this.consume(0x75)) fail('stringUnicodeSurrogateInvalid', at);
    const low = this.hex4(at);
    if (low < 0xdc00 || low > 0xdfff) fail('stringUnicodeSurrogateInvalid', at);
    return String.fromCharCode(unit, low);
  }

  private hex4(escapeAt: number): number {
    let unit = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.peek();
      let v: number;
      if (c >= D0 && c <= D9) v = c - D0;
      else if (c >= 0x41 && c <= 0x46) v = c - 0x41 + 10;
      else if (c >= 0x61 && c <= 0x66) v = c - 0x61 + 10;
      else fail('stringUnicodeEscapeInvalidHex', escapeAt);
      unit = unit * 16 + v;
      this.pos++;
    }
    return unit;
  }

  /**
   * A number as rapidjson 1.1.0 reads it: JSON's grammar plus NaN, Inf and Infinity (either sign), which
   * may even take a fraction or exponent (then, as in rapidjson, the literal counts as 0). Too big for a
   * double is refused as rapidjson decides it, at the number's offset.
   */
  private number(): number | bigint {
    const buf = this.buf;
    const start = this.pos;
    const minus = this.consume(MINUS);
    const intStart = this.pos;
    let special: number | undefined;
    const c = this.peek();
    if (c === D0) this.pos++;
    else if (c > D0 && c <= D9) this.skipDigits();
    else if (c === 0x4e || c === 0x49)
      special = this.nanOrInfinity(minus); // N, I
    else fail('valueInvalid', this.pos);
    const intEnd = this.pos;
    if (special === undefined && intEnd - intStart >= 20) {
      checkIntegerPart(buf, intStart, intEnd, minus, start);
    }

    let fracStart = -1;
    if (this.consume(DOT)) {
      if (!isDigit(this.peek())) fail('numberMissFraction', this.pos);
      fracStart = this.pos;
      this.skipDigits();
    }
    const fracEnd = this.pos;

    let hasExponent = false;
    if (this.consume(0x65) || this.consume(0x45)) {
      hasExponent = true;
      const negative = !this.consume(PLUS) && this.consume(MINUS);
      if (!isDigit(this.peek())) fail('numberMissExponent', this.pos);
      if (negative) {
        this.skipDigits();
      } else {
        let exp = 0;
        let maxExp: number | undefined;
        while (isDigit(this.peek())) {
          exp = exp * 10 + (buf[this.pos] - D0);
          this.pos++;
          if (exp > 308) {
            maxExp ??=
              308 -
              (fracStart < 0
                ? 0
                : fractionExponent(buf, intStart, intEnd, fracStart, fracEnd, minus, special));
            if (exp > maxExp) fail('numberTooBig', start);
          }
        }
      }
    }

    if (special !== undefined) {
      if (fracStart < 0 && !hasExponent) return special;
      const rest = Number('0' + buf.toString('latin1', intEnd, this.pos));
      return minus ? -rest : rest;
    }
    const token = buf.toString('latin1', start, this.pos);
    if (fracStart >= 0 || hasExponent || intEnd - intStart < 16) return Number(token);
    const big = BigInt(token);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(big)
      : big;
  }

  /** NaN, Inf or Infinity, consumed the way rapidjson 1.1.0 tries them (so "NInf" is Infinity). */
  private nanOrInfinity(minus: boolean): number {
    const is = (ch: string): boolean => this.consume(ch.charCodeAt(0));
    if (is('N') && is('a') && is('N')) return NaN;
    if (is('I') && is('n') && is('f')) {
      if (this.peek() === 0x69 && !(is('i') && is('n') && is('i') && is('t') && is('y'))) {
        fail('valueInvalid', this.pos);
      }
      return minus ? -Infinity : Infinity;
    }
    return fail('valueInvalid', this.pos);
  }
}

/**
 * rapidjson keeps an integer's leading digits while they fit 2^64-1 (2^63 negative), then goes on in a
 * double and refuses a further digit once the double reaches DBL_MAX / 10.
 */
function checkIntegerPart(
  buf: Buffer,
  intStart: number,
  intEnd: number,
  minus: boolean,
  start: number,
): void {
  const limit = minus ? NEGATIVE_LIMIT : UINT64_LIMIT;
  let value = 0n;
  let k = intStart;
  for (; k < intEnd; k++) {
    const next = value * 10n + BigInt(buf[k] - D0);
    if (next > limit) break;
    value = next;
  }
  let d = Number(value);
  for (; k < intEnd; k++) {
    if (d >= DOUBLE_DIGIT_LIMIT) fail('numberTooBig', start);
    d = d * 10 + (buf[k] - D0);
  }
}

/**
 * rapidjson's expFrac: minus the number of fraction digits it folds into the significand (all of them
 * while the significand is below 2^53, then while it has fewer than 17 significant digits). A positive
 * exponent above 308 - expFrac is kParseErrorNumberTooBig.
 */
function fractionExponent(
  buf: Buffer,
  intStart: number,
  intEnd: number,
  fracStart: number,
  fracEnd: number,
  minus: boolean,
  special: number | undefined,
): number {
  let significand = 0;
  let significantDigits = 0;
  if (special === undefined) {
    const limit = minus ? NEGATIVE_LIMIT : UINT64_LIMIT;
    let value = 0n;
    for (let k = intStart; k < intEnd; k++) {
      value = value * 10n + BigInt(buf[k] - D0);
      // An integer part that became a double already has 19+ significant digits: no fraction digit counts.
      if (value > limit) return 0;
    }
    significand = value > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(value);
    significantDigits = buf[intStart] === D0 ? 0 : intEnd - intStart - 1;
  }
  let expFrac = 0;
  let k = fracStart;
  // Exact while at most 2^53 - 1; past it only "above 2^53 - 1" matters, which rounding keeps.
  for (; k < fracEnd && significand <= Number.MAX_SAFE_INTEGER; k++) {
    significand = significand * 10 + (buf[k] - D0);
    expFrac--;
    if (significand !== 0) significantDigits++;
  }
  let positive = significand > 0;
  for (; k < fracEnd && significantDigits < 17; k++) {
    expFrac--;
    if (buf[k] !== D0) positive = true;
    if (positive) significantDigits++;
  }
  return expFrac;
}
