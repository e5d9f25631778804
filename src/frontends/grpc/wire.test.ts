import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { NereidError } from '../../common/errors.js';
import {
  ProtoReader,
  ProtoWriter,
  SHORT_STRING,
  int64Size,
  int64ToNumber,
  varintSize,
  WIRE_FIXED32,
  WIRE_LEN,
} from './wire.js';

/** protobufjs as the reference encoder of single values. */
function refUint64(v: string): Buffer {
  return Buffer.from(protobuf.Writer.create().uint64(v).finish());
}
function refInt64(v: string): Buffer {
  return Buffer.from(protobuf.Writer.create().int64(v).finish());
}

/** protobufjs returns 64-bit values as Long (or number). */
function longString(v: number | { toString(radix?: number): string }): string {
  return typeof v === 'number' ? String(v) : v.toString(10);
}

function malformedError(fn: () => unknown): void {
  assert.throws(
    fn,
    (e: unknown) => e instanceof NereidError && e.code === 'INVALID_ARG' && /malformed/.test(e.message),
  );
}

describe('ProtoReader varints', () => {
  it('reads uint64 values at every size boundary exactly', () => {
    for (const v of [
      '0',
      '1',
      '127',
      '128',
      '16383',
      '16384',
      '4294967295',
      '4294967296',
      '9007199254740991',
    ]) {
      const r = new ProtoReader(refUint64(v));
      assert.equal(r.uint64Value(), Number(v), v);
      assert.equal(r.more(), false);
    }
    for (const v of ['9007199254740992', '18446744073709551615']) {
      assert.equal(new ProtoReader(refUint64(v)).uint64Value(), BigInt(v), v);
    }
  });

  it('reads int64 values, negative ones from their 10-byte form', () => {
    for (const v of ['-1', '-2', '-9007199254740991', '9007199254740991', '0', '-4294967296']) {
      const buf = refInt64(v);
      assert.equal(new ProtoReader(buf).int64Value(), Number(v), v);
      assert.equal(new ProtoReader(buf).int64Number(), Number(v), v);
    }
    for (const v of ['-9223372036854775808', '9223372036854775807', '-9007199254740993']) {
      assert.equal(new ProtoReader(refInt64(v)).int64Value(), BigInt(v), v);
      assert.equal(new ProtoReader(refInt64(v)).int64Number(), undefined, v);
    }
  });

  it('keeps the low 32 bits in uint32() even for long varints', () => {
    assert.equal(new ProtoReader(refUint64('4294967297')).uint32(), 1);
    assert.equal(new ProtoReader(refInt64('-1')).uint32(), 0xffffffff);
  });

  it('refuses truncated and over-long varints', () => {
    malformedError(() => new ProtoReader(Buffer.from([0x80, 0x80])).uint32());
    malformedError(() => new ProtoReader(Buffer.from([0x80])).varint64());
    malformedError(() => new ProtoReader(Buffer.alloc(11, 0xff)).varint64());
    malformedError(() => new ProtoReader(Buffer.alloc(11, 0xff)).uint32());
  });

  it('refuses field number 0', () => {
    malformedError(() => new ProtoReader(Buffer.from([0x02, 0x00])).tag());
  });
});

describe('ProtoReader lengths and skipping', () => {
  it('hands out bytes as views into the message', () => {
    const msg = Buffer.from([0x0a, 3, 1, 2, 3, 0x10, 5]);
    const r = new ProtoReader(msg);
    assert.equal(r.tag(), (1 << 3) | WIRE_LEN);
    const b = r.bytes();
    assert.deepEqual([...b], [1, 2, 3]);
    assert.equal(b.buffer, msg.buffer, 'a view, not a copy');
    assert.equal(r.tag(), 2 << 3);
    assert.equal(r.uint32(), 5);
  });

  it('refuses lengths beyond the message, including huge declared ones', () => {
    malformedError(() => new ProtoReader(Buffer.from([3, 1, 2])).bytes());
    // A declared length of 2^62: must fail fast, not allocate.
    malformedError(() => new ProtoReader(refUint64(String(2n ** 62n))).bytes());
    malformedError(() => new ProtoReader(refUint64('4294967295')).string());
  });

  it('keeps sub-messages within their bounds', () => {
    // field 1, length 2, containing a length-delimited field claiming 5 bytes
    const r = new ProtoReader(Buffer.from([0x0a, 2, 0x0a, 5, 0, 0, 0, 0, 0]));
    r.tag();
    const outer = r.enter();
    r.tag();
    malformedError(() => r.bytes());
    r.leave(outer);
  });

  it('skips every wire type and refuses groups', () => {
    const w = protobuf.Writer.create();
    w.uint32((1 << 3) | 0).uint64('300');
    w.uint32((2 << 3) | 1).fixed64(7);
    w.uint32((3 << 3) | 2).bytes(Buffer.from('abc'));
    w.uint32((4 << 3) | 5).fixed32(9);
    const r = new ProtoReader(Buffer.from(w.finish()));
    for (let i = 0; i < 4; i++) r.skip(r.tag() & 7);
    assert.equal(r.more(), false);
    malformedError(() => new ProtoReader(Buffer.from([0x0b])).skip(3));
    malformedError(() => new ProtoReader(Buffer.from([1, 2])).skip(WIRE_FIXED32));
  });
});

