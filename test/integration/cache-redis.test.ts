// The Redis response cache against a real redis-server on a free loopback port: two Nereid processes share
// hits, entries expire with ttl_ms and are evicted by Redis under maxmemory, a Redis killed mid-run costs
// no request (errors are counted, hits resume once it is back), a password-protected Redis works (and a
// wrong password fails the start), and values that are garbage or belong to another key are misses, never
// answers. Skipped when redis-server is missing, unless NEREID_REQUIRE_REDIS=1 (scripts/test.sh sets it
// once scripts/setup-redis.sh has installed it).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { REDIS_KEY_PREFIX } from '../../src/core/cache/redis.js';
import {
  EXAMPLES,
  ROOT,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';
import { freePort, redisUnavailable, startRedis, type RedisServer } from './redis-server.js';

const unavailable = redisUnavailable();
if (unavailable !== undefined && process.env.NEREID_REQUIRE_REDIS === '1') {
  throw new Error(`NEREID_REQUIRE_REDIS=1 but ${unavailable}`);
}
const skip = unavailable ?? false;

const CACHED = 'response_cache { enable: true }\n';
const simpleConfig = readFileSync(path.join(EXAMPLES, 'simple/config.pbtxt'), 'utf8') + CACHED;
const simpleOnnx = readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx'));
// An identity model over FP32 vectors of any length: responses as large as a test needs.
const BIG = `
name: "big"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
${CACHED}`;

const repository = (): string =>
  makeRepository({
    simple: { config: simpleConfig, files: { '1/model.onnx': simpleOnnx } },
    big: { config: BIG, onnx: 'identity_fp32.onnx' },
  });

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));
const simpleBody = (seed: number) => ({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range(16, (i) => i * seed) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: range(16, () => seed) },
  ],
});
const expected = (seed: number) => ({
  OUTPUT0: range(16, (i) => i * seed + seed),
  OUTPUT1: range(16, (i) => i * seed - seed),
});

interface Duration {
  count: number;
  ns: number;
}
interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'cache_hit' | 'cache_miss', Duration>;
}

async function stats(url: string, model = 'simple'): Promise<Stats> {
  return (await request(`${url}/v2/models/${model}/stats`)).json<{ model_stats: Stats[] }>().model_stats[0];
}

/** Infers `simple` and checks the numbers are right (a cache must never give a wrong answer). */
async function inferSimple(url: string, seed: number): Promise<void> {
  const r = await post(`${url}/v2/models/simple/infer`, simpleBody(seed));
  assert.equal(r.status, 200, r.body.toString());
  const outputs = r.json<{ outputs: { name: 'OUTPUT0' | 'OUTPUT1'; data: number[] }[] }>().outputs;
  const want = expected(seed);
  for (const o of outputs) assert.deepEqual(o.data, want[o.name], `${o.name} for seed ${seed}`);
}

async function scrape(server: TestServer): Promise<string> {
  return (await request(`http://127.0.0.1:${server.running.metrics!.port}/metrics`)).body.toString();
}

function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

// A generous command timeout (later settings win): a slow answer on a loaded machine must not turn an
// expected hit into a miss. A killed Redis fails commands at once, not by timeout.
const redisFlags = (port: number, ...more: string[]): string[] => [
  `--cache-config=redis,host=127.0.0.1`,
  `--cache-config=redis,port=${port}`,
  `--cache-config=redis,socket_timeout=60000`,
  ...more.map((m) => `--cache-config=redis,${m}`),
];

interface Process {
  readonly url: string;
  stop(): Promise<void>;
}

