import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ByteBudget } from './budget.js';
import {
  MessageReader,
  decodeGrpcMessage,
  encodeGrpcMessage,
  MAX_GRPC_MESSAGE_LENGTH,
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

  it('allocates nothing for a declared length until bytes arrive', () => {
    const budget = new ByteBudget(Infinity);
    const readers = Array.from({ length: 1000 }, () => new MessageReader(0x7fffffff, budget));
    for (const r of readers) assert.deepEqual(r.push(Buffer.from([0, 0x7f, 0xff, 0xff, 0xff])), []);
    assert.equal(budget.held, 0, '1000 prefixes declaring 2 GiB each hold no bytes');
    assert.ok(readers.every((r) => r.partial));
  });

  it('holds what arrived, not what was declared, and gives it back when the message completes', () => {
    const budget = new ByteBudget(Infinity);
    const reader = new MessageReader(1 << 30, budget);
    const body = Buffer.alloc(1_000_000, 7);
    const framed = frame(body);
    // 16 KiB pieces, as HTTP/2 DATA frames arrive, each with its own backing store.
    let got: GrpcMessage[] = [];
    let peak = 0;
    for (let i = 0; i < framed.length; i += 16_384) {
      const piece = Buffer.from(framed.subarray(i, i + 16_384));
      got = got.concat(reader.push(piece));
      peak = Math.max(peak, budget.held);
      if (got.length === 0) {
        const arrived = Math.min(i + 16_384, framed.length) - 5;
        // Before half: the pieces; from half on: one buffer of the declared size.
        assert.ok(
          budget.held <= Math.max(arrived + 16_384, body.length),
          `${budget.held} held at ${arrived}`,
        );
      }
    }
    assert.equal(got.length, 1);
    assert.deepEqual(got[0].data, body);
    assert.equal(budget.held, 0);
    assert.ok(peak <= 1.5 * body.length + 16_384, `peak ${peak}`);
  });

  it('copies tiny pieces into staging instead of keeping a view of each', () => {
    const budget = new ByteBudget(Infinity);
    const reader = new MessageReader(1 << 20, budget);
    const body = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
    const framed = frame(body);
    const out: GrpcMessage[] = [];
    for (let i = 0; i < framed.length; i += 3)
      out.push(...reader.push(Buffer.from(framed.subarray(i, i + 3))));
    assert.equal(out.length, 1);
    assert.deepEqual(out[0].data, body);
    assert.equal(budget.held, 0);
  });

  it('refuses a message once the budget has no room, with RESOURCE_EXHAUSTED, and dispose() gives back', () => {
    const server = new ByteBudget(300_000, undefined, 'the server', '--grpc-max-buffered-bytes');
    const conn = new ByteBudget(Infinity, server, 'this connection');
    const a = new MessageReader(1 << 30, conn);
    const b = new MessageReader(1 << 30, conn);
    const big = frame(Buffer.alloc(1_000_000));
    a.push(Buffer.from(big.subarray(0, 200_000)));
    assert.ok(server.held >= 200_000);
    assert.throws(
      () => b.push(Buffer.from(big.subarray(0, 200_000))),
      (e: unknown) =>
        e instanceof GrpcStatusError &&
        e.code === Status.RESOURCE_EXHAUSTED &&
        /the server would exceed its limit of 300000 buffered bytes \(--grpc-max-buffered-bytes\)/.test(
          e.message,
        ),
    );
    b.dispose();
    a.dispose();
    assert.equal(server.held, 0);
    assert.equal(conn.held, 0);
    // With the room back, a message of the same size passes.
    const c = new MessageReader(1 << 30, conn);
    const small = frame(Buffer.alloc(250_000, 1));
    const got = [
      ...c.push(Buffer.from(small.subarray(0, 100_000))),
      ...c.push(Buffer.from(small.subarray(100_000))),
    ];
    assert.equal(got.length, 1);
    assert.equal(server.held, 0);
  });

  it('one message as large as the budget passes', () => {
    const budget = new ByteBudget(1_000_000);
    const reader = new MessageReader(1 << 30, budget);
    const framed = frame(Buffer.alloc(1_000_000, 9));
    const got: GrpcMessage[] = [];
    for (let i = 0; i < framed.length; i += 16_384) {
      got.push(...reader.push(Buffer.from(framed.subarray(i, i + 16_384))));
    }
    assert.equal(got.length, 1);
    assert.equal(got[0].data.length, 1_000_000);
    assert.equal(budget.held, 0);
  });

  it('a connection budget refuses before the server budget', () => {
    const server = new ByteBudget(Infinity);
    const conn = new ByteBudget(50_000, server, 'this connection', '--grpc-max-connection-buffered-bytes');
    const r = new MessageReader(1 << 30, conn);
    assert.throws(
      () => r.push(Buffer.from(frame(Buffer.alloc(200_000)).subarray(0, 60_000))),
      /this connection would exceed its limit of 50000/,
    );
    r.dispose();
    assert.equal(server.held, 0);
  });

  it('assembles 600 KB messages from separately allocated 64 KiB reads, however the boundaries fall', () => {
    // As node:http2 hands a large DATA frame over: one chunk per socket read, each its own allocation.
    const body = randomBytes(614_497);
    const next = randomBytes(1000);
    const two = Buffer.concat([frame(body), frame(next)]);
    const cuts = (first: number): Buffer[] => {
      const chunks = [Buffer.from(two.subarray(0, first))];
      for (let i = first; i < two.length; i += 65_536) chunks.push(Buffer.from(two.subarray(i, i + 65_536)));
      return chunks;
    };
    // The first read ends inside the prefix (1–4), right after it (5), at half the message, exactly at the
    // end of the first message (the second starts a chunk), and one byte into the second message's prefix.
    for (const first of [1, 4, 5, 307_253, 5 + body.length, 6 + body.length, 65_536]) {
      const budget = new ByteBudget(Infinity);
      const reader = new MessageReader(body.length, budget);
      const got = feed(reader, cuts(first));
      assert.equal(got.length, 2, `first read ${first}`);
      assert.ok(got[0].data.equals(body), `first read ${first}: the message's bytes in order`);
      assert.ok(got[1].data.equals(next), `first read ${first}: the next message`);
      assert.equal(reader.partial, false);
      assert.equal(budget.held, 0, `first read ${first}: everything given back`);
    }
    // The limit is the message's own length: exactly it passes (above), one byte less refuses at the prefix.
    assert.throws(
      () => feed(new MessageReader(body.length - 1), cuts(65_536)),
      (e: unknown) => e instanceof GrpcStatusError && e.code === Status.RESOURCE_EXHAUSTED,
    );
  });

  it('refuses an invalid compression flag and reports compressed messages', () => {
    assert.throws(() => new MessageReader(10).push(Buffer.from([2, 0, 0, 0, 0])), GrpcStatusError);
    const [m] = new MessageReader(10).push(Buffer.from([1, 0, 0, 0, 1, 9]));
    assert.equal(m.compressed, true);
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
    // A message echoing a huge shape is cut to MAX_GRPC_MESSAGE_LENGTH (grpcio refuses headers over 16 KiB).
    const shape = `[${Array.from({ length: 10_000 }, () => '1').join(',')}]`;
    const long = encodeGrpcMessage(`unexpected shape ${shape} for input 'x'`);
    assert.ok(long.length <= MAX_GRPC_MESSAGE_LENGTH, `${long.length} chars`);
    assert.ok(long.endsWith('...'));
    assert.ok(long.startsWith('unexpected shape [1,1,'));
    const escaped = encodeGrpcMessage('%'.repeat(10_000));
    assert.ok(escaped.length <= MAX_GRPC_MESSAGE_LENGTH);
    assert.match(escaped, /^(%25)+\.\.\.$/);
    for (const s of ['plain', '100%', 'line\r\nbreak', 'ünïcödé ✓', '%zz']) {
      assert.equal(decodeGrpcMessage(encodeGrpcMessage(s)), s);
    }
  });
});
