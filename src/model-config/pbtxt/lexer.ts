/**
 * Tokenizer for protobuf text format (config.pbtxt), following the rules of protobuf's own tokenizer:
 * identifiers, decimal/hex/octal integers, floats (with optional trailing `f`), single- or double-quoted
 * strings with C escapes, `#` comments, and single-character symbols. Every token carries its 1-based
 * line and column so errors can point at the exact spot of a hostile or mistyped file.
 */
import { invalidArg, type NereidError } from '../../common/errors.js';

export type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** Source text (for strings: the decoded bytes as UTF-8, lossy; use `bytes` for the real value). */
  readonly text: string;
  readonly line: number;
  readonly col: number;
  /** Decoded bytes of a string literal. */
  readonly bytes?: Uint8Array;
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ';', ',', '-']);
const SIMPLE_ESCAPES: Record<string, number> = {
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
  '\\': 0x5c,
  '?': 0x3f,
  "'": 0x27,
  '"': 0x22,
};

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isHex = (c: string): boolean => /^[0-9a-fA-F]$/.test(c);
const isOctal = (c: string): boolean => c >= '0' && c <= '7';
const isLetter = (c: string): boolean => /^[A-Za-z_]$/.test(c);
const isIdentChar = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);
const utf8 = new TextEncoder();

export class Lexer {
  private pos = 0;
  private line = 1;
  private col = 1;
  private lookahead: Token | undefined;

  constructor(
    private readonly src: string,
    private readonly fileName: string,
  ) {
    // Editors on some systems save a byte-order mark; it is not part of the text.
    if (src.startsWith('\uFEFF')) this.pos = 1;
  }

  /** A NereidError INVALID_ARG located at `line:col` of this file. */
  errorAt(line: number, col: number, message: string): NereidError {
    return invalidArg(`${this.fileName}:${line}:${col}: ${message}`);
  }

  peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  next(): Token {
    const t = this.peek();
    this.lookahead = undefined;
    return t;
  }

  private ch(offset = 0): string {
    return this.src.charAt(this.pos + offset);
  }

  private advance(): string {
    const c = this.src.charAt(this.pos++);
    if (c === '\n') {
      this.line++;
      this.col = 1;
    } else {
      this.col++;
    }
    return c;
  }

  private skipSpaceAndComments(): void {
    while (this.pos < this.src.length) {
      const c = this.ch();
      if (c === '#') {
        while (this.pos < this.src.length && this.ch() !== '\n') this.advance();
      } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f') {
        this.advance();
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipSpaceAndComments();
    const line = this.line;
    const col = this.col;
    if (this.pos >= this.src.length) return { kind: 'eof', text: '', line, col };
    const c = this.ch();
    if (isLetter(c)) {
      const start = this.pos;
      while (isIdentChar(this.ch())) this.advance();
      return { kind: 'ident', text: this.src.slice(start, this.pos), line, col };
    }
    if (isDigit(c) || (c === '.' && isDigit(this.ch(1)))) return this.scanNumber(line, col);
    if (c === '"' || c === "'") return this.scanString(line, col);
    if (SYMBOLS.has(c)) {
      this.advance();
      return { kind: 'symbol', text: c, line, col };
    }
    const shown = c < ' ' ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c;
    throw this.errorAt(line, col, `unexpected character '${shown}'`);
  }

  private scanNumber(line: number, col: number): Token {
    const start = this.pos;
    let kind: TokenKind = 'int';
    if (this.ch() === '0' && (this.ch(1) === 'x' || this.ch(1) === 'X')) {
      this.advance();
      this.advance();
      if (!isHex(this.ch())) throw this.errorAt(this.line, this.col, "'0x' must be followed by hex digits");
      while (isHex(this.ch())) this.advance();
    } else if (this.ch() === '0' && isDigit(this.ch(1))) {
      this.advance();
      while (isDigit(this.ch())) {
        if (!isOctal(this.ch())) {
          throw this.errorAt(this.line, this.col, 'numbers starting with a leading zero must be in octal');
        }
        this.advance();
      }
    } else {
      while (isDigit(this.ch())) this.advance();
      if (this.ch() === '.') {
        kind = 'float';
        this.advance();
        while (isDigit(this.ch())) this.advance();
      }
      if (this.ch() === 'e' || this.ch() === 'E') {
        kind = 'float';
        this.advance();
        if (this.ch() === '+' || this.ch() === '-') this.advance();
        if (!isDigit(this.ch()))
          throw this.errorAt(this.line, this.col, "'e' must be followed by an exponent");
        while (isDigit(this.ch())) this.advance();
      }
      if (this.ch() === 'f' || this.ch() === 'F') {
        kind = 'float';
        this.advance();
      }
    }
    if (isIdentChar(this.ch()) || this.ch() === '.') {
      throw this.errorAt(this.line, this.col, 'need space between number and identifier');
    }
    return { kind, text: this.src.slice(start, this.pos), line, col };
  }

  private scanString(line: number, col: number): Token {
    const quote = this.advance();
    const bytes: number[] = [];
    let run = '';
    const flush = (): void => {
      if (run.length > 0) {
        for (const b of utf8.encode(run)) bytes.push(b);
        run = '';
      }
    };
    for (;;) {
      if (this.pos >= this.src.length) throw this.errorAt(line, col, 'unterminated string literal');
      const c = this.ch();
      if (c === '\n') throw this.errorAt(this.line, this.col, 'string literals cannot cross line boundaries');
      if (c === quote) {
        this.advance();
        break;
      }
      if (c !== '\\') {
        run += this.advance();
        continue;
      }
      flush();
      const escLine = this.line;
      const escCol = this.col;
      this.advance();
      const e = this.ch();
      if (e in SIMPLE_ESCAPES) {
        this.advance();
        bytes.push(SIMPLE_ESCAPES[e]);
      } else if (isOctal(e)) {
        let v = 0;
        for (let i = 0; i < 3 && isOctal(this.ch()); i++) v = v * 8 + Number(this.advance());
        if (v > 0xff) throw this.errorAt(escLine, escCol, 'octal escape sequence out of range');
        bytes.push(v);
      } else if (e === 'x' || e === 'X') {
        this.advance();
        if (!isHex(this.ch())) throw this.errorAt(escLine, escCol, "expected hex digits after '\\x'");
        let v = 0;
        for (let i = 0; i < 2 && isHex(this.ch()); i++) v = v * 16 + parseInt(this.advance(), 16);
        bytes.push(v);
      } else if (e === 'u' || e === 'U') {
        this.advance();
        const n = e === 'u' ? 4 : 8;
        let hex = '';
        for (let i = 0; i < n; i++) {
          if (!isHex(this.ch()))
            throw this.errorAt(escLine, escCol, `expected ${n} hex digits after '\\${e}'`);
          hex += this.advance();
        }
        const cp = parseInt(hex, 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          throw this.errorAt(escLine, escCol, `invalid unicode code point \\${e}${hex}`);
        }
        for (const b of utf8.encode(String.fromCodePoint(cp))) bytes.push(b);
      } else {
        throw this.errorAt(escLine, escCol, 'invalid escape sequence in string literal');
      }
    }
    flush();
    const value = Uint8Array.from(bytes);
    return { kind: 'string', text: new TextDecoder().decode(value), line, col, bytes: value };
  }
}
