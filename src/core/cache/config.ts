/**
 * The response cache's settings, read from what `--cache-config <cache>,<key>=<value>` (or the deprecated
 * `--response-cache-byte-size`) collected: which implementation (`local` or `redis`) and its keys, checked
 * once at start-up and turned into a typed, frozen ResponseCacheConfig. Key names and meanings follow
 * Triton's local_cache and redis_cache implementations; the Redis `ttl_ms` key is Nereid's own.
 */
import os from 'node:os';
import { invalidArg } from '../../common/errors.js';

/** One `--cache-config <cache>,<key>=<value>` occurrence. */
export interface CacheSetting {
  readonly cache: string;
  readonly key: string;
  readonly value: string;
}

export interface LocalCacheConfig {
  readonly kind: 'local';
  /** Bytes the cache may hold: the entries' encoded size (tensor bytes plus a small header each). */
  readonly sizeBytes: number;
}

export interface RedisTlsConfig {
  /** PEM file paths (redis_cache's `cert`, `key`, `cacert`) and a folder of CA files (`cacert_dir`). */
  readonly cert?: string;
  readonly key?: string;
  readonly cacert?: string;
  readonly cacertDir?: string;
  /** Server name indication (`sni`). */
  readonly sni?: string;
}

export interface RedisCacheConfig {
  readonly kind: 'redis';
  readonly host: string;
  readonly port: number;
  /** ACL user (`user`, or TRITONCACHE_REDIS_USERNAME); undefined = Redis's `default`. */
  readonly user?: string;
  /** `password`, or TRITONCACHE_REDIS_PASSWORD. */
  readonly password?: string;
  readonly db: number;
  /** Connection timeout in ms; 0 = wait forever (as redis_cache). Nereid's default: 5000. */
  readonly connectTimeoutMs: number;
  /** Timeout of one command in ms; 0 = wait forever (as redis_cache). Nereid's default: 1000. */
  readonly socketTimeoutMs: number;
  /** Entries expire this many ms after they were written; 0 = never (Redis's own eviction applies). */
  readonly ttlMs: number;
  readonly tls?: RedisTlsConfig;
}

export type ResponseCacheConfig = LocalCacheConfig | RedisCacheConfig;

export interface ParsedCacheConfig {
  readonly config: ResponseCacheConfig;
  /** Keys accepted but without effect here (one start-up warning each). */
  readonly warnings: readonly string[];
}

/** The environment variables redis_cache reads credentials from (settings given on the command line win). */
export const REDIS_USERNAME_ENV = 'TRITONCACHE_REDIS_USERNAME';
export const REDIS_PASSWORD_ENV = 'TRITONCACHE_REDIS_PASSWORD';

export const DEFAULT_REDIS_CONNECT_TIMEOUT_MS = 5000;
export const DEFAULT_REDIS_SOCKET_TIMEOUT_MS = 1000;

/**
 * Triton's ParseCacheConfigOption: `<cache name>,<setting>=<value>`, all three parts non-empty. Its texts,
 * so a command line Triton refuses is refused with the same words.
 */
export function parseCacheSetting(arg: string): CacheSetting {
  const comma = arg.indexOf(',');
  if (comma <= 0) {
    throw invalidArg(
      `No cache specified. --cache-config option format is <cache name>,<setting>=<value>. Got ${arg}`,
    );
  }
  const eq = arg.indexOf('=', comma + 1);
  const key = eq < 0 ? '' : arg.slice(comma + 1, eq);
  const value = eq < 0 ? '' : arg.slice(eq + 1);
  if (eq < 0 || key === '' || value === '') {
    throw invalidArg(`--cache-config option format is '<cache name>,<setting>=<value>'. Got ${arg}`);
  }
  return { cache: arg.slice(0, comma), key, value };
}

/** An unsigned decimal integer in [min, max], or a clear error naming the setting. */
function unsigned(cache: string, key: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value)) {
    throw invalidArg(`Failed to initialize ${cache}: '${key}' must be an unsigned integer, got '${value}'`);
  }
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw invalidArg(
      `Failed to initialize ${cache}: '${key}' must be between ${min} and ${max}, got '${value}'`,
    );
  }
  return n;
}

/** Later occurrences of a key win, as in Triton's JSON object built from the settings in order. */
function lastByKey(settings: readonly CacheSetting[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of settings) out.set(s.key, s.value);
  return out;
}

function localConfig(settings: Map<string, string>, warnings: string[]): LocalCacheConfig {
  const size = settings.get('size');
  if (size === undefined) {
    throw invalidArg("Failed to initialize LocalCache: config didn't contain a valid 'size' field.");
  }
  // Triton's local cache cannot be created with 0 bytes (it fails to start); neither can this one.
  const sizeBytes = unsigned('LocalCache', 'size', size, 1, Number.MAX_SAFE_INTEGER);
  for (const key of settings.keys()) {
    if (key !== 'size') warnings.push(`--cache-config local,${key}: unknown setting, ignored`);
  }
  const total = os.totalmem();
  if (sizeBytes > total) {
    warnings.push(
      `--cache-config local,size=${sizeBytes} is more than this machine's memory (${total} bytes): ` +
        'the cache is filled lazily, so the process may run out of memory before it evicts',
    );
  }
  return Object.freeze({ kind: 'local', sizeBytes });
}