/** A real `nereid` process (bin/nereid.js) on free ports. */
async function spawnNereid(args: string[]): Promise<Process> {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin/nereid.js'),
      '--http-port=0',
      '--http-address=127.0.0.1',
      '--allow-grpc=false',
      '--allow-metrics=false',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (c: Buffer): void => {
      log += c.toString();
      const m = /Started HTTPService at [^:]+:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    };
    child.stderr.on('data', onData);
    child.stdout.on('data', onData);
    child.on('exit', (code) => reject(new Error(`nereid exited early with ${code}: ${log}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

describe('Redis response cache', { skip }, () => {
  let redis: RedisServer;
  let repo: string;
  let server: TestServer;
  let direct: Redis;

  before(async () => {
    redis = await startRedis();
    repo = repository();
    server = await startServer([`--model-repository=${repo}`, ...redisFlags(redis.port)]);
    direct = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true, maxRetriesPerRequest: 1 });
    // The outage test kills Redis under this connection too; it reconnects by itself.
    direct.on('error', () => undefined);
    await direct.connect();
  });

  after(async () => {
    direct?.disconnect();
    await server?.stop();
    await redis?.stop();
    removeRepository(repo);
  });

  it('stores binary entries in Redis and answers the next identical request from them', async () => {
    await inferSimple(server.url, 3);
    await inferSimple(server.url, 3);
    const s = await stats(server.url);
    assert.equal(s.inference_stats.cache_miss.count, 1);
    assert.equal(s.inference_stats.cache_hit.count, 1);
    assert.equal(s.execution_count, 1);
    const keys = await direct.keys(`${REDIS_KEY_PREFIX}*`);
    assert.equal(keys.length, 1);
    assert.match(keys[0], /^nereid:rc1:[0-9a-f]{64}$/);
    const value = await direct.getBuffer(keys[0]);
    assert.equal(value!.subarray(0, 4).toString('latin1'), 'NRC1');
    // No expiry unless ttl_ms asks for one.
    assert.equal(await direct.pttl(keys[0]), -1);
  });

  it("treats garbage, a truncated value, and another key's value as misses, never as answers", async () => {
    await direct.flushdb();
    await inferSimple(server.url, 5); // miss, stored
    await inferSimple(server.url, 6); // miss, stored
    const keys = await direct.keys(`${REDIS_KEY_PREFIX}*`);
    assert.equal(keys.length, 2);
    const values = await Promise.all(keys.map((k) => direct.getBuffer(k)));
    const errorsBefore = metric(await scrape(server), 'nereid_cache_errors_total')!;
    const before = await stats(server.url);
    const tampered: Buffer[] = [
      randomBytes(300),
      values[0]!.subarray(0, values[0]!.length - 10),
      Buffer.from('not even close'),
      Buffer.alloc(0),
    ];
    for (const garbage of tampered) {
      await direct.set(keys[0], garbage);
      await direct.set(keys[1], garbage);
      await inferSimple(server.url, 5);
      await inferSimple(server.url, 6);
    }
    // Each key holding the other's (valid) entry: detected, recomputed.
    await direct.set(keys[0], values[1]!);
    await direct.set(keys[1], values[0]!);
    await inferSimple(server.url, 5);
    await inferSimple(server.url, 6);
    const after = await stats(server.url);
    assert.equal(after.inference_stats.cache_hit.count, before.inference_stats.cache_hit.count);
    assert.equal(after.inference_stats.cache_miss.count - before.inference_stats.cache_miss.count, 10);
    // Empty values and the swaps decode to nothing usable: all ten were counted as errors.
    const errorsAfter = metric(await scrape(server), 'nereid_cache_errors_total')!;
    assert.equal(errorsAfter - errorsBefore, 10);
    // The recomputed answers were stored again: hits resume.
    await inferSimple(server.url, 5);
    assert.equal(
      (await stats(server.url)).inference_stats.cache_hit.count,
      after.inference_stats.cache_hit.count + 1,
    );
  });

  it('keeps answering while Redis is down, counts the errors, and hits again once it is back', async () => {
    await inferSimple(server.url, 7);
    await redis.kill();
    const errorsBefore = metric(await scrape(server), 'nereid_cache_errors_total')!;
    const before = await stats(server.url);
    for (let i = 0; i < 5; i++) await inferSimple(server.url, 7);
    const during = await stats(server.url);
    assert.equal(during.inference_stats.cache_hit.count, before.inference_stats.cache_hit.count);
    assert.equal(during.execution_count - before.execution_count, 5, 'computed without the cache');
    const text = await scrape(server);
    assert.ok(metric(text, 'nereid_cache_errors_total')! >= errorsBefore + 5);
    assert.equal(metric(text, 'nereid_cache_connected'), 0);
    assert.ok(
      server.logs.some((l) => /Redis response cache at .* failed .*computed without the cache/.test(l)),
    );

    await redis.restart();
    await waitFor(async () => metric(await scrape(server), 'nereid_cache_connected') === 1, 30_000);
    assert.ok(server.logs.some((l) => /Redis response cache at .* is back/.test(l)));
    await inferSimple(server.url, 7); // the restarted Redis is empty: a miss, stored
    await inferSimple(server.url, 7);
    const after = await stats(server.url);
    assert.equal(after.inference_stats.cache_hit.count, during.inference_stats.cache_hit.count + 1);
  });
});

describe('Redis response cache shared by two Nereid processes', { skip }, () => {
  let redis: RedisServer;
  let repo: string;
  const processes: Process[] = [];

  before(async () => {
    redis = await startRedis();
    repo = repository();
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await redis?.stop();
    removeRepository(repo);
  });

  it('answers on one process what the other computed', async () => {
    const args = [`--model-repository=${repo}`, ...redisFlags(redis.port)];
    const [a, b] = await Promise.all([spawnNereid(args), spawnNereid(args)]);
    processes.push(a, b);
    await inferSimple(a.url, 11);
    await inferSimple(b.url, 11);
    const sa = await stats(a.url);
    const sb = await stats(b.url);
    assert.equal(sa.inference_stats.cache_miss.count, 1);
    assert.equal(sa.execution_count, 1);
    assert.equal(sb.inference_stats.cache_hit.count, 1);
    assert.equal(sb.inference_stats.cache_miss.count, 0);
    assert.equal(sb.execution_count, 0, 'the second process never ran the model');
    // And the other way round.
    await inferSimple(b.url, 12);
    await inferSimple(a.url, 12);
    assert.equal((await stats(a.url)).inference_stats.cache_hit.count, 1);
  });
});

describe('Redis response cache expiry and eviction', { skip }, () => {
  const TTL_MS = 3_600_000;
  let redis: RedisServer;
  let repo: string;
  let server: TestServer;
  let direct: Redis;

  before(async () => {
    redis = await startRedis({ maxmemory: '4mb' });
    repo = repository();
    server = await startServer([`--model-repository=${repo}`, ...redisFlags(redis.port, `ttl_ms=${TTL_MS}`)]);
    direct = new Redis({ host: '127.0.0.1', port: redis.port });
  });

  after(async () => {
    direct?.disconnect();
    await server?.stop();
    await redis?.stop();
    removeRepository(repo);
  });

  it('sets ttl_ms on every entry, and misses once Redis expired it', async () => {
    await inferSimple(server.url, 21);
    const [key] = await direct.keys(`${REDIS_KEY_PREFIX}*`);
    // The TTL is long enough that no delay on a loaded machine lets it run out before it is read.
    const ttl = await direct.pttl(key);
    assert.ok(ttl > 0 && ttl <= TTL_MS, `pttl ${ttl}`);
    // Then the entry expires (Redis's own expiry, brought forward to now rather than waited for).
    assert.equal(await direct.pexpire(key, 1), 1);
    await waitFor(async () => (await direct.exists(key)) === 0, 20_000);
    const before = await stats(server.url);
    await inferSimple(server.url, 21);
    const after = await stats(server.url);
    assert.equal(after.inference_stats.cache_miss.count, before.inference_stats.cache_miss.count + 1);
    assert.equal(after.inference_stats.cache_hit.count, before.inference_stats.cache_hit.count);
  });

  it('lets Redis evict old entries under its maxmemory, and recomputes them', async () => {
    // 40 distinct 256 KiB answers (about 10 MB) into a 4 MB Redis: the first ones are evicted.
    const body = (i: number) => ({
      inputs: [{ name: 'INPUT0', shape: [1, 65536], datatype: 'FP32', data: Array(65536).fill(i) }],
    });
    for (let i = 0; i < 40; i++) {
      const r = await post(`${server.url}/v2/models/big/infer`, body(i));
      assert.equal(r.status, 200);
    }
    const info = await direct.info('stats');
    assert.ok(Number(/evicted_keys:(\d+)/.exec(info)![1]) > 0, 'Redis evicted keys');
    const before = await stats(server.url, 'big');
    const first = await post(`${server.url}/v2/models/big/infer`, body(0));
    assert.equal(first.status, 200);
    assert.deepEqual(first.json<{ outputs: { data: number[] }[] }>().outputs[0].data.slice(0, 3), [0, 0, 0]);
    const after = await stats(server.url, 'big');
    assert.equal(after.inference_stats.cache_miss.count, before.inference_stats.cache_miss.count + 1);
  });
});

describe('password-protected Redis', { skip }, () => {
  let redis: RedisServer;
  let repo: string;

  before(async () => {
    redis = await startRedis({ password: 'n3reid-s3cret' });
    repo = repository();
  });

  after(async () => {
    await redis?.stop();
    removeRepository(repo);
  });

  it('works with the password', async () => {
    const server = await startServer([
      `--model-repository=${repo}`,
      ...redisFlags(redis.port, 'password=n3reid-s3cret'),
    ]);
    try {
      await inferSimple(server.url, 31);
      await inferSimple(server.url, 31);
      assert.equal((await stats(server.url)).inference_stats.cache_hit.count, 1);
      assert.ok(!server.logs.some((l) => l.includes('n3reid-s3cret')), 'the password never reaches the log');
    } finally {
      await server.stop();
    }
  });

  it('refuses to start with a wrong password or none, naming the reason', async () => {
    await assert.rejects(
      startServer([`--model-repository=${repo}`, ...redisFlags(redis.port, 'password=wrong')]),
      /Failed to initialize RedisCache: cannot use Redis at 127\.0\.0\.1:\d+: .*(WRONGPASS|invalid)/,
    );
    await assert.rejects(
      startServer([`--model-repository=${repo}`, ...redisFlags(redis.port)]),
      /Failed to initialize RedisCache: .*NOAUTH/,
    );
  });
});

describe('unreachable Redis at start-up', { skip }, () => {
  it('fails the start with the address, as Triton does', async () => {
    const repo = repository();
    try {
      const port = await freePort();
      await assert.rejects(
        startServer([`--model-repository=${repo}`, ...redisFlags(port, 'connect_timeout=2000')]),
        new RegExp(`Failed to initialize RedisCache: cannot use Redis at 127\\.0\\.0\\.1:${port}`),
      );
    } finally {
      removeRepository(repo);
    }
  });
});
