/**
 * The response cache's interface: what the core's request path (model-cache.ts) needs from a cache
 * implementation (local.ts: an in-process LRU; redis.ts: a Redis server shared by any number of Nereid
 * processes). A cache never fails a request: an implementation answers a lookup it could not do as a miss
 * and an insert it could not do as not stored, and counts the error.
 */
import type { CachedResponse } from './codec.js';
import type { CacheKey } from './key.js';

export type { CachedResponse };

/** Why an insert did not store the response (the request was answered all the same). */
export type InsertOutcome = 'stored' | 'too-large' | 'error';

/** The cache-wide counters behind Triton's nv_cache_* metrics (local_cache's set) and Nereid's own. */
export interface CacheMetrics {
  readonly kind: 'local' | 'redis';
  readonly lookups: number;
  readonly hits: number;
  readonly misses: number;
  /** Cumulative lookup and insert time, in nanoseconds. */
  readonly lookupNs: number;
  readonly insertNs: number;
  /** Lookups and inserts that failed (Redis down, a value that did not decode): answered as misses. */
  readonly errors: number;
  /** Local only: entries held, entries evicted to make room, bytes held / capacity. */
  readonly entries?: number;
  readonly evictions?: number;
  readonly utilization?: number;
  /** Redis only: 1 while connected. */
  readonly connected?: boolean;
}

export interface ResponseCache {
  readonly kind: 'local' | 'redis';
  /** The response stored under `key`, or undefined (a miss, or an error counted as one). Never rejects. */
  lookup(key: CacheKey): CachedResponse | undefined | Promise<CachedResponse | undefined>;
  /** Stores `response` under `key`, replacing what was there. Never rejects. */
  insert(key: CacheKey, response: CachedResponse): InsertOutcome | Promise<InsertOutcome>;
  metrics(): CacheMetrics;
  /** Lets go of memory and connections; lookups afterwards miss. */
  close(): Promise<void>;
}
