/**
 * A bounded walk over a GGUF file's header before node-llama-cpp sees it: magic, version, the metadata
 * key/value section and the tensor descriptions, every count and length checked against what the file
 * can hold. A model file is hostile input, and a header whose counts point past the end of the file
 * (corrupt, or truncated inside its metadata) can otherwise keep the loader reading for ever. What this
 * returns is a reason the file is unusable, or undefined; llama.cpp still checks the tensor data itself.
 *
 * The walk also keeps the scalar metadata (architecture, layer and head counts), from which
 * kvCacheBytes() estimates what a context of N tokens x S sequences costs before llama.cpp allocates it:
 * node-llama-cpp's own estimate is slow for large requests and did not stop one that the kernel's OOM
 * killer then ended (a model.json with a 16M-token context), so an impossible context is refused first.
 *
 * From the same walk, chatTemplateOf() takes the chat template the file carries (`tokenizer.chat_template`)
 * with the text of its BOS and EOS tokens (`tokenizer.ggml.bos_token_id` / `eos_token_id` into
 * `tokenizer.ggml.tokens`), which the backend publishes for the OpenAI frontend (ModelHandle.chatTemplate).
 * A template that is not a string or is over MAX_TEMPLATE_CHARS, or a BOS / EOS text over MAX_TOKEN_CHARS,
 * is not used, with the reason.
 */
import { open } from 'node:fs/promises';

/** Counts past these are not a real model's (llama.cpp's own limits are of this order). */
const MAX_KV = 1 << 20;
const MAX_TENSORS = 1 << 20;
const MAX_DIMS = 4;
/** Largest header read into memory: a 256k-token vocabulary takes a few tens of MB. */
const MAX_HEADER_BYTES = 512 * 1024 * 1024;
/** Longest chat template used (as the OpenAI frontend's limit on a chat_template.jinja). */
export const MAX_TEMPLATE_CHARS = 1 << 20;
/** Longest BOS / EOS token text passed to a template (a real vocabulary's are a few characters). */
export const MAX_TOKEN_CHARS = 1 << 10;

const TEMPLATE_KEY = 'tokenizer.chat_template';
const TOKENS_KEY = 'tokenizer.ggml.tokens';

