/**
 * The response cache (docs/response-cache.md): settings (config.ts), the local and Redis implementations
 * behind one interface, and the piece a model version's request path uses (version-cache.ts).
 */
import type { Logger } from '../../common/logger.js';
import type { ResponseCacheConfig } from './config.js';
import { LocalResponseCache } from './local.js';
import type { ResponseCache } from './response-cache.js';

export {
  describeCacheConfig,
  parseCacheSetting,
  resolveCacheConfig,
  type CacheSetting,
  type ResponseCacheConfig,
} from './config.js';
export type { CacheMetrics, ResponseCache } from './response-cache.js';
export { VersionCache } from './version-cache.js';

/** Builds the configured cache; a Redis cache connects first (and fails the start when it cannot). */
export async function createResponseCache(config: ResponseCacheConfig, log: Logger): Promise<ResponseCache> {
  if (config.kind === 'local') return new LocalResponseCache(config.sizeBytes);
  // Loaded only here, so a server without a Redis cache never loads the Redis client.
  const { RedisResponseCache } = await import('./redis.js');
  return RedisResponseCache.connect(config, log);
}
