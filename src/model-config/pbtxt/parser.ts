/**
 * Schema-driven parser for protobuf text format. It accepts what protobuf's TextFormat accepts for
 * model_config.proto (`{}` or `<>` message bodies, optional `:` before a message, `[a, b]` lists or
 * repeated keys, maps as key/value entries, enums by name or number, `;`/`,` separators, adjacent string
 * concatenation) and refuses everything else with `<file>:<line>:<col>: <reason>` as INVALID_ARG.
 */
import { didYouMean } from '../../common/nearest-name.js';
import type { ModelConfig } from '../model-config.js';
import { finishModelConfig } from '../message.js';
import {
  enumDescriptor,
  MODEL_CONFIG,
  findField,
  messageDescriptor,
  type FieldDescriptor,
  type MessageDescriptor,
  type ScalarType,
} from '../schema.js';
import {
  checkInteger,
  FieldTracker,
  isIntegerType,
  mapKeyText,
  newMessage,
  scalarDefault,
  setEntry,
} from '../values.js';
import type { ProtoMessage, ProtoValue } from '../values.js';
import { Lexer, type Token } from './lexer.js';

/** Deeper nesting than any real config has; bounds recursion on hostile input. */
export const MAX_NESTING_DEPTH = 100;
const MAX_INTEGER_DIGITS = 40;

