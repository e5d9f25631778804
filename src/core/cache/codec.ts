/**
 * The byte form of one cached response: what the Redis cache stores as a value and what the local cache
 * keeps (and counts) per entry. Decoding trusts nothing: a value from Redis may be garbage, truncated, or
 * another key's value, and each of those decodes to a reason (treated as a miss), never to a response.
 *
 * Layout (little-endian):
 *   0   'NRC1'                 magic and format version
 *   4   key digest (32 bytes)  the value belongs to this key only
 *   36  u32 header length H
 *   40  header (H bytes)       JSON: {"o": [[name, datatype, shape, byteLength], ...], "p": [[key, type, value], ...]}
 *   40+H tensor bytes          the outputs' bytes, one after the other
 *   end-4 u32 CRC-32           of everything before it
 */
import { crc32 } from 'node:zlib';
import { isDataType, type DataType } from '../../common/datatype.js';
import { countBytesElements, expectedByteSize, type Tensor } from '../../common/tensor.js';
import type { ParameterValue } from '../types.js';

export interface CachedResponse {
  readonly outputs: readonly Tensor[];
  readonly parameters: Readonly<Record<string, ParameterValue>>;
}

const MAGIC = Buffer.from('NRC1', 'latin1');
const DIGEST_BYTES = 32;
const FIXED = MAGIC.length + DIGEST_BYTES + 4;
const TRAILER = 4;
/** A header beyond this is not one this code wrote. */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

type EncodedParameter =
  [string, 's', string] | [string, 'n', number] | [string, 'b', boolean] | [string, 'i', string];

function encodeParameters(p: Readonly<Record<string, ParameterValue>>): EncodedParameter[] {
  return Object.entries(p).map(([k, v]): EncodedParameter => {
    if (typeof v === 'string') return [k, 's', v];
    if (typeof v === 'number') return [k, 'n', v];
    if (typeof v === 'boolean') return [k, 'b', v];
    return [k, 'i', v.toString()];
  });
}

/** The entry for `response` under the key whose digest is `digest`: one allocation, one copy of each tensor. */
export function encodeEntry(digest: Buffer, response: CachedResponse): Buffer {
  let dataBytes = 0;
  for (const t of response.outputs) dataBytes += t.data.length;
  const header = Buffer.from(
    JSON.stringify({
      o: response.outputs.map((t) => [t.name, t.datatype, t.shape, t.data.length]),
      p: encodeParameters(response.parameters),
    }),
    'utf8',
  );
  const out = Buffer.allocUnsafe(FIXED + header.length + dataBytes + TRAILER);
  MAGIC.copy(out, 0);
  digest.copy(out, MAGIC.length, 0, DIGEST_BYTES);
  out.writeUInt32LE(header.length, MAGIC.length + DIGEST_BYTES);
  header.copy(out, FIXED);
  let off = FIXED + header.length;
  for (const t of response.outputs) {
    out.set(t.data, off);
    off += t.data.length;
  }
  out.writeUInt32LE(crc32(out.subarray(0, off)), off);
  return out;
}

/** What decoding found: the response, or why the bytes are not a usable entry for this key. */
export type DecodeResult =
  { readonly ok: true; readonly response: CachedResponse } | { readonly ok: false; readonly reason: string };

const bad = (reason: string): DecodeResult => ({ ok: false, reason });

function isDims(v: unknown): v is number[] {
  return Array.isArray(v) && v.length <= 64 && v.every((d) => Number.isSafeInteger(d) && (d as number) >= 0);
}

function decodeParameters(raw: unknown): Record<string, ParameterValue> | undefined {
  if (!Array.isArray(raw)) return undefined;
  const out: Record<string, ParameterValue> = {};
  for (const p of raw as unknown[]) {
    if (!Array.isArray(p) || p.length !== 3 || typeof p[0] !== 'string') return undefined;
    const [k, type, v] = p as [string, unknown, unknown];
    if (type === 's' && typeof v === 'string') out[k] = v;
    else if (type === 'n' && typeof v === 'number') out[k] = v;
    else if (type === 'b' && typeof v === 'boolean') out[k] = v;
    else if (type === 'i' && typeof v === 'string' && /^-?\d{1,20}$/.test(v)) out[k] = BigInt(v);
    else return undefined;
  }
  return out;
}

