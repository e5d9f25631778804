/**
 * The `redis` response cache: entries live in a Redis server (Triton's redis_cache), so they survive a
 * restart of Nereid and every Nereid process pointed at the same Redis shares them (a scaled-out
 * deployment computes each distinct request once). Values are the binary entries of codec.ts under
 * `nereid:rc1:<key digest>`, optionally with an expiry (`ttl_ms`).
 *
 * Redis being down or slow never fails a request: commands are not queued while disconnected and each has
 * a timeout, a failed lookup is a miss and a failed insert is skipped, each counted as an error; the
 * client reconnects on its own (with back-off) and hits resume once Redis is back. A value that does not
 * decode for its key (garbage, truncated, another key's) is a miss too, never an answer.
 *
 * The client (ioredis) is imported only when a Redis cache is configured, so a server without one loads
 * none of it.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import type { Redis, RedisOptions } from 'ioredis';
import { NereidError, invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { decodeEntry, encodeEntry, type CachedResponse } from './codec.js';
import type { RedisCacheConfig } from './config.js';
import type { CacheKey } from './key.js';
import type { CacheMetrics, InsertOutcome, ResponseCache } from './response-cache.js';

/** Every key Nereid writes starts with this; `rc1` changes with the entry format. */
export const REDIS_KEY_PREFIX = 'nereid:rc1:';

/** Longest pause between reconnection attempts while Redis is away. */
const MAX_RECONNECT_DELAY_MS = 2000;

async function tlsOptions(config: RedisCacheConfig): Promise<ConnectionOptions | undefined> {
  const tls = config.tls;
  if (!tls) return undefined;
  const read = async (file: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(file);
    } catch (err) {
      throw invalidArg(
        `Failed to initialize RedisCache: cannot read the ${what} '${file}': ${(err as Error).message}`,
      );
    }
  };
  const ca: Buffer[] = [];
  if (tls.cacert !== undefined) ca.push(await read(tls.cacert, 'CA certificate'));
  if (tls.cacertDir !== undefined) {
    let names: string[];
    try {
      names = await readdir(tls.cacertDir);
    } catch (err) {
      throw invalidArg(
        `Failed to initialize RedisCache: cannot read the CA folder '${tls.cacertDir}': ${(err as Error).message}`,
      );
    }
    for (const name of names.filter((n) => /\.(pem|crt)$/i.test(n)).sort()) {
      ca.push(await read(path.join(tls.cacertDir, name), 'CA certificate'));
    }
  }
  return {
    ...(tls.cert !== undefined && { cert: await read(tls.cert, 'certificate') }),
    ...(tls.key !== undefined && { key: await read(tls.key, 'certificate key') }),
    ...(ca.length > 0 && { ca }),
    servername: tls.sni ?? config.host,
  };
}

export class RedisResponseCache implements ResponseCache {
  readonly kind = 'redis' as const;
  private lookups = 0;
  private hits = 0;
  private misses = 0;
  private errors = 0;
  private lookupNs = 0;
  private insertNs = 0;
  /** Set while Redis is unreachable, so the log says so once per outage rather than per request. */
  private outage: string | undefined;
  private closed = false;

  private constructor(
    private readonly client: Redis,
    private readonly config: RedisCacheConfig,
    private readonly log: Logger,
  ) {
    client.on('error', (err: Error) => this.noteError(err.message));
    client.on('ready', () => {
      if (this.outage !== undefined) {
        this.log.info(`Redis response cache at ${config.host}:${config.port} is back: lookups resume`);
        this.outage = undefined;
      }
    });
  }