const TRUE_WORDS = new Set(['true', 'True', 't']);
const FALSE_WORDS = new Set(['false', 'False', 'f']);
// ignoreBOM: a U+FEFF at the start of a value is part of the value, not a marker to drop.
const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class TextParser {
  constructor(private readonly lx: Lexer) {}

  private fail(tok: Token, message: string): never {
    throw this.lx.errorAt(tok.line, tok.col, message);
  }

  private describe(tok: Token): string {
    switch (tok.kind) {
      case 'eof':
        return 'end of input';
      case 'string':
        return `string ${JSON.stringify(tok.text)}`;
      default:
        return `'${tok.text}'`;
    }
  }

  private isSymbol(tok: Token, ...symbols: string[]): boolean {
    return tok.kind === 'symbol' && symbols.includes(tok.text);
  }

  private expectSymbol(symbol: string, context: string): Token {
    const tok = this.lx.next();
    if (!this.isSymbol(tok, symbol))
      this.fail(tok, `expected '${symbol}' ${context}, got ${this.describe(tok)}`);
    return tok;
  }

  /** Parses fields until `close` ('}' or '>'), or until end of input at the top level. */
  parseMessage(desc: MessageDescriptor, close: string | undefined, depth: number): ProtoMessage {
    const msg = newMessage(desc);
    const tracker = new FieldTracker(desc);
    for (;;) {
      const tok = this.lx.next();
      if (tok.kind === 'eof') {
        if (close === undefined) return msg;
        this.fail(tok, `unexpected end of input, expected '${close}' to close message ${desc.name}`);
      }
      if (close !== undefined && this.isSymbol(tok, close)) return msg;
      if (tok.kind === 'symbol' && tok.text === '[') {
        this.fail(tok, `extension and Any fields are not supported in message ${desc.name}`);
      }
      if (tok.kind !== 'ident')
        this.fail(tok, `expected a field name in message ${desc.name}, got ${this.describe(tok)}`);
      const field = findField(desc, tok.text);
      if (field === undefined) {
        const hint = didYouMean(
          tok.text,
          desc.fields.map((f) => f.name),
        );
        this.fail(tok, `unknown field '${tok.text}' in message ${desc.name}${hint}`);
      }
      this.parseField(msg, desc, tracker, field, tok, depth);
      const sep = this.lx.peek();
      if (this.isSymbol(sep, ';', ',')) this.lx.next();
    }
  }

  private parseField(
    msg: ProtoMessage,
    desc: MessageDescriptor,
    tracker: FieldTracker,
    field: FieldDescriptor,
    nameTok: Token,
    depth: number,
  ): void {
    const isMessageLike = field.type === 'message' || field.label === 'map';
    const colon = this.lx.peek();
    if (this.isSymbol(colon, ':')) {
      this.lx.next();
    } else if (!isMessageLike) {
      this.fail(colon, `expected ':' after field '${field.name}', got ${this.describe(colon)}`);
    }
    const open = this.lx.peek();
    if (this.isSymbol(open, '[')) {
      if (field.label === 'singular')
        this.fail(open, `field '${field.name}' in message ${desc.name} is not repeated`);
      this.lx.next();
      if (this.isSymbol(this.lx.peek(), ']')) {
        this.lx.next();
        return;
      }
      for (;;) {
        this.readInto(msg, field, depth);
        const tok = this.lx.next();
        if (this.isSymbol(tok, ']')) return;
        if (!this.isSymbol(tok, ','))
          this.fail(tok, `expected ',' or ']' in list '${field.name}', got ${this.describe(tok)}`);
      }
    }
    const problem = tracker.claim(field);
    if (problem !== undefined) this.fail(nameTok, problem);
    this.readInto(msg, field, depth);
  }

  /** Reads one value of `field` (one list element or one map entry) and stores it in `msg`. */
  private readInto(msg: ProtoMessage, field: FieldDescriptor, depth: number): void {
    if (field.label === 'map') {
      const [k, v] = this.parseMapEntry(field, depth);
      // A repeated key replaces the earlier entry, as protobuf's map parsing does.
      setEntry(msg[field.name] as ProtoMessage, k, v);
    } else if (field.label === 'repeated') {
      (msg[field.name] as ProtoValue[]).push(this.parseValue(field, depth));
    } else {
      msg[field.name] = this.parseValue(field, depth);
    }
  }

  private parseValue(field: FieldDescriptor, depth: number): ProtoValue {
    if (field.type === 'message') return this.parseNested(messageDescriptor(field.typeName ?? ''), depth);
    if (field.type === 'enum') return this.parseEnum(field);
    return this.parseScalar(field.type, field);
  }

  private openBody(what: string): string {
    const tok = this.lx.next();
    if (this.isSymbol(tok, '{')) return '}';
    if (this.isSymbol(tok, '<')) return '>';
    return this.fail(tok, `expected '{' or '<' to start ${what}, got ${this.describe(tok)}`);
  }

  private parseNested(desc: MessageDescriptor, depth: number): ProtoMessage {
    const open = this.lx.peek();
    const close = this.openBody(`message ${desc.name}`);
    if (depth + 1 > MAX_NESTING_DEPTH)
      this.fail(open, `message nesting exceeds the maximum depth of ${MAX_NESTING_DEPTH}`);
    return this.parseMessage(desc, close, depth + 1);
  }

  /** `{ key: K value: V }`; a missing key or value takes its default, as in protobuf. */
  private parseMapEntry(field: FieldDescriptor, depth: number): [string, ProtoValue] {
    const open = this.lx.peek();
    const close = this.openBody(`an entry of map '${field.name}'`);
    if (depth + 1 > MAX_NESTING_DEPTH)
      this.fail(open, `message nesting exceeds the maximum depth of ${MAX_NESTING_DEPTH}`);
    const keyType = field.keyType ?? 'string';
    let key: string | number | boolean | undefined;
    let value: ProtoValue | undefined;
    for (;;) {
      const tok = this.lx.next();
      if (this.isSymbol(tok, close)) break;
      if (tok.kind === 'eof')
        this.fail(
          tok,
          `unexpected end of input, expected '${close}' to close an entry of map '${field.name}'`,
        );
      if (tok.kind !== 'ident' || (tok.text !== 'key' && tok.text !== 'value')) {
        this.fail(
          tok,
          `expected 'key' or 'value' in an entry of map '${field.name}', got ${this.describe(tok)}`,
        );
      }
      const isKey = tok.text === 'key';
      if (isKey ? key !== undefined : value !== undefined) {
        this.fail(tok, `'${tok.text}' is specified multiple times in an entry of map '${field.name}'`);
      }
      const valueIsMessage = !isKey && field.type === 'message';
      const colon = this.lx.peek();
      if (this.isSymbol(colon, ':')) this.lx.next();
      else if (!valueIsMessage)
        this.fail(colon, `expected ':' after '${tok.text}', got ${this.describe(colon)}`);
      if (isKey) {
        key = this.parseScalar(keyType, field);
      } else if (field.type === 'message') {
        value = this.parseNested(messageDescriptor(field.typeName ?? ''), depth + 1);
      } else if (field.type === 'enum') {
        value = this.parseEnum(field);
      } else {
        value = this.parseScalar(field.type, field);
      }
      const sep = this.lx.peek();
      if (this.isSymbol(sep, ';', ',')) this.lx.next();
    }
    key ??= scalarDefault(keyType);
    value ??=
      field.type === 'message'
        ? newMessage(messageDescriptor(field.typeName ?? ''))
        : scalarDefault(field.type, field.typeName);
    return [mapKeyText(key), value];
  }

  private parseEnum(field: FieldDescriptor): string {
    const en = enumDescriptor(field.typeName ?? '');
    const tok = this.lx.next();
    if (tok.kind === 'ident') {
      const v = en.values.find((x) => x.name === tok.text);
      if (v === undefined)
        this.fail(tok, `unknown enumeration value '${tok.text}' for field '${field.name}' (enum ${en.name})`);
      return v.name;
    }
    let negative = false;
    let num = tok;
    if (this.isSymbol(tok, '-')) {
      negative = true;
      num = this.lx.next();
    }
    if (num.kind === 'int') {
      const n = this.integerOf(num) * (negative ? -1n : 1n);
      const v = en.values.find((x) => BigInt(x.number) === n);
      if (v === undefined)
        this.fail(num, `unknown enumeration value ${n} for field '${field.name}' (enum ${en.name})`);
      return v.name;
    }
    return this.fail(
      num,
      `expected an enumeration value of ${en.name} for field '${field.name}', got ${this.describe(num)}`,
    );
  }

  private integerOf(tok: Token): bigint {
    const t = tok.text;
    // No 64-bit value needs more digits; refusing early keeps BigInt parsing of hostile input cheap.
    if (t.length > MAX_INTEGER_DIGITS) this.fail(tok, `integer literal ${t.slice(0, 24)}… is out of range`);
    if (/^0[xX]/.test(t)) return BigInt(t);
    if (t.length > 1 && t.startsWith('0')) return BigInt(`0o${t.slice(1)}`);
    return BigInt(t);
  }

  private parseScalar(type: ScalarType, field: FieldDescriptor): string | number | boolean {
    if (type === 'string') {
      const first = this.lx.next();
      if (first.kind !== 'string')
        this.fail(first, `field '${field.name}' expects a string, got ${this.describe(first)}`);
      const parts: Uint8Array[] = [first.bytes ?? new Uint8Array()];
      while (this.lx.peek().kind === 'string') parts.push(this.lx.next().bytes ?? new Uint8Array());
      try {
        return utf8Strict.decode(Buffer.concat(parts));
      } catch {
        return this.fail(first, `string field '${field.name}' contains invalid UTF-8`);
      }
    }
    if (type === 'bool') {
      const tok = this.lx.next();
      if (tok.kind === 'ident' && TRUE_WORDS.has(tok.text)) return true;
      if (tok.kind === 'ident' && FALSE_WORDS.has(tok.text)) return false;
      if (tok.kind === 'int' && (tok.text === '1' || tok.text === '0')) return tok.text === '1';
      return this.fail(tok, `field '${field.name}' expects a bool (true/false), got ${this.describe(tok)}`);
    }
    let tok = this.lx.next();
    const minus = this.isSymbol(tok, '-');
    if (minus) tok = this.lx.next();
    if (type === 'float' || type === 'double') {
      if (tok.kind === 'ident') {
        const word = tok.text.toLowerCase();
        if (word === 'inf' || word === 'infinity') return minus ? -Infinity : Infinity;
        if (word === 'nan') return NaN;
      }
      if (tok.kind !== 'int' && tok.kind !== 'float') {
        this.fail(tok, `field '${field.name}' expects a number (${type}), got ${this.describe(tok)}`);
      }
      const v = tok.kind === 'int' ? Number(this.integerOf(tok)) : Number(tok.text.replace(/[fF]$/, ''));
      const signed = minus ? -v : v;
      // A float field holds a 32-bit value; keep what the user wrote unless it cannot fit at all.
      if (type === 'float' && Number.isFinite(signed) && !Number.isFinite(Math.fround(signed))) {
        this.fail(tok, `value ${tok.text} is out of range for float field '${field.name}'`);
      }
      return signed;
    }
    if (!isIntegerType(type)) return this.fail(tok, `unsupported field type ${String(type)}`);
    if (tok.kind !== 'int') {
      this.fail(tok, `field '${field.name}' expects an integer (${type}), got ${this.describe(tok)}`);
    }
    const checked = checkInteger(type, minus ? -this.integerOf(tok) : this.integerOf(tok));
    if (typeof checked === 'string') this.fail(tok, `${checked} (field '${field.name}')`);
    return checked;
  }
}

/** Parses any message of model_config.proto from text format (used for ModelConfig and in tests). */
export function parseTextMessage(text: string, fileName: string, messageName: string): ProtoMessage {
  const parser = new TextParser(new Lexer(text, fileName));
  return parser.parseMessage(messageDescriptor(messageName), undefined, 0);
}

/**
 * Parses a config.pbtxt. Unset scalars, lists and maps read as their proto3 defaults; sub-messages stay
 * undefined unless given (except `version_policy`, which reads as `{}` so the type can require it).
 */
export function parseModelConfigText(text: string, fileName: string): ModelConfig {
  return finishModelConfig(parseTextMessage(text, fileName, MODEL_CONFIG));
}
