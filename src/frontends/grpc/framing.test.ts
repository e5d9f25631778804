import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import {
  MessageReader,
  decodeGrpcMessage,
  decompress,
  encodeGrpcMessage,
  frame,
  parseTimeout,
  type GrpcMessage,
} from './framing.js';
import { GrpcStatusError, Status } from './status.js';

const bodies = [Buffer.from('first'), Buffer.alloc(0), Buffer.alloc(70_000, 3), Buffer.from([1, 2, 3])];
const stream = Buffer.concat(bodies.map((b) => frame(b)));

function feed(reader: MessageReader, chunks: Buffer[]): GrpcMessage[] {
  return chunks.flatMap((c) => reader.push(c));
}

describe('MessageReader', () => {
  it('returns a message inside one chunk as a view of it', () => {
    const chunk = frame(Buffer.from('hello'));
    const [m] = new MessageReader(100).push(chunk);
    assert.equal(m.data.toString(), 'hello');
    assert.equal(m.data.buffer, chunk.buffer);
    assert.equal(m.compressed, false);
  });

  it('assembles messages however the stream is cut', () => {
    for (const size of [1, 2, 3, 5, 7, 4096, 65_536, stream.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < stream.length; i += size) chunks.push(stream.subarray(i, i + size));
      const reader = new MessageReader(1 << 20);
      const got = feed(reader, chunks);
      assert.deepEqual(
        got.map((m) => m.data),
        bodies,
        `chunks of ${size}`,
      );
      assert.equal(reader.partial, false);
    }
  });

  it('knows when the stream stopped inside a message', () => {
    const reader = new MessageReader(100);
    reader.push(stream.subarray(0, 3));
    assert.equal(reader.partial, true);
    const r2 = new MessageReader(100);
    r2.push(frame(Buffer.from('abc')).subarray(0, 7));
    assert.equal(r2.partial, true);
  });

  it('refuses messages above the limit from their prefix, before any body arrives', () => {
    const prefix = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
    assert.throws(
      () => new MessageReader(1000).push(prefix),
      (e: unknown) =>
        e instanceof GrpcStatusError &&
        e.code === Status.RESOURCE_EXHAUSTED &&
        e.message === 'Received message larger than max (2147483647 vs. 1000)',
    );
  });

  it('refuses an invalid compression flag and reports compressed messages', () => {
    assert.throws(() => new MessageReader(10).push(Buffer.from([2, 0, 0, 0, 0])), GrpcStatusError);
    const [m] = new MessageReader(10).push(Buffer.from([1, 0, 0, 0, 1, 9]));
    assert.equal(m.compressed, true);
  });
});

describe('decompress', () => {
  it('inflates gzip and deflate messages, and bounds the output', async () => {
    const body = Buffer.alloc(10_000, 'a');
    assert.deepEqual(await decompress(gzipSync(body), 'gzip', 1 << 20), body);
    assert.deepEqual(await decompress(deflateSync(body), 'deflate', 1 << 20), body);
    await assert.rejects(
      decompress(gzipSync(body), 'gzip', 100),
      (e: unknown) => e instanceof GrpcStatusError && e.code === Status.RESOURCE_EXHAUSTED,
    );
    await assert.rejects(
      decompress(Buffer.from('not gzip'), 'gzip', 100),
      (e: unknown) => e instanceof GrpcStatusError && e.code === Status.INTERNAL,
    );
    await assert.rejects(decompress(body, 'identity', 100), GrpcStatusError);
  });
});

describe('grpc-timeout and grpc-message', () => {
  it('parses every timeout unit and rejects malformed values', () => {
    assert.equal(parseTimeout('1H'), 3_600_000);
    assert.equal(parseTimeout('2M'), 120_000);
    assert.equal(parseTimeout('3S'), 3000);
    assert.equal(parseTimeout('250m'), 250);
    assert.equal(parseTimeout('5000u'), 5);
    assert.equal(parseTimeout('7000000n'), 7);
    assert.equal(parseTimeout(undefined), undefined);
    for (const bad of ['', '5', 'S', '123456789S', '1.5S', '-1S', '5s'])
      assert.equal(parseTimeout(bad), undefined, bad);
  });

  it('percent-encodes non-printable bytes and % only', () => {
    assert.equal(encodeGrpcMessage("model 'm' is not found"), "model 'm' is not found");
    assert.equal(encodeGrpcMessage('50% done\nnext'), '50%25 done%0Anext');
    assert.equal(encodeGrpcMessage('é'), '%C3%A9');
    for (const s of ['plain', '100%', 'line\r\nbreak', 'ünïcödé ✓', '%zz']) {
      assert.equal(decodeGrpcMessage(encodeGrpcMessage(s)), s);
    }
  });
});