const REDIS_KEYS = new Set([
  'host',
  'port',
  'user',
  'password',
  'db',
  'connect_timeout',
  'socket_timeout',
  'pool_size',
  'wait_timeout',
  'tls_enabled',
  // The spelling of the Nereid issue that asked for TLS; Triton's key is tls_enabled.
  'tls_enable',
  'cert',
  'key',
  'cacert',
  'cacert_dir',
  'sni',
  'ttl_ms',
]);

function redisConfig(
  settings: Map<string, string>,
  env: Readonly<Record<string, string | undefined>>,
  warnings: string[],
): RedisCacheConfig {
  const host = settings.get('host');
  const portText = settings.get('port');
  if (host === undefined || portText === undefined) {
    throw invalidArg(
      "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' and " +
        "'port' in the configuration - e.g. tritonserver --cache-config redis,host=redis --cache-config " +
        'redis,port=6379 --model-repository=/models ...',
    );
  }
  const port = unsigned('RedisCache', 'port', portText, 1, 65535);
  const opt = (key: string): string | undefined => settings.get(key);
  const num = (key: string, fallback: number, max = 2 ** 31 - 1): number => {
    const v = opt(key);
    return v === undefined ? fallback : unsigned('RedisCache', key, v, 0, max);
  };
  for (const key of settings.keys()) {
    if (!REDIS_KEYS.has(key)) warnings.push(`--cache-config redis,${key}: unknown setting, ignored`);
  }
  for (const key of ['pool_size', 'wait_timeout']) {
    if (settings.has(key)) {
      warnings.push(
        `--cache-config redis,${key} changes nothing here: Nereid pipelines every command over one connection`,
      );
    }
  }
  const tlsText = opt('tls_enabled') ?? opt('tls_enable');
  let tlsOn = false;
  if (tlsText !== undefined) {
    if (tlsText !== 'true' && tlsText !== 'false') {
      throw invalidArg(
        `Failed to initialize RedisCache: 'tls_enabled' must be true or false, got '${tlsText}'`,
      );
    }
    tlsOn = tlsText === 'true';
  }
  const tls: RedisTlsConfig | undefined = tlsOn
    ? Object.freeze({
        cert: opt('cert'),
        key: opt('key'),
        cacert: opt('cacert'),
        cacertDir: opt('cacert_dir'),
        sni: opt('sni'),
      })
    : undefined;
  if (!tlsOn) {
    for (const key of ['cert', 'key', 'cacert', 'cacert_dir', 'sni']) {
      if (settings.has(key)) warnings.push(`--cache-config redis,${key} is ignored without tls_enabled=true`);
    }
  }
  const user = opt('user') ?? env[REDIS_USERNAME_ENV];
  const password = opt('password') ?? env[REDIS_PASSWORD_ENV];
  return Object.freeze({
    kind: 'redis',
    host,
    port,
    ...(user !== undefined && user !== '' && { user }),
    ...(password !== undefined && password !== '' && { password }),
    db: num('db', 0, 1_000_000),
    connectTimeoutMs: num('connect_timeout', DEFAULT_REDIS_CONNECT_TIMEOUT_MS),
    socketTimeoutMs: num('socket_timeout', DEFAULT_REDIS_SOCKET_TIMEOUT_MS),
    ttlMs: num('ttl_ms', 0, Number.MAX_SAFE_INTEGER),
    ...(tls && { tls }),
  });
}

/**
 * The cache the settings describe, or undefined when none was asked for. `byteSize` is
 * --response-cache-byte-size (Triton turns it into `local,size=<n>` and refuses it together with
 * --cache-config). `env` supplies redis_cache's credential variables.
 */
export function resolveCacheConfig(
  settings: readonly CacheSetting[],
  byteSize: string | undefined,
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedCacheConfig | undefined {
  if (byteSize !== undefined && settings.length > 0) {
    throw invalidArg(
      'Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please ' +
        'provide one or the other.',
    );
  }
  const all: readonly CacheSetting[] =
    byteSize !== undefined ? [{ cache: 'local', key: 'size', value: byteSize }] : settings;
  if (all.length === 0) return undefined;
  const names = [...new Set(all.map((s) => s.cache))];
  if (names.length > 1) {
    throw invalidArg('found multiple cache configurations, but only a single cache is currently supported');
  }
  const name = names[0];
  const warnings: string[] = [];
  const byKey = lastByKey(all);
  if (name === 'local') return { config: localConfig(byKey, warnings), warnings };
  if (name === 'redis') return { config: redisConfig(byKey, env, warnings), warnings };
  throw invalidArg(
    `unable to find cache '${name}': this build has the 'local' and 'redis' caches built in ` +
      '(--cache-directory is not searched)',
  );
}

/** The settings as the start-up log shows them, the password left out. */
export function describeCacheConfig(config: ResponseCacheConfig): string {
  if (config.kind === 'local') return `local, size ${config.sizeBytes} bytes`;
  const parts = [`redis at ${config.host}:${config.port}`, `db ${config.db}`];
  if (config.user !== undefined) parts.push(`user '${config.user}'`);
  if (config.password !== undefined) parts.push('password set');
  if (config.tls) parts.push('TLS');
  if (config.ttlMs > 0) parts.push(`entries expire after ${config.ttlMs} ms`);
  return parts.join(', ');
}
