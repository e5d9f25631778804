/**
 * The chat template a GGUF file carries in its metadata (`tokenizer.chat_template`), with the text of
 * its BOS and EOS tokens (`tokenizer.ggml.bos_token_id` / `eos_token_id` into `tokenizer.ggml.tokens`),
 * read from the file's header only. The file is hostile: every length is checked against the bytes left
 * and against MAX_METADATA_BYTES, a file that is not GGUF v2/v3 has no template, and nothing past the
 * metadata (the weights) is read. Results are kept per file (path, size, mtime), so a request reads a
 * model's header once.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Most header bytes read looking for the template (a 256k-token vocabulary is ~10 MB of metadata). */
export const MAX_METADATA_BYTES = 64 * 1024 * 1024;
/** Longest template kept (as chat_template.jinja's limit). */
const MAX_TEMPLATE_CHARS = 1 << 20;

export interface GgufTemplate {
  readonly text: string;
  readonly bosToken: string;
  readonly eosToken: string;
}

class Truncated extends Error {}

/** Reads a file forward in chunks, never past `limit` bytes. */
class Cursor {
  private buf = Buffer.alloc(0);
  private at = 0;
  private fileAt = 0;

  constructor(
    private readonly fd: number,
    private readonly limit: number,
  ) {}

  private need(n: number): void {
    if (this.at + n <= this.buf.length) return;
    if (this.fileAt - (this.buf.length - this.at) + n > this.limit) throw new Truncated();
    const want = Math.max(n - (this.buf.length - this.at), 1 << 20);
    const chunk = Buffer.alloc(want);
    const got = readSync(this.fd, chunk, 0, want, this.fileAt);
    this.fileAt += got;
    this.buf = Buffer.concat([this.buf.subarray(this.at), chunk.subarray(0, got)]);
    this.at = 0;
    if (this.buf.length < n) throw new Truncated();
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return v;
  }

  u64(): number {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.at);
    this.at += 8;
    if (v > BigInt(this.limit)) throw new Truncated();
    return Number(v);
  }

  skip(n: number): void {
    while (n > 0) {
      const step = Math.min(n, 1 << 20);
      this.need(step);
      this.at += step;
      n -= step;
    }
  }

  string(keep: boolean): string {
    const n = this.u64();
    if (!keep) {
      this.skip(n);
      return '';
    }
    this.need(n);
    const s = this.buf.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }
}

/** Bytes of one scalar of each GGUF value type; 8 = string, 9 = array. */
const SCALAR_BYTES: Readonly<Record<number, number>> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};

function integer(c: Cursor, type: number): number | undefined {
  switch (type) {
    case 4:
    case 5:
      return c.u32();
    case 10:
    case 11:
      return c.u64();
    default:
      skipValue(c, type);
      return undefined;
  }
}

function skipValue(c: Cursor, type: number): void {
  if (type === 8) {
    c.string(false);
    return;
  }
  if (type === 9) {
    const item = c.u32();
    const count = c.u64();
    if (item === 8) for (let i = 0; i < count; i++) c.string(false);
    else if (item === 9)
      throw new Truncated(); // nested arrays: not in any tokenizer's metadata
    else c.skip(count * (SCALAR_BYTES[item] ?? Infinity));
    return;
  }
  const n = SCALAR_BYTES[type];
  if (n === undefined) throw new Truncated();
  c.skip(n);
}

function readTemplate(file: string): GgufTemplate | undefined {
  const fd = openSync(file, 'r');
  try {
    const c = new Cursor(fd, MAX_METADATA_BYTES);
    if (c.u32() !== 0x46554747) return undefined; // 'GGUF'
    const version = c.u32();
    if (version !== 2 && version !== 3) return undefined;
    c.u64(); // tensors
    const kvs = c.u64();
    let text: string | undefined;
    let tokens: string[] | undefined;
    let bos: number | undefined;
    let eos: number | undefined;
    for (let i = 0; i < kvs; i++) {
      const key = c.string(true);
      const type = c.u32();
      if (key === 'tokenizer.chat_template' && type === 8) text = c.string(true);
      else if (key === 'tokenizer.ggml.bos_token_id') bos = integer(c, type);
      else if (key === 'tokenizer.ggml.eos_token_id') eos = integer(c, type);
      else if (key === 'tokenizer.ggml.tokens' && type === 9) {
        const item = c.u32();
        const count = c.u64();
        if (item !== 8) {
          c.skip(count * (SCALAR_BYTES[item] ?? Infinity));
          continue;
        }
        tokens = [];
        for (let t = 0; t < count; t++) tokens.push(c.string(true));
      } else skipValue(c, type);
    }
    if (text === undefined || text.length > MAX_TEMPLATE_CHARS) return undefined;
    const at = (id: number | undefined): string => (id === undefined ? '' : (tokens?.[id] ?? ''));
    return { text, bosToken: at(bos), eosToken: at(eos) };
  } catch (err) {
    if (err instanceof Truncated) return undefined;
    throw err;
  } finally {
    closeSync(fd);
  }
}

const cache = new Map<string, { readonly stamp: string; readonly value: GgufTemplate | undefined }>();
const MAX_CACHED = 256;

/** The template in `file`'s metadata, or undefined (no such file, not GGUF, or no template). */
export function ggufChatTemplate(file: string): GgufTemplate | undefined {
  let stamp: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) return undefined;
    stamp = `${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
  const hit = cache.get(file);
  if (hit?.stamp === stamp) return hit.value;
  const value = readTemplate(file);
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(file, { stamp, value });
  return value;
}
