/** JsonPool: admission from headers, the in-flight budget, and worker decoding equal to in-place decoding. */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { isBodyTooLarge } from './transport/body.js';
import { decodeInferRequest } from './infer-codec.js';
import { declaredJsonLength, JsonPool } from './json-pool.js';
import { CLONED_JSON_DEPTH, parseHeapBound } from './json-worker.js';

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;
const OPTIONS = { modelName: 'm', modelVersion: '', maxInputSize: 1 << 26 };

const pool = new JsonPool({ workerThreshold: 1024, workerBytes: 10_000, maxJsonSize: 100_000 });
after(() => pool.close());

test('the declared JSON size: Content-Length, or a sane Inference-Header-Content-Length; unknown when compressed', () => {
  assert.equal(declaredJsonLength(req({ 'content-length': '500' }), true), 500);
  assert.equal(
    declaredJsonLength(req({ 'content-length': '500', 'inference-header-content-length': '120' }), true),
    120,
  );
  // Not an inference request: the header means nothing.
  assert.equal(
    declaredJsonLength(req({ 'content-length': '500', 'inference-header-content-length': '120' }), false),
    500,
  );
  // Values the decoder refuses with its own words are left to it.
  for (const h of ['600', '-1', '12abc', '0'])
    assert.equal(
      declaredJsonLength(req({ 'content-length': '500', 'inference-header-content-length': h }), true),
      undefined,
    );
  assert.equal(
    declaredJsonLength(req({ 'content-length': '500', 'content-encoding': 'gzip' }), true),
    undefined,
  );
  assert.equal(
    declaredJsonLength(req({ 'content-length': '500', 'content-encoding': 'identity' }), true),
    500,
  );
  assert.equal(declaredJsonLength(req({}), true), undefined);
});

test('admission: too large is a 400 that closes; the budget is charged with the bytes that arrived, past it a 503 that closes; one is always admitted', () => {
  const tooLarge = (() => {
    try {
      pool.admit(req({ 'content-length': '200000' }), true);
    } catch (err) {
      return err;
    }
    return undefined;
  })();
  assert.ok(tooLarge instanceof NereidError && tooLarge.code === 'INVALID_ARG');
  assert.match(tooLarge.message, /--http-max-json-size/);
  assert.ok(isBodyTooLarge(tooLarge), 'refused before the body is read: the connection closes');

  const small = pool.admit(req({ 'content-length': '100' }), true); // below the worker threshold: free
  assert.equal(small.onBytes, undefined);
  const a = pool.admit(req({ 'content-length': '6000' }), true);
  assert.equal(pool.bytesInFlight, 0, 'a declared length costs nothing before its bytes arrive');
  a.onBytes!(6000);
  assert.equal(pool.bytesInFlight, 6000);
  const b = pool.admit(req({ 'content-length': '6000' }), true);
  b.onBytes!(1000);
  assert.equal(pool.bytesInFlight, 7000);
  assert.throws(
    () => b.onBytes!(5000),
    (err: unknown) => err instanceof NereidError && err.code === 'UNAVAILABLE' && isBodyTooLarge(err),
  );
  b.release();
  a.release();
  a.release(); // twice is harmless
  small.release();
  assert.equal(pool.bytesInFlight, 0);
  const alone = pool.admit(req({ 'content-length': '50000' }), true); // over the budget, but alone
  alone.onBytes!(30000);
  alone.onBytes!(30000); // never charged past its declared length
  assert.equal(pool.bytesInFlight, 50000);
  alone.release();
  assert.equal(pool.bytesInFlight, 0);
});

test('trickling connections that declare large bodies do not lock other large JSON requests out', () => {
  // Four documents declaring 6,000 bytes each (24,000 against a 10,000 budget) that sent 10 bytes each.
  const trickling = Array.from({ length: 4 }, () => {
    const t = pool.admit(req({ 'content-length': '6000' }), true);
    t.onBytes!(10);
    return t;
  });
  assert.equal(pool.bytesInFlight, 40);
  const whole = pool.admit(req({ 'content-length': '6000' }), true);
  whole.onBytes!(6000);
  assert.equal(pool.bytesInFlight, 6040);
  whole.release();
  for (const t of trickling) t.release();
  assert.equal(pool.bytesInFlight, 0);
});

test('a worker decodes a JSON + binary inference body exactly as the event loop does', async () => {
  const values = Array.from({ length: 400 }, (_, i) => i / 4);
  const header = Buffer.from(
    JSON.stringify({
      id: 'r1',
      parameters: { big: 12345678901234567890n.toString(), flag: true },
      inputs: [
        { name: 'A', shape: [400], datatype: 'FP32', data: values },
        { name: 'B', shape: [2], datatype: 'INT64', parameters: { binary_data_size: 16 } },
      ],
      outputs: [{ name: 'Y', parameters: { binary_data: true } }],
    }),
  );
  const binary = Buffer.alloc(16);
  binary.writeBigInt64LE(-5n, 0);
  binary.writeBigInt64LE(7n, 8);
  const body = Buffer.concat([header, binary]);
  assert.ok(header.length >= 1024, 'the JSON part must reach the worker threshold');
  const expected = decodeInferRequest(Buffer.from(body), header.length, OPTIONS);
  const decoded = await pool.decodeInfer(body, header.length, OPTIONS);
  assert.deepEqual(decoded, expected);
  assert.ok(Buffer.isBuffer(decoded.request.inputs[1].data));
  assert.equal(decoded.request.inputs[1].data.readBigInt64LE(8), 7n);
});

test('a worker reports a decoding error with its code and message', async () => {
  const text = JSON.stringify({ inputs: [{ name: 'A', shape: [3], datatype: 'FP32', data: [1, 2] }] });
  const body = Buffer.from(text + ' '.repeat(2000));
  await assert.rejects(
    Promise.resolve(pool.decodeInfer(body, undefined, OPTIONS)),
    (err: unknown) =>
      err instanceof NereidError &&
      err.code === 'INVALID_ARG' &&
      /unexpected number of elements in 'data' for input 'A'/.test(err.message),
  );
  assert.equal(pool.bytesInFlight, 0, 'the ticket is released after a failure');
});

test('generic JSON parsed on a worker comes back with containers below the clone depth emptied', async () => {
  const deep = '['.repeat(CLONED_JSON_DEPTH + 10) + ']'.repeat(CLONED_JSON_DEPTH + 10);
  const doc = Buffer.from(
    JSON.stringify({ ready: 'x', pad: ' '.repeat(2000) }).slice(0, -1) + `,"deep":${deep}}`,
  );
  const value = (await pool.parse(doc)) as { ready: string; deep: unknown };
  assert.equal(value.ready, 'x');
  let depth = 0;
  for (let v: unknown = value.deep; Array.isArray(v) && v.length > 0; v = (v as unknown[])[0]) depth++;
  assert.equal(depth, CLONED_JSON_DEPTH - 1);
});

test('parseHeapBound: 12 bytes per byte plus 80 per array or object', () => {
  assert.equal(parseHeapBound(Buffer.from('[1,2,3]')), 12 * 7 + 80);
  assert.equal(parseHeapBound(Buffer.from('{"a":[{}]}')), 12 * 10 + 3 * 80);
});
