import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { joinBytesElements } from '../../common/tensor.js';
import { decodeEntry, encodeEntry, ENTRY_OVERHEAD_BYTES, type CachedResponse } from './codec.js';

const digest = Buffer.alloc(32, 7);
const other = Buffer.alloc(32, 8);

const response: CachedResponse = {
  outputs: [
    { name: 'OUT', datatype: 'INT32', shape: [1, 3], data: Buffer.from(new Int32Array([1, -2, 3]).buffer) },
    { name: 'TEXT', datatype: 'BYTES', shape: [2], data: joinBytesElements(['héllo', '']) },
    { name: 'EMPTY', datatype: 'FP32', shape: [0], data: Buffer.alloc(0) },
  ],
  parameters: { note: 'cached', n: 1.5, flag: true, big: 12345678901234567890n },
};

describe('cache entry codec', () => {
  it('round-trips outputs (every byte) and parameters (bigint included)', () => {
    const bytes = encodeEntry(digest, response);
    const decoded = decodeEntry(digest, bytes, true);
    assert.ok(decoded.ok);
    assert.deepEqual(decoded.response.parameters, response.parameters);
    assert.equal(decoded.response.outputs.length, 3);
    decoded.response.outputs.forEach((t, i) => {
      const want = response.outputs[i];
      assert.equal(t.name, want.name);
      assert.equal(t.datatype, want.datatype);
      assert.deepEqual(t.shape, want.shape);
      assert.ok(t.data.equals(want.data));
    });
  });

  it('costs the tensor bytes plus a header', () => {
    const bytes = encodeEntry(digest, response);
    const tensorBytes = response.outputs.reduce((n, t) => n + t.data.length, 0);
    assert.ok(bytes.length > tensorBytes + ENTRY_OVERHEAD_BYTES);
    assert.ok(bytes.length < tensorBytes + ENTRY_OVERHEAD_BYTES + 200);
  });

  it('hands out a copy: writing into a decoded tensor leaves the entry as it was', () => {
    const bytes = encodeEntry(digest, response);
    const first = decodeEntry(digest, bytes, false);
    assert.ok(first.ok);
    first.response.outputs[0].data.fill(0xff);
    const second = decodeEntry(digest, bytes, true);
    assert.ok(second.ok);
    assert.ok(second.response.outputs[0].data.equals(response.outputs[0].data));
  });

  it("refuses another key's entry", () => {
    const decoded = decodeEntry(other, encodeEntry(digest, response), true);
    assert.deepEqual(decoded, { ok: false, reason: 'the entry belongs to another key' });
  });

  it('refuses every truncation and any flipped byte (checksum), without throwing', () => {
    const bytes = encodeEntry(digest, response);
    for (let n = 0; n < bytes.length; n++) {
      assert.equal(decodeEntry(digest, bytes.subarray(0, n), true).ok, false, `truncated to ${n}`);
    }
    for (let i = 36; i < bytes.length; i++) {
      const flipped = Buffer.from(bytes);
      flipped[i] ^= 0x01;
      assert.equal(decodeEntry(digest, flipped, true).ok, false, `byte ${i} flipped`);
    }
  });

  it('refuses random garbage and garbage behind a valid prefix', () => {
    for (let i = 0; i < 200; i++) {
      assert.equal(decodeEntry(digest, randomBytes(i * 7), true).ok, false);
    }
    const bytes = encodeEntry(digest, response);
    const tail = Buffer.concat([bytes.subarray(0, 40), randomBytes(300)]);
    assert.equal(decodeEntry(digest, tail, true).ok, false);
  });

  it('checks the header against the datatypes and sizes even when the checksum is right', () => {
    // A header that lies about sizes, packed into an otherwise well-formed entry with a fresh checksum.
    const lying = encodeEntry(digest, {
      outputs: [{ name: 'X', datatype: 'INT32', shape: [2], data: Buffer.alloc(8) }],
      parameters: {},
    });
    const text = lying.toString('latin1').replace('"INT32",[2],8', '"INT64",[2],8');
    const tampered = Buffer.from(text, 'latin1');
    tampered.writeUInt32LE(crc32(tampered.subarray(0, tampered.length - 4)), tampered.length - 4);
    const decoded = decodeEntry(digest, tampered, true);
    assert.deepEqual(decoded, { ok: false, reason: "output 'X' has the wrong byte size" });
  });
});
