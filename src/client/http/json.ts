/**
 * JSON for the HTTP client. Writing: JSON.stringify cannot write bigints and turns NaN into null, while
 * Triton reads exact 64-bit integers and the NaN / Infinity literals, so request headers are written here.
 * Reading: JSON.parse first; the server's exact parser (which keeps integers beyond 2^53 as bigint and
 * accepts Triton's non-finite literals) when JSON.parse fails or may have rounded 64-bit tensor data.
 */
import { parseJsonExact, type JsonIn } from '../../common/json-exact.js';

export type JsonOut =
  | null
  | undefined
  | boolean
  | number
  | bigint
  | string
  | readonly JsonOut[]
  | { readonly [key: string]: JsonOut };

function numberText(v: number): string {
  if (Number.isFinite(v)) return String(v);
  return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
}

function write(v: JsonOut, parts: string[]): void {
  switch (typeof v) {
    case 'string':
      parts.push(JSON.stringify(v));
      return;
    case 'number':
      parts.push(numberText(v));
      return;
    case 'bigint':
      parts.push(v.toString());
      return;
    case 'boolean':
      parts.push(v ? 'true' : 'false');
      return;
    case 'undefined':
      parts.push('null');
      return;
  }
  if (v === null) {
    parts.push('null');
  } else if (Array.isArray(v)) {
    const arr = v as readonly JsonOut[];
    parts.push('[');
    for (let i = 0; i < arr.length; i++) {
      if (i > 0) parts.push(',');
      write(arr[i], parts);
    }
    parts.push(']');
  } else {
    const obj = v as { readonly [key: string]: JsonOut };
    parts.push('{');
    let first = true;
    for (const key of Object.keys(obj)) {
      const x = obj[key];
      if (x === undefined) continue;
      if (!first) parts.push(',');
      first = false;
      parts.push(JSON.stringify(key), ':');
      write(x, parts);
    }
    parts.push('}');
  }
}

/** JSON text with exact bigints and NaN / Infinity literals; undefined members are left out. */
export function toJsonText(v: JsonOut): string {
  const parts: string[] = [];
  write(v, parts);
  return parts.join('');
}

/** Parses server JSON: JSON.parse, or the exact parser when JSON.parse refuses the text. */
export function parseServerJson(text: string): JsonIn {
  try {
    return JSON.parse(text) as JsonIn;
  } catch {
    return parseJsonExact(text);
  }
}

export { parseJsonExact, type JsonIn };
