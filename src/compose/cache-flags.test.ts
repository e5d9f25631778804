import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FLAGS, parseFlags } from './flags.js';

const repo = '--model-repository=/a';

describe('response cache flags', () => {
  it('has no cache by default', () => {
    assert.equal(parseFlags([repo]).options.responseCache, undefined);
  });

  it('--cache-config and --response-cache-byte-size apply; --cache-directory stays inert with its reason', () => {
    const byName = new Map(FLAGS.map((f) => [f.name, f]));
    assert.ok(byName.get('cache-config')?.apply);
    assert.ok(byName.get('response-cache-byte-size')?.apply);
    assert.equal(byName.get('cache-directory')?.apply, undefined);
    assert.match(byName.get('cache-directory')?.inert ?? '', /built into Nereid/);
  });

  it('reads --cache-config in both forms into a frozen, typed setting', () => {
    const { options, warnings } = parseFlags([repo, '--cache-config', 'local,size=1048576']);
    assert.deepEqual(options.responseCache, { kind: 'local', sizeBytes: 1048576 });
    assert.ok(Object.isFrozen(options.responseCache));
    assert.deepEqual(warnings, []);
    const redis = parseFlags([repo, '--cache-config=redis,host=127.0.0.1', '--cache-config=redis,port=6379']);
    assert.equal(redis.options.responseCache?.kind, 'redis');
  });

  it("takes the deprecated --response-cache-byte-size as 'local' with a warning, as Triton does", () => {
    const { options, warnings } = parseFlags([repo, '--response-cache-byte-size=2048']);
    assert.deepEqual(options.responseCache, { kind: 'local', sizeBytes: 2048 });
    assert.match(
      warnings.join('\n'),
      /--response-cache-byte-size is deprecated.*'--cache-config=local,size=2048'/,
    );
  });

  it('refuses bad cache command lines with clear messages', () => {
    const refuse = (args: string[], re: RegExp): void => assert.throws(() => parseFlags([repo, ...args]), re);
    refuse(['--cache-config=local,size=0'], /'size' must be between 1 and/);
    refuse(['--cache-config=size=1'], /No cache specified/);
    refuse(['--cache-config=local,size=1', '--response-cache-byte-size=1'], /Incompatible flags/);
    refuse(['--response-cache-byte-size=-1'], /--response-cache-byte-size must be between 0 and/);
    refuse(['--response-cache-byte-size=0'], /'size' must be between 1 and/);
    refuse(['--cache-config=redis,host=h'], /Must at a minimum specify 'host' and 'port'/);
  });

  it("falls back to redis_cache's credential variables", () => {
    const { options } = parseFlags([repo, '--cache-config=redis,host=h', '--cache-config=redis,port=1'], {
      TRITONCACHE_REDIS_PASSWORD: 'secret',
    });
    assert.equal(options.responseCache?.kind === 'redis' && options.responseCache.password, 'secret');
  });
});
