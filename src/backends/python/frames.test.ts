import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeFrame, FrameDecoder } from './frames.js';

const bytes = (parts: Buffer[]): Buffer => Buffer.concat(parts);

void test('a frame survives being split at every byte boundary', () => {
  const blob = Buffer.from([1, 2, 3, 4, 5, 6, 7]);
  const wire = bytes([...encodeFrame(23, { i: 5, f: true, m: 'h\u00e9' }, [blob]), ...encodeFrame(24, {})]);
  for (let cut = 0; cut <= wire.length; cut++) {
    const d = new FrameDecoder(1 << 20);
    const frames = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut))];
    assert.equal(frames.length, 2, `cut at ${cut}`);
    assert.equal(frames[0].type, 23);
    assert.deepEqual(frames[0].header, { i: 5, f: true, m: 'h\u00e9' });
    assert.deepEqual([...frames[0].blob], [...blob]);
    assert.equal(frames[1].type, 24);
    assert.equal(frames[1].blob.length, 0);
  }
});

void test('many frames in one chunk, byte by byte too', () => {
  const wire = bytes(
    Array.from({ length: 50 }, (_, i) => bytes(encodeFrame(i, { n: i }, [Buffer.alloc(i, i)]))),
  );
  const whole = new FrameDecoder(1 << 20).push(wire);
  assert.deepEqual(
    whole.map((f) => f.type),
    Array.from({ length: 50 }, (_, i) => i),
  );
  const d = new FrameDecoder(1 << 20);
  let count = 0;
  for (const b of wire) count += d.push(Buffer.from([b])).length;
  assert.equal(count, 50);
  assert.ok(whole[49].blob.equals(Buffer.alloc(49, 49)));
});

void test('malformed streams are refused, not guessed at', () => {
  const tooShort = Buffer.alloc(8);
  tooShort.writeUInt32LE(3, 0);
  assert.throws(() => new FrameDecoder(100).push(tooShort), /body of 3 bytes/);

  const huge = Buffer.alloc(4);
  huge.writeUInt32LE(1000, 0);
  assert.throws(() => new FrameDecoder(100).push(huge), /over the 100 limit/);

  const headerOverflow = Buffer.alloc(9);
  headerOverflow.writeUInt32LE(5, 0);
  headerOverflow.writeUInt32LE(50, 5);
  assert.throws(() => new FrameDecoder(100).push(headerOverflow), /header overflow/);

  const notJson = bytes(encodeFrame(1, {}));
  const badHeader = Buffer.concat([
    notJson.subarray(0, 4),
    notJson.subarray(4, 5),
    Buffer.from([1, 0, 0, 0]),
    Buffer.from('{'),
  ]);
  badHeader.writeUInt32LE(6, 0);
  assert.throws(() => new FrameDecoder(100).push(badHeader), /not JSON/);

  const array = Buffer.from('[1]');
  const arrayFrame = Buffer.alloc(9);
  arrayFrame.writeUInt32LE(5 + array.length, 0);
  arrayFrame.writeUInt32LE(array.length, 5);
  assert.throws(() => new FrameDecoder(100).push(Buffer.concat([arrayFrame, array])), /not an object/);
});
