/**
 * The core's parts as the composition root (compose/) wires them: the server, the repository manager and
 * its loader, statistics, caches, storage, shared memory, rate limiting and tracing options, and the
 * parsers for the flags that configure them. Frontends see none of this (they get ./index.ts); their
 * tests may build real statistics from here in place of a model version.
 */
export { InferenceServer } from './server.js';
export { setResponseLimits } from './response-limits.js';
export type { VersionLookup } from './ensemble/index.js';
export { InstanceBudget, defaultInstanceLimits } from './model/instance-budget.js';
export { ModelLoader } from './loader.js';
export { ModelRepositoryManager, type LoadErrorStatus, type ModelControlMode } from './repository/index.js';
export { parseSize } from './repository/eviction.js';
export { RateLimiter } from './scheduling/rate-limiter.js';
export { SystemSharedMemoryManager } from './shm/index.js';
export { ModelStats } from './stats/model-stats.js';
export { RequestRecord } from './stats/request-record.js';
export { StatsRegistry } from './stats/registry.js';
export {
  createResponseCache,
  describeCacheConfig,
  parseCacheSetting,
  resolveCacheConfig,
  type CacheSetting,
  type ResponseCache,
  type ResponseCacheConfig,
} from './cache/index.js';
export { matchCredential, parseCredentialFile, type CloudCredentials } from './storage/credentials.js';
export { isObjectStoreUrl } from './storage/location.js';
export { RepositoryStorage, type StorageOptions } from './storage/storage.js';
export { DEFAULT_TRACE_OPTIONS, type TraceOptions } from './trace/options.js';
export type { TraceMode } from './trace/setting.js';
