/**
 * A bounded walk over a GGUF file's header before node-llama-cpp sees it: magic, version, the metadata
 * key/value section and the tensor descriptions, every count and length checked against what the file
 * can hold. A model file is hostile input, and a header whose counts point past the end of the file
 * (corrupt, or truncated inside its metadata) can otherwise keep the loader reading for ever. What this
 * returns is a reason the file is unusable, or undefined; llama.cpp still checks the tensor data itself.
 */
import { open } from 'node:fs/promises';

/** Counts past these are not a real model's (llama.cpp's own limits are of this order). */
const MAX_KV = 1 << 20;
const MAX_TENSORS = 1 << 20;
const MAX_DIMS = 4;
/** Largest header read into memory: a 256k-token vocabulary takes a few tens of MB. */
const MAX_HEADER_BYTES = 512 * 1024 * 1024;

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

function walk(buf: Buffer, fileSize: number): void {
  const c = new Cursor(buf, fileSize);
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
    c.string();
    value(c, c.u32(), 0);
  }
  c.fits(tensors, 32, 'the tensor count');
  for (let i = 0; i < tensors; i++) {
    c.string();
    const dims = c.u32();
    if (dims < 1 || dims > MAX_DIMS) throw new Corrupt(`a tensor has ${dims} dimensions`);
    c.skip(8 * dims + 4);
    if (c.u64() > fileSize) throw new Corrupt('a tensor starts past the end of the file');
  }
}

/** Why `file` is not a usable GGUF file, or undefined when its header is sound. */
export async function ggufProblem(file: string): Promise<string | undefined> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    let length = Math.min(size, 1 << 20);
    for (;;) {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buf, 0, length, 0);
      try {
        walk(buf.subarray(0, bytesRead), size);
        return undefined;
      } catch (err) {
        if (err instanceof Corrupt) return err.message;
        if (!(err instanceof NeedMore)) throw err;
        if (length >= Math.min(size, MAX_HEADER_BYTES))
          return `its header is larger than ${MAX_HEADER_BYTES} bytes`;
        length = Math.min(size, MAX_HEADER_BYTES, length * 4);
      }
    }
  } finally {
    await handle.close();
  }
}
