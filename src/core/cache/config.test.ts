import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
  DEFAULT_REDIS_SOCKET_TIMEOUT_MS,
  describeCacheConfig,
  parseCacheSetting,
  resolveCacheConfig,
  type CacheSetting,
} from './config.js';

const settings = (...args: string[]): CacheSetting[] => args.map(parseCacheSetting);

describe('parseCacheSetting', () => {
  it("splits '<cache>,<key>=<value>', the value keeping any further '=' and ','", () => {
    assert.deepEqual(parseCacheSetting('local,size=1048576'), {
      cache: 'local',
      key: 'size',
      value: '1048576',
    });
    assert.deepEqual(parseCacheSetting('redis,password=a=b,c'), {
      cache: 'redis',
      key: 'password',
      value: 'a=b,c',
    });
  });

  it("refuses what Triton's parser refuses, with its words", () => {
    assert.throws(
      () => parseCacheSetting('size=1'),
      /^NereidError: No cache specified\. --cache-config option format/,
    );
    assert.throws(() => parseCacheSetting(',size=1'), /No cache specified/);
    for (const bad of ['local,size', 'local,=1', 'local,size=', 'local,']) {
      assert.throws(
        () => parseCacheSetting(bad),
        (err: Error) =>
          err.message === `--cache-config option format is '<cache name>,<setting>=<value>'. Got ${bad}`,
        bad,
      );
    }
  });
});

describe('resolveCacheConfig', () => {
  it('is undefined without any cache flag', () => {
    assert.equal(resolveCacheConfig([], undefined), undefined);
  });

  it('reads a local cache size in bytes, and --response-cache-byte-size as the same thing', () => {
    assert.deepEqual(resolveCacheConfig(settings('local,size=2048'), undefined)?.config, {
      kind: 'local',
      sizeBytes: 2048,
    });
    assert.deepEqual(resolveCacheConfig([], '4096')?.config, { kind: 'local', sizeBytes: 4096 });
  });

  it('lets a later occurrence of a key win', () => {
    assert.equal(
      (
        resolveCacheConfig(settings('local,size=10', 'local,size=20'), undefined)?.config as {
          sizeBytes: number;
        }
      ).sizeBytes,
      20,
    );
  });

  it('refuses a size of 0, a size that is not a number, and a local cache without a size', () => {
    assert.throws(
      () => resolveCacheConfig(settings('local,size=0'), undefined),
      /'size' must be between 1 and/,
    );
    assert.throws(() => resolveCacheConfig([], '0'), /'size' must be between 1 and/);
    for (const v of ['abc', '-5', '1.5', '1e6', ' 10']) {
      assert.throws(
        () => resolveCacheConfig([{ cache: 'local', key: 'size', value: v }], undefined),
        /'size' must be an unsigned integer/,
        v,
      );
    }
    assert.throws(
      () => resolveCacheConfig(settings('local,foo=1'), undefined),
      /Failed to initialize LocalCache: config didn't contain a valid 'size' field\./,
    );
  });

  it('refuses both flags together, two caches, and a cache that is not built in', () => {
    assert.throws(
      () => resolveCacheConfig(settings('local,size=10'), '10'),
      /Incompatible flags --response-cache-byte-size and --cache-config both provided/,
    );
    assert.throws(
      () => resolveCacheConfig(settings('local,size=10', 'redis,host=x'), undefined),
      /found multiple cache configurations, but only a single cache is currently supported/,
    );
    assert.throws(
      () => resolveCacheConfig(settings('memcached,host=x'), undefined),
      /unable to find cache 'memcached'/,
    );
  });

  it('warns about unknown local settings and sizes beyond the machine', () => {
    const parsed = resolveCacheConfig(settings('local,size=100', 'local,colour=blue'), undefined);
    assert.match(parsed!.warnings.join('\n'), /local,colour: unknown setting/);
    const huge = resolveCacheConfig(settings(`local,size=${Number.MAX_SAFE_INTEGER}`), undefined);
    assert.match(huge!.warnings.join('\n'), /more than this machine's memory/);
  });

  it("reads Redis's settings with redis_cache's names, Nereid's defaults, and the credential variables", () => {
    const parsed = resolveCacheConfig(
      settings('redis,host=cache.local', 'redis,port=6380', 'redis,db=3', 'redis,ttl_ms=60000'),
      undefined,
      { TRITONCACHE_REDIS_USERNAME: 'alice', TRITONCACHE_REDIS_PASSWORD: 'from-env' },
    );
    assert.deepEqual(parsed?.config, {
      kind: 'redis',
      host: 'cache.local',
      port: 6380,
      user: 'alice',
      password: 'from-env',
      db: 3,
      connectTimeoutMs: DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
      socketTimeoutMs: DEFAULT_REDIS_SOCKET_TIMEOUT_MS,
      ttlMs: 60000,
    });
    const flagWins = resolveCacheConfig(
      settings('redis,host=h', 'redis,port=1', 'redis,password=flag'),
      undefined,
      {
        TRITONCACHE_REDIS_PASSWORD: 'env',
      },
    );
    assert.equal((flagWins?.config as { password?: string }).password, 'flag');
    assert.doesNotMatch(describeCacheConfig(flagWins!.config), /flag/);
  });

  it('requires a Redis host and port, and checks its numbers and TLS switch', () => {
    assert.throws(
      () => resolveCacheConfig(settings('redis,host=h'), undefined),
      /didn't specify address\. Must at a minimum specify 'host' and 'port'/,
    );
    assert.throws(
      () => resolveCacheConfig(settings('redis,host=h', 'redis,port=70000'), undefined),
      /'port' must be/,
    );
    assert.throws(
      () =>
        resolveCacheConfig(settings('redis,host=h', 'redis,port=1', 'redis,socket_timeout=soon'), undefined),
      /'socket_timeout' must be an unsigned integer/,
    );
    assert.throws(
      () => resolveCacheConfig(settings('redis,host=h', 'redis,port=1', 'redis,tls_enabled=yes'), undefined),
      /'tls_enabled' must be true or false/,
    );
    const tls = resolveCacheConfig(
      settings(
        'redis,host=h',
        'redis,port=1',
        'redis,tls_enabled=true',
        'redis,cacert=/ca.pem',
        'redis,sni=cache',
      ),
      undefined,
    );
    assert.deepEqual((tls?.config as { tls?: unknown }).tls, {
      cert: undefined,
      key: undefined,
      cacert: '/ca.pem',
      cacertDir: undefined,
      sni: 'cache',
    });
  });

  it('warns about Redis settings that change nothing here', () => {
    const parsed = resolveCacheConfig(
      settings('redis,host=h', 'redis,port=1', 'redis,pool_size=4', 'redis,cert=/c.pem', 'redis,flavour=x'),
      undefined,
    );
    const text = parsed!.warnings.join('\n');
    assert.match(text, /pool_size changes nothing here/);
    assert.match(text, /cert is ignored without tls_enabled=true/);
    assert.match(text, /flavour: unknown setting/);
  });
});
