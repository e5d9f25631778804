/**
 * The cache key of a request: a SHA-256 digest of the model name and version, every input's name,
 * datatype, shape (after the config's reshape, as the model sees it) and bytes, in input-name order, and
 * the outputs the request asked for with their classification counts, in request order (the response
 * lists them that way). Never the request id or other parameters, as in Triton.
 *
 * Why SHA-256 from node:crypto rather than a faster non-cryptographic hash (Triton uses a 64-bit one):
 * with a shared cache, a crafted request whose key collides with another client's request could plant
 * its answer for that client; a cryptographic digest makes that infeasible. It costs a few µs for a small
 * request and runs at hundreds of MB/s for large ones (docs/response-cache.md has the measurements).
 */
import * as crypto from 'node:crypto';
import type { PreparedRequest } from '../inference.js';

export interface CacheKey {
  /** 32 bytes. */
  readonly digest: Buffer;
  /** The digest in hex: the local cache's map key, and the Redis key after its prefix. */
  readonly hex: string;
}

/** Bumped when what the key covers changes, so old Redis entries are never read with a new meaning. */
const KEY_DOMAIN = 'nereid-response-cache-key-v1';
/** Up to this many tensor bytes, the key is hashed in one call over a copy; beyond, streamed. */
const ONE_SHOT_BYTES = 64 * 1024;

export function requestCacheKey(model: string, version: string, request: PreparedRequest): CacheKey {
  const names = [...request.inputs.keys()].sort();
  const tensors = names.map((name) => request.inputs.get(name)!);
  // Everything but the tensor bytes, as one JSON text (unambiguous: strings are quoted and escaped), then
  // the bytes in the same order; each input's byte length is in the text, so no two splits of the same
  // bytes between inputs hash alike. One string and one update keep a small request's key cheap.
  const meta = JSON.stringify([
    KEY_DOMAIN,
    model,
    version,
    tensors.map((t, i) => [names[i], t.datatype, t.shape, t.data.length]),
    request.outputs.map((o) => [o.name, o.classification]),
  ]);
  let bytes = 0;
  for (const t of tensors) bytes += t.data.length;
  let hex: string;
  // crypto.hash() arrived in Node 20.12; older 20.x releases take the streaming path.
  if (bytes <= ONE_SHOT_BYTES && typeof crypto.hash === 'function') {
    // Small requests: one copy and node:crypto's one-shot hash, several times cheaper than a Hash object.
    hex = crypto.hash(
      'sha256',
      Buffer.concat([Buffer.from(meta, 'utf8'), ...tensors.map((t) => t.data)]),
      'hex',
    );
  } else {
    const hash = crypto.createHash('sha256').update(meta, 'utf8');
    for (const t of tensors) hash.update(t.data);
    hex = hash.digest('hex');
  }
  return { digest: Buffer.from(hex, 'hex'), hex };
}