describe('int64ToNumber', () => {
  it('converts at the safe-integer edges', () => {
    assert.equal(int64ToNumber(0xffffffff, 0x1fffff), Number.MAX_SAFE_INTEGER);
    assert.equal(int64ToNumber(0, 0x200000), undefined);
    assert.equal(int64ToNumber(0xffffffff, 0xffffffff), -1);
    assert.equal(int64ToNumber(1, 0xffe00000), -Number.MAX_SAFE_INTEGER);
    assert.equal(int64ToNumber(0, 0xffe00000), undefined);
  });
});

describe('ProtoWriter', () => {
  it('writes varints protobufjs reads back, with the sizes it predicts', () => {
    const values: (number | bigint)[] = [
      0,
      1,
      127,
      128,
      300,
      2 ** 31,
      2 ** 32,
      Number.MAX_SAFE_INTEGER,
      -1,
      -300,
    ];
    values.push(2n ** 63n - 1n, -(2n ** 63n), 2n ** 60n);
    for (const v of values) {
      const buf = Buffer.alloc(int64Size(v));
      const w = new ProtoWriter(buf);
      w.int64(v);
      assert.equal(w.pos, buf.length, `size of ${v}`);
      assert.equal(longString(protobuf.Reader.create(buf).int64()), String(v));
    }
    for (const n of [0, 127, 128, 16383, 16384, 2 ** 28, 2 ** 35, Number.MAX_SAFE_INTEGER]) {
      const buf = Buffer.alloc(varintSize(n));
      new ProtoWriter(buf).varint(n);
      assert.equal(longString(protobuf.Reader.create(buf).uint64()), String(n));
    }
  });

  it('writes strings, bytes and doubles as fields', () => {
    const buf = Buffer.alloc(64);
    const w = new ProtoWriter(buf);
    w.string(1, 'héllo', Buffer.byteLength('héllo'));
    w.bytes(2, Buffer.from([9, 8]));
    w.double(3, 1.5);
    const r = protobuf.Reader.create(buf.subarray(0, w.pos));
    assert.equal(r.uint32(), (1 << 3) | 2);
    assert.equal(r.string(), 'héllo');
    assert.equal(r.uint32(), (2 << 3) | 2);
    assert.deepEqual([...r.bytes()], [9, 8]);
    assert.equal(r.uint32(), (3 << 3) | 1);
    assert.equal(r.double(), 1.5);
  });
});

describe('short strings', () => {
  /** One string field written by protobufjs. */
  const field = (s: string): Buffer => Buffer.from(protobuf.Writer.create().uint32(10).string(s).finish());
  const read = (buf: Buffer): string => {
    const r = new ProtoReader(buf);
    r.tag();
    return r.string();
  };

  it('decodes ASCII, non-ASCII, malformed UTF-8 and long strings as Buffer does, every time', () => {
    const samples = [
      '',
      'add_sub',
      'INPUT0',
      'INT32',
      'x'.repeat(SHORT_STRING),
      'y'.repeat(SHORT_STRING + 1),
      'modèle',
      'é',
      '日本',
      '\u0000\u007f',
    ];
    // Twice: the second read of each may come from the cache of decoded names.
    for (let round = 0; round < 2; round++) {
      for (const s of samples) assert.equal(read(field(s)), s);
    }
    // Invalid UTF-8 (a lone continuation byte) reads as Buffer reads it: a replacement character.
    const bad = Buffer.from([10, 3, 0x61, 0x80, 0x62]);
    assert.equal(read(bad), Buffer.from([0x61, 0x80, 0x62]).toString('utf8'));
  });

  it('never hands back a cached string for different bytes of the same length and hash bucket', () => {
    // Many distinct names of one length: they collide in the cache's 512 buckets.
    const names = Array.from({ length: 2000 }, (_, i) => `t${String(i).padStart(5, '0')}`);
    for (let round = 0; round < 2; round++) {
      for (const n of names) assert.equal(read(field(n)), n);
    }
  });

  it('encodes ASCII and non-ASCII strings to the bytes protobufjs writes', () => {
    for (const s of [
      '',
      'OUTPUT0',
      'x'.repeat(SHORT_STRING),
      'z'.repeat(SHORT_STRING + 5),
      'sortie_é',
      '日本',
    ]) {
      const n = Buffer.byteLength(s);
      const buf = Buffer.alloc(n + 16, 0xee);
      const w = new ProtoWriter(buf);
      w.string(1, s, n);
      assert.deepEqual(buf.subarray(0, w.pos), field(s));
    }
  });
});