/** Bytes of one element of each scalar metadata type (GGUF value types 0..12; 8 = string, 9 = array). */
const SCALAR_SIZE: Readonly<Record<number, number>> = {
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

class NeedMore extends Error {}
class Corrupt extends Error {}

/** Scalar metadata values by key (numbers, bools as 0/1, strings); arrays are left out. */
export type GgufMetadata = ReadonlyMap<string, number | string>;

/** What a sound header holds. */
export interface GgufHeader {
  readonly metadata: GgufMetadata;
  readonly size: number;
  /** The metadata value type of each key (GGUF value types 0..12), arrays included. */
  readonly types: ReadonlyMap<string, number>;
  /** The text of the BOS and EOS tokens (`tokenizer.ggml.{bos,eos}_token_id` in `tokenizer.ggml.tokens`). */
  readonly specialTokens: { readonly bos?: string; readonly eos?: string };
}

/** A GGUF's chat template with the text of its BOS and EOS tokens ('' when it has none). */
export interface GgufChatTemplate {
  readonly text: string;
  readonly bosToken: string;
  readonly eosToken: string;
}

class Cursor {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly fileSize: number,
  ) {}

  need(n: number): void {
    if (this.pos + n > this.fileSize) throw new Corrupt('the header runs past the end of the file');
    if (this.pos + n > this.buf.length) throw new NeedMore();
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  u64(): number {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    // Anything this large cannot fit in the file anyway.
    return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
  }

  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  /** Fails unless `count` items of at least `min` bytes each fit in the rest of the file. */
  fits(count: number, min: number, what: string): void {
    if (count * min > this.fileSize - this.pos)
      throw new Corrupt(`${what} (${count}) cannot fit in the file`);
  }

  string(): void {
    const len = this.u64();
    this.fits(len, 1, 'a string length');
    this.skip(len);
  }

  text(): string {
    const start = this.pos + 8;
    this.string();
    return this.buf.toString('utf8', start, this.pos);
  }

  /** A scalar of metadata type `type` (0..7, 10..12) as a number. */
  scalar(type: number): number {
    const size = SCALAR_SIZE[type];
    this.need(size);
    const b = this.buf;
    const at = this.pos;
    this.pos += size;
    switch (type) {
      case 0:
      case 7:
        return b.readUInt8(at);
      case 1:
        return b.readInt8(at);
      case 2:
        return b.readUInt16LE(at);
      case 3:
        return b.readInt16LE(at);
      case 4:
        return b.readUInt32LE(at);
      case 5:
        return b.readInt32LE(at);
      case 6:
        return b.readFloatLE(at);
      case 10:
        return Number(b.readBigUInt64LE(at));
      case 11:
        return Number(b.readBigInt64LE(at));
      default:
        return b.readDoubleLE(at);
    }
  }
}

/** One top-level metadata value: scalars and strings are returned, arrays skipped. */
function topValue(c: Cursor, type: number): number | string | undefined {
  if (SCALAR_SIZE[type] !== undefined) return c.scalar(type);
  if (type === 8) return c.text();
  value(c, type, 0);
  return undefined;
}

function value(c: Cursor, type: number, depth: number): void {
  const size = SCALAR_SIZE[type];
  if (size !== undefined) return c.skip(size);
  if (type === 8) return c.string();
  if (type !== 9) throw new Corrupt(`unknown metadata value type ${type}`);
  if (depth > 2) throw new Corrupt('metadata arrays nest too deeply');
  const itemType = c.u32();
  const count = c.u64();
  const itemSize = SCALAR_SIZE[itemType];
  if (itemSize !== undefined) {
    c.fits(count, itemSize, 'an array length');
    return c.skip(count * itemSize);
  }
  c.fits(count, itemType === 8 ? 8 : 12, 'an array length');
  for (let i = 0; i < count; i++) value(c, itemType, depth + 1);
}

function walk(buf: Buffer, fileSize: number): Omit<GgufHeader, 'size'> {
  const c = new Cursor(buf, fileSize);
  const metadata = new Map<string, number | string>();
  const types = new Map<string, number>();
  let tokensAt: number | undefined;
  c.need(4);
  if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Corrupt('it does not start with the GGUF magic');
  c.skip(4);
  const version = c.u32();
  if (version !== 2 && version !== 3) throw new Corrupt(`GGUF version ${version} is not supported (2 or 3)`);
  const tensors = c.u64();
  const kvs = c.u64();
  if (tensors > MAX_TENSORS) throw new Corrupt(`it claims ${tensors} tensors`);
  if (kvs > MAX_KV) throw new Corrupt(`it claims ${kvs} metadata entries`);
  c.fits(kvs, 13, 'the metadata entry count');
  for (let i = 0; i < kvs; i++) {
    const key = c.text();
    const type = c.u32();
    types.set(key, type);
    const at = c.pos;
    const v = topValue(c, type);
    if (v !== undefined) metadata.set(key, v);
    else if (key === TOKENS_KEY) tokensAt = at;
  }
  const specialTokens: { bos?: string; eos?: string } = {};
  if (tokensAt !== undefined) {
    for (const which of ['bos', 'eos'] as const) {
      const text = tokenText(buf, fileSize, tokensAt, metadata.get(`tokenizer.ggml.${which}_token_id`));
      if (text !== undefined) specialTokens[which] = text;
    }
  }
  c.fits(tensors, 32, 'the tensor count');
  for (let i = 0; i < tensors; i++) {
    c.string();
    const dims = c.u32();
    if (dims < 1 || dims > MAX_DIMS) throw new Corrupt(`a tensor has ${dims} dimensions`);
    c.skip(8 * dims + 4);
    if (c.u64() > fileSize) throw new Corrupt('a tensor starts past the end of the file');
  }
  return { metadata, types, specialTokens };
}

/**
 * The text of token `id` in the array at `at` (already walked, so sound), when it is an array of strings
 * that long; found by stepping over the strings before it.
 */
function tokenText(buf: Buffer, fileSize: number, at: number, id: unknown): string | undefined {
  const c = new Cursor(buf, fileSize);
  c.pos = at;
  if (c.u32() !== 8) return undefined;
  const count = c.u64();
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= count) return undefined;
  for (let i = 0; i < id; i++) c.string();
  return c.text();
}