/**
 * Reads an entry back for the key with `digest`. With `verify` (values from outside the process) the
 * CRC is checked too; the local cache, which wrote the bytes itself, skips it. The tensors are views over
 * one fresh copy of the tensor bytes, so a consumer that writes into them cannot change the stored entry.
 */
export function decodeEntry(digest: Buffer, bytes: Buffer, verify: boolean): DecodeResult {
  if (bytes.length < FIXED + TRAILER) return bad(`${bytes.length} bytes is too short for an entry`);
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) return bad('not a Nereid cache entry (magic)');
  if (!bytes.subarray(MAGIC.length, MAGIC.length + DIGEST_BYTES).equals(digest.subarray(0, DIGEST_BYTES))) {
    return bad('the entry belongs to another key');
  }
  const headerBytes = bytes.readUInt32LE(MAGIC.length + DIGEST_BYTES);
  if (headerBytes > MAX_HEADER_BYTES || FIXED + headerBytes + TRAILER > bytes.length) {
    return bad(`header length ${headerBytes} does not fit the entry`);
  }
  const end = bytes.length - TRAILER;
  if (verify && crc32(bytes.subarray(0, end)) !== bytes.readUInt32LE(end)) return bad('checksum mismatch');
  let header: unknown;
  try {
    header = JSON.parse(bytes.toString('utf8', FIXED, FIXED + headerBytes));
  } catch {
    return bad('header is not JSON');
  }
  if (typeof header !== 'object' || header === null || !Array.isArray((header as { o?: unknown }).o)) {
    return bad('header has no outputs');
  }
  const parameters = decodeParameters((header as { p?: unknown }).p);
  if (!parameters) return bad('malformed parameters');
  const specs: [string, DataType, number[], number][] = [];
  let total = 0;
  for (const o of (header as { o: unknown[] }).o) {
    if (!Array.isArray(o) || o.length !== 4) return bad('malformed output');
    const [name, datatype, shape, byteLength] = o as unknown[];
    if (typeof name !== 'string' || typeof datatype !== 'string' || !isDataType(datatype)) {
      return bad('malformed output name or datatype');
    }
    if (!isDims(shape) || !Number.isSafeInteger(byteLength) || (byteLength as number) < 0) {
      return bad(`malformed shape or size of output '${name}'`);
    }
    let expected: number | undefined;
    try {
      expected = expectedByteSize(datatype, shape);
    } catch {
      return bad(`shape of output '${name}' is too large`);
    }
    if (expected !== undefined && expected !== byteLength)
      return bad(`output '${name}' has the wrong byte size`);
    total += byteLength as number;
    specs.push([name, datatype, shape, byteLength as number]);
  }
  if (FIXED + headerBytes + total !== end) return bad('tensor bytes do not match the header');
  // The one copy a hit makes: the stored bytes stay the cache's own.
  const data = Buffer.from(bytes.subarray(FIXED + headerBytes, end));
  const outputs: Tensor[] = [];
  let off = 0;
  for (const [name, datatype, shape, byteLength] of specs) {
    const view = data.subarray(off, off + byteLength);
    off += byteLength;
    if (datatype === 'BYTES') {
      let count: number;
      try {
        count = countBytesElements(view);
      } catch {
        return bad(`output '${name}' has malformed BYTES elements`);
      }
      if (count !== shape.reduce((a, d) => a * d, 1))
        return bad(`output '${name}' has the wrong element count`);
    }
    outputs.push({ name, datatype, shape, data: view });
  }
  return { ok: true, response: { outputs, parameters } };
}

/** The fixed bytes an entry adds to its tensors (for sizing tests and docs). */
export const ENTRY_OVERHEAD_BYTES = FIXED + TRAILER;
