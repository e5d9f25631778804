/**
 * The cache key of a request: a SHA-256 digest of the model name and version, every input's name,
 * datatype, shape (after the config's reshape, as the model sees it) and bytes, in input-name order, and
 * the outputs the request asked for with their classification counts, in request order (the response
 * lists them that way). Never the request id or other parameters, as in Triton.
 *
 * Why SHA-256 from node:crypto rather than a faster non-cryptographic hash (Triton uses a 64-bit one):
 * with a shared cache, a crafted request whose key collides with another client's request could plant
 * its answer for that client; a cryptographic digest makes that infeasible. It costs 1-2 µs for a small
 * request and runs at hundreds of MB/s for large ones (docs/response-cache.md has the measurements).
 */
import { createHash } from 'node:crypto';
import type { PreparedRequest } from '../inference.js';

export interface CacheKey {
  /** 32 bytes. */
  readonly digest: Buffer;
  /** The digest in hex: the local cache's map key, and the Redis key after its prefix. */
  readonly hex: string;
}

/** Bumped when what the key covers changes, so old Redis entries are never read with a new meaning. */
const KEY_DOMAIN = 'nereid-response-cache-key-v1';

function field(parts: Buffer[], s: string): void {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.allocUnsafe(4);
  len.writeUInt32LE(b.length, 0);
  parts.push(len, b);
}

function number(parts: Buffer[], n: number): void {
  const b = Buffer.allocUnsafe(8);
  b.writeDoubleLE(n, 0);
  parts.push(b);
}

export function requestCacheKey(model: string, version: string, request: PreparedRequest): CacheKey {
  const hash = createHash('sha256');
  const head: Buffer[] = [];
  field(head, KEY_DOMAIN);
  field(head, model);
  field(head, version);
  number(head, request.inputs.size);
  hash.update(Buffer.concat(head));
  const names = [...request.inputs.keys()].sort();
  for (const name of names) {
    const t = request.inputs.get(name)!;
    const parts: Buffer[] = [];
    field(parts, name);
    field(parts, t.datatype);
    number(parts, t.shape.length);
    for (const d of t.shape) number(parts, d);
    number(parts, t.data.length);
    hash.update(Buffer.concat(parts));
    hash.update(t.data);
  }
  const tail: Buffer[] = [];
  number(tail, request.outputs.length);
  for (const o of request.outputs) {
    field(tail, o.name);
    number(tail, o.classification);
  }
  hash.update(Buffer.concat(tail));
  const digest = hash.digest();
  return { digest, hex: digest.toString('hex') };
}