  /**
   * Connects and checks the server answers (as Triton's redis_cache pings it at start-up): a Redis that
   * cannot be reached or refuses the credentials fails the start, with its reason.
   */
  static async connect(config: RedisCacheConfig, log: Logger): Promise<RedisResponseCache> {
    const { Redis } = await import('ioredis');
    const options: RedisOptions = {
      host: config.host,
      port: config.port,
      db: config.db,
      ...(config.user !== undefined && { username: config.user }),
      ...(config.password !== undefined && { password: config.password }),
      ...(config.connectTimeoutMs > 0 && { connectTimeout: config.connectTimeoutMs }),
      ...(config.socketTimeoutMs > 0 && { commandTimeout: config.socketTimeoutMs }),
      lazyConnect: true,
      // While disconnected, a command fails at once instead of waiting in a queue: the request is
      // computed rather than held. A command caught by a dropped connection fails too, not retried.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 6), MAX_RECONNECT_DELAY_MS),
      ...(config.tls && { tls: await tlsOptions(config) }),
    };
    const client = new Redis(options);
    let firstError: string | undefined;
    const onStartError = (err: Error): void => {
      firstError ??= err.message;
    };
    client.on('error', onStartError);
    try {
      await client.connect();
      const pong = await client.ping('Nereid response cache connected');
      if (pong !== 'Nereid response cache connected') throw new Error(`unexpected PING answer '${pong}'`);
    } catch (err) {
      client.disconnect();
      const reason = err instanceof Error ? err.message : String(err);
      throw new NereidError(
        'INTERNAL',
        `Failed to initialize RedisCache: cannot use Redis at ${config.host}:${config.port}: ${firstError ?? reason}`,
      );
    } finally {
      client.off('error', onStartError);
    }
    log.verbose(`Redis response cache connected to ${config.host}:${config.port}`);
    return new RedisResponseCache(client, config, log);
  }

  private noteError(message: string): void {
    if (this.closed) return;
    if (this.outage === undefined) {
      this.outage = message;
      this.log.warn(
        `Redis response cache at ${this.config.host}:${this.config.port} failed (${message}): requests are ` +
          'computed without the cache until it is back',
      );
    }
  }

  private failed(op: string, key: CacheKey, err: unknown): void {
    this.errors++;
    const message = err instanceof Error ? err.message : String(err);
    this.log.verbose(`Redis response cache: ${op} of key ${key.hex} failed: ${message}`);
    this.noteError(message);
  }

  async lookup(key: CacheKey): Promise<CachedResponse | undefined> {
    const start = process.hrtime.bigint();
    this.lookups++;
    let found: CachedResponse | undefined;
    try {
      if (this.closed) throw new Error('the cache is closed');
      const value = await this.client.getBuffer(REDIS_KEY_PREFIX + key.hex);
      if (value !== null) {
        const decoded = decodeEntry(key.digest, value, true);
        if (decoded.ok) found = decoded.response;
        else {
          this.errors++;
          this.log.verbose(`Redis response cache: value of key ${key.hex} ignored: ${decoded.reason}`);
        }
      }
    } catch (err) {
      this.failed('lookup', key, err);
    }
    if (found) this.hits++;
    else this.misses++;
    this.lookupNs += Number(process.hrtime.bigint() - start);
    return found;
  }

  async insert(key: CacheKey, response: CachedResponse): Promise<InsertOutcome> {
    const start = process.hrtime.bigint();
    try {
      if (this.closed) throw new Error('the cache is closed');
      const value = encodeEntry(key.digest, response);
      const redisKey = REDIS_KEY_PREFIX + key.hex;
      if (this.config.ttlMs > 0) await this.client.set(redisKey, value, 'PX', this.config.ttlMs);
      else await this.client.set(redisKey, value);
      return 'stored';
    } catch (err) {
      this.failed('insert', key, err);
      return 'error';
    } finally {
      this.insertNs += Number(process.hrtime.bigint() - start);
    }
  }

  metrics(): CacheMetrics {
    return {
      kind: 'redis',
      lookups: this.lookups,
      hits: this.hits,
      misses: this.misses,
      lookupNs: this.lookupNs,
      insertNs: this.insertNs,
      errors: this.errors,
      connected: this.client.status === 'ready',
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.status !== 'ready') {
      // Reconnecting (Redis is away): stop trying rather than wait for it.
      this.client.disconnect();
      return;
    }
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
