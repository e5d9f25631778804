import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { ByteBudget } from './budget.js';
import { compressFramed, decompress, parseCompressionLevel, responseEncoding } from './compression.js';
import { frame } from './framing.js';
import { GrpcStatusError, Status } from './status.js';

const exhausted = (e: unknown): boolean =>
  e instanceof GrpcStatusError && e.code === Status.RESOURCE_EXHAUSTED;

describe('decompress', () => {
  it('inflates gzip and deflate messages', async () => {
    const body = Buffer.alloc(10_000, 'a');
    assert.deepEqual(await decompress(gzipSync(body), 'gzip', 1 << 20), body);
    assert.deepEqual(await decompress(deflateSync(body), 'deflate', 1 << 20), body);
    assert.deepEqual(await decompress(gzipSync(Buffer.alloc(0)), 'gzip', 1 << 20), Buffer.alloc(0));
  });

  it('refuses output beyond the cap, and corrupt or unlabelled input', async () => {
    const body = Buffer.alloc(10_000, 'a');
    await assert.rejects(decompress(gzipSync(body), 'gzip', 100), exhausted);
    await assert.rejects(decompress(gzipSync(body), 'gzip', 9_999), exhausted);
    assert.equal((await decompress(gzipSync(body), 'gzip', 10_000)).length, 10_000);
    await assert.rejects(
      decompress(Buffer.from('not gzip'), 'gzip', 100),
      (e: unknown) => e instanceof GrpcStatusError && e.code === Status.INTERNAL,
    );
    await assert.rejects(decompress(body, 'identity', 100), GrpcStatusError);
  });

  it('stops a bomb at the cap: memory grows by the cap, not by what the bomb claims', async () => {
    // 256 MiB of zeros compresses to about 256 KB; the cap is 8 MiB.
    const bomb = gzipSync(Buffer.alloc(256 << 20), { level: 9 });
    assert.ok(bomb.length < 1 << 20);
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1);
    await assert.rejects(decompress(bomb, 'gzip', 8 << 20), (e: unknown) => {
      assert.ok(exhausted(e));
      assert.match(
        (e as Error).message,
        /Received message larger than max \(decompressed beyond 8388608 bytes\)/,
      );
      return true;
    });
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    assert.ok(peak - before < 64 << 20, `array buffers grew by ${peak - before} bytes`);
  });

  it('counts its output on the budget and gives it back, refused or not', async () => {
    const budget = new ByteBudget(100_000, undefined, 'this connection');
    const body = Buffer.alloc(300_000, 'b');
    await assert.rejects(decompress(gzipSync(body), 'gzip', 1 << 20, budget), (e: unknown) => {
      assert.ok(exhausted(e));
      assert.match((e as Error).message, /this connection would exceed its limit of 100000/);
      return true;
    });
    assert.equal(budget.held, 0);
    const ok = await decompress(gzipSync(Buffer.alloc(50_000, 'c')), 'gzip', 1 << 20, budget);
    assert.equal(ok.length, 50_000);
    assert.equal(budget.held, 0);
  });
});

describe('response compression', () => {
  it("parses Triton's levels", () => {
    assert.equal(parseCompressionLevel('none'), 'none');
    assert.equal(parseCompressionLevel('LOW'), 'low');
    assert.equal(parseCompressionLevel('medium'), 'medium');
    assert.equal(parseCompressionLevel('med'), 'medium');
    assert.equal(parseCompressionLevel('High'), 'high');
    assert.equal(parseCompressionLevel('max'), undefined);
  });

  it('picks the algorithm as gRPC core does: gzip, deflate ranked; low first, medium middle, high last', () => {
    const both = 'identity, deflate, gzip';
    assert.equal(responseEncoding('none', both), undefined);
    assert.equal(responseEncoding('low', both), 'gzip');
    assert.equal(responseEncoding('medium', both), 'deflate');
    assert.equal(responseEncoding('high', both), 'deflate');
    assert.equal(responseEncoding('high', 'identity,gzip'), 'gzip');
    assert.equal(responseEncoding('low', 'deflate'), 'deflate');
    assert.equal(responseEncoding('high', 'identity'), undefined);
    assert.equal(responseEncoding('high', undefined), undefined);
  });

  it('compresses a framed message, or leaves it when it would not shrink', async () => {
    const body = Buffer.alloc(50_000, 'z');
    const framed = frame(body);
    // The encoders hand out pieces; the prefix may even be split.
    const pieces = [framed.subarray(0, 3), framed.subarray(3, 1000), framed.subarray(1000)];
    for (const [encoding, inflate] of [
      ['gzip', gunzipSync],
      ['deflate', inflateSync],
    ] as const) {
      const out = Buffer.concat(await compressFramed(pieces, encoding));
      assert.equal(out[0], 1);
      assert.equal(out.readUInt32BE(1), out.length - 5);
      assert.deepEqual(inflate(out.subarray(5)), body);
    }
    const random = frame(Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 97 + 13) % 256)));
    const same = Buffer.concat(await compressFramed([random], 'gzip'));
    assert.deepEqual(same, random);
    assert.equal(same[0], 0);
  });
});
