/**
 * The `local` response cache: a byte-bounded LRU in this process, shared by every model that enables the
 * cache (Triton's local_cache). Each entry is kept as its encoded bytes (codec.ts) and counted by them, so
 * the bound is the real memory of the stored tensors plus a small header, plus the key. An entry larger
 * than the whole cache is not stored; a new entry evicts least-recently-used ones until it fits.
 */
import type { Tensor } from '../../common/tensor.js';
import { decodeEntry, encodeEntry, type CachedResponse } from './codec.js';
import type { CacheKey } from './key.js';
import type { CacheMetrics, InsertOutcome, ResponseCache } from './response-cache.js';

interface OutputLayout {
  readonly name: string;
  readonly datatype: Tensor['datatype'];
  readonly shape: readonly number[];
  readonly length: number;
}

interface Entry {
  readonly bytes: Buffer;
  /** What the entry costs against the bound: its bytes and its key. */
  readonly cost: number;
  /** The entry's header, read once when stored: each output's name, datatype, shape and byte length. */
  readonly layout: readonly OutputLayout[];
  readonly parameters: CachedResponse['parameters'];
  /** Where the tensor bytes sit in `bytes`. */
  readonly dataStart: number;
  readonly dataEnd: number;
}

/**
 * A hit's response: one copy of the entry's tensor bytes, cut into the outputs, so whatever a consumer does
 * with the tensors cannot change what the cache holds. The header was parsed once, when stored.
 */
function handOut(entry: Entry): CachedResponse {
  const data = Buffer.from(entry.bytes.subarray(entry.dataStart, entry.dataEnd));
  let offset = 0;
  const outputs: Tensor[] = entry.layout.map((t) => {
    const view = data.subarray(offset, offset + t.length);
    offset += t.length;
    return { name: t.name, datatype: t.datatype, shape: t.shape, data: view };
  });
  return { outputs, parameters: { ...entry.parameters } };
}

export class LocalResponseCache implements ResponseCache {
  readonly kind = 'local' as const;
  /** Insertion order is recency order: a hit moves its entry to the end, eviction takes from the front. */
  private readonly entries = new Map<string, Entry>();
  private used = 0;
  private lookups = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;
  private errors = 0;
  private lookupNs = 0;
  private insertNs = 0;

  constructor(readonly capacityBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }

  lookup(key: CacheKey): CachedResponse | undefined {
    const start = process.hrtime.bigint();
    this.lookups++;
    const entry = this.entries.get(key.hex);
    let found: CachedResponse | undefined;
    if (entry !== undefined) {
      this.entries.delete(key.hex);
      this.entries.set(key.hex, entry);
      found = handOut(entry);
    }
    if (found) this.hits++;
    else this.misses++;
    this.lookupNs += Number(process.hrtime.bigint() - start);
    return found;
  }

  insert(key: CacheKey, response: CachedResponse): InsertOutcome {
    const start = process.hrtime.bigint();
    try {
      return this.store(key, response);
    } finally {
      this.insertNs += Number(process.hrtime.bigint() - start);
    }
  }

  private store(key: CacheKey, response: CachedResponse): InsertOutcome {
    let bytes = 0;
    for (const t of response.outputs) bytes += t.data.length;
    // Refused before encoding: a response larger than the cache costs no copy.
    if (bytes + key.hex.length > this.capacityBytes) return 'too-large';
    const encoded = encodeEntry(key.digest, response);
    const cost = encoded.length + key.hex.length;
    if (cost > this.capacityBytes) return 'too-large';
    const decoded = decodeEntry(key.digest, encoded, false);
    if (!decoded.ok) {
      // Cannot happen for bytes just encoded; counted and not stored rather than served wrong.
      this.errors++;
      return 'error';
    }
    const outputs = decoded.response.outputs;
    const dataStart = encoded.length - 4 - outputs.reduce((n, t) => n + t.data.length, 0);
    const previous = this.entries.get(key.hex);
    if (previous !== undefined) this.remove(key.hex, previous);
    while (this.used + cost > this.capacityBytes) {
      const oldest = this.entries.entries().next().value as [string, Entry];
      this.remove(oldest[0], oldest[1]);
      this.evictions++;
    }
    this.entries.set(key.hex, {
      bytes: encoded,
      cost,
      layout: outputs.map((t) => ({
        name: t.name,
        datatype: t.datatype,
        shape: t.shape,
        length: t.data.length,
      })),
      parameters: decoded.response.parameters,
      dataStart,
      dataEnd: encoded.length - 4,
    });
    this.used += cost;
    return 'stored';
  }

  private remove(hex: string, entry: Entry): void {
    this.entries.delete(hex);
    this.used -= entry.cost;
  }

  metrics(): CacheMetrics {
    return {
      kind: 'local',
      lookups: this.lookups,
      hits: this.hits,
      misses: this.misses,
      lookupNs: this.lookupNs,
      insertNs: this.insertNs,
      errors: this.errors,
      entries: this.entries.size,
      evictions: this.evictions,
      utilization: this.used / this.capacityBytes,
    };
  }

  close(): Promise<void> {
    this.entries.clear();
    this.used = 0;
    return Promise.resolve();
  }
}