/** Why `file` is not a usable GGUF file, or undefined when its header is sound. */
export async function ggufProblem(file: string): Promise<string | undefined> {
  const header = await ggufHeader(file);
  return 'problem' in header ? header.problem : undefined;
}

/**
 * Bytes of the KV cache llama.cpp allocates for `tokens` tokens in all (context x sequences) at its
 * default F16 cache type: per layer and token, the keys and values of every KV head. Undefined when the
 * metadata lacks the counts (an architecture without attention layers of this shape).
 */
export function kvCacheBytes(metadata: GgufMetadata, tokens: number): number | undefined {
  const arch = metadata.get('general.architecture');
  if (typeof arch !== 'string') return undefined;
  const num = (key: string): number | undefined => {
    const v = metadata.get(`${arch}.${key}`);
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
  };
  const layers = num('block_count');
  const width = num('embedding_length');
  const heads = num('attention.head_count');
  if (layers === undefined || width === undefined || heads === undefined) return undefined;
  const kvHeads = num('attention.head_count_kv') ?? heads;
  const keyLength = num('attention.key_length') ?? width / heads;
  const valueLength = num('attention.value_length') ?? width / heads;
  return layers * tokens * kvHeads * (keyLength + valueLength) * 2;
}

/**
 * The chat template in a sound header: undefined when it has none, `{ skipped }` with the reason when the
 * one it has cannot be used (not a string, too long, a BOS / EOS token text too long).
 */
export function chatTemplateOf(
  header: GgufHeader,
): GgufChatTemplate | { readonly skipped: string } | undefined {
  const type = header.types.get(TEMPLATE_KEY);
  if (type === undefined) return undefined;
  const text = header.metadata.get(TEMPLATE_KEY);
  if (typeof text !== 'string') {
    return { skipped: `its ${TEMPLATE_KEY} is not a string (GGUF value type ${type})` };
  }
  if (text.length > MAX_TEMPLATE_CHARS) {
    return { skipped: `its ${TEMPLATE_KEY} is ${text.length} characters, over ${MAX_TEMPLATE_CHARS}` };
  }
  const token = (which: 'bos' | 'eos'): string | { readonly skipped: string } => {
    const t = header.specialTokens[which] ?? '';
    return t.length > MAX_TOKEN_CHARS
      ? {
          skipped: `its ${which.toUpperCase()} token's text is ${t.length} characters, over ${MAX_TOKEN_CHARS}`,
        }
      : t;
  };
  const bosToken = token('bos');
  if (typeof bosToken !== 'string') return bosToken;
  const eosToken = token('eos');
  if (typeof eosToken !== 'string') return eosToken;
  return { text, bosToken, eosToken };
}

/** The file's header, or why it is not a usable GGUF file. */
export async function ggufHeader(file: string): Promise<GgufHeader | { readonly problem: string }> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    let length = Math.min(size, 1 << 20);
    for (;;) {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buf, 0, length, 0);
      try {
        return { ...walk(buf.subarray(0, bytesRead), size), size };
      } catch (err) {
        if (err instanceof Corrupt) return { problem: err.message };
        if (!(err instanceof NeedMore)) throw err;
        if (length >= Math.min(size, MAX_HEADER_BYTES))
          return { problem: `its header is larger than ${MAX_HEADER_BYTES} bytes` };
        length = Math.min(size, MAX_HEADER_BYTES, length * 4);
      }
    }
  } finally {
    await handle.close();
  }
}
