import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync, deflateSync, gunzipSync, inflateSync } from 'node:zlib';
import { NereidError } from '../../../common/errors.js';
import { chooseResponseCoding, decodeContentEncoding, encodeResponse, readBody } from './body.js';

void test('Accept-Encoding: highest q wins, ties keep the first, q=0 and unknown codings never win', () => {
  assert.equal(chooseResponseCoding(undefined), 'identity');
  assert.equal(chooseResponseCoding(''), 'identity');
  assert.equal(chooseResponseCoding('gzip'), 'gzip');
  assert.equal(chooseResponseCoding('deflate'), 'deflate');
  assert.equal(chooseResponseCoding('gzip, deflate'), 'gzip');
  assert.equal(chooseResponseCoding('deflate, gzip'), 'deflate');
  assert.equal(chooseResponseCoding('gzip;q=0.5, deflate;q=0.8'), 'deflate');
  assert.equal(chooseResponseCoding('gzip;q=0'), 'identity');
  assert.equal(chooseResponseCoding('br'), 'identity');
  assert.equal(chooseResponseCoding('br, gzip;q=0.1'), 'gzip');
  assert.equal(chooseResponseCoding('identity, gzip'), 'identity');
  assert.equal(chooseResponseCoding(' GZIP ; q=0.9'), 'gzip');
  assert.equal(chooseResponseCoding('gzip;q=abc'), 'identity');
});

void test('request bodies: gzip and deflate are undone, identity passes through', async () => {
  const plain = Buffer.from('{"inputs":[]}');
  assert.equal(await decodeContentEncoding(plain, undefined, 100), plain);
  assert.equal(await decodeContentEncoding(plain, 'identity', 100), plain);
  assert.deepEqual(await decodeContentEncoding(gzipSync(plain), 'gzip', 100), plain);
  assert.deepEqual(await decodeContentEncoding(deflateSync(plain), 'deflate', 100), plain);
  assert.deepEqual(await decodeContentEncoding(gzipSync(plain), ' Gzip', 100), plain);
});

void test('the size limit applies after decompression', async () => {
  const bomb = gzipSync(Buffer.alloc(1 << 20));
  assert.ok(bomb.length < 4096);
  await assert.rejects(
    decodeContentEncoding(bomb, 'gzip', 1000),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INVALID_ARG' &&
      err.message ===
        'Decompressed data size exceeds the maximum allowed value of 1000 bytes. Use --http-max-input-size to increase the limit.',
  );
});

void test('corrupt and unsupported codings', async () => {
  await assert.rejects(
    decodeContentEncoding(Buffer.from('not gzip'), 'gzip', 100),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INVALID_ARG' &&
      /^failed to decompress the request body \(gzip\)/.test(err.message),
  );
  await assert.rejects(
    decodeContentEncoding(Buffer.from('x'), 'br', 100),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'UNSUPPORTED' &&
      err.message === 'Unsupported compression type',
  );
});

void test('response compression round-trips', async () => {
  const body = Buffer.from('x'.repeat(1000));
  assert.deepEqual(gunzipSync(await encodeResponse(body, 'gzip')), body);
  assert.deepEqual(inflateSync(await encodeResponse(body, 'deflate')), body);
});

void test('a large body goes into shared memory only when asked; small ones never', async () => {
  const { createServer } = await import('node:http');
  const seen: { size: number; shared: boolean }[] = [];
  let share = false;
  const server = createServer((req, res) => {
    void readBody(req, 1 << 22, () => share).then((body) => {
      seen.push({ size: body.length, shared: body.buffer instanceof SharedArrayBuffer });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const send = async (bytes: number): Promise<void> => {
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: Buffer.alloc(bytes, 7) });
    await res.arrayBuffer();
  };
  try {
    await send(1 << 20);
    share = true;
    await send(1 << 20);
    await send(100);
  } finally {
    server.close();
  }
  assert.deepEqual(seen, [
    { size: 1 << 20, shared: false },
    { size: 1 << 20, shared: true },
    { size: 100, shared: false },
  ]);
});
