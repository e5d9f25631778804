import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InferInput, InferRequestedOutput } from '../infer-input.js';
import { decodeInferResponse, encodeInferRequest, errorMessage } from './infer-codec.js';

function headerOf(chunks: readonly Buffer[], headerLength: number | undefined): unknown {
  return JSON.parse((headerLength === undefined ? Buffer.concat(chunks) : chunks[0]).toString('utf8'));
}

void test('binary inputs: binary_data_size in the header, blobs as separate chunks in input order', () => {
  const a = new InferInput('A', [2], 'INT32').setData([1, 2]);
  const b = new InferInput('B', [1], 'BYTES').setData(['xy']);
  const req = encodeInferRequest([a, b], {});
  assert.equal(req.chunks.length, 3);
  assert.equal(req.chunks[1], a.data);
  assert.equal(req.chunks[2], b.data);
  assert.equal(req.headerLength, req.chunks[0].length);
  assert.equal(req.byteLength, req.chunks[0].length + 8 + 6);
  assert.deepEqual(headerOf(req.chunks, req.headerLength), {
    parameters: { binary_data_output: true },
    inputs: [
      { name: 'A', shape: [2], datatype: 'INT32', parameters: { binary_data_size: 8 } },
      { name: 'B', shape: [1], datatype: 'BYTES', parameters: { binary_data_size: 6 } },
    ],
  });
});

void test('JSON inputs and requested outputs, request options as parameters', () => {
  const a = new InferInput('A', [2], 'FP32').setData([1.5, NaN], { binary: false });
  const req = encodeInferRequest([a], {
    requestId: 'r1',
    sequenceId: 2n ** 64n - 1n,
    sequenceStart: true,
    priority: 2,
    timeout: 1000,
    parameters: { custom: 'x' },
    outputs: [
      new InferRequestedOutput('O', { binary: false }),
      new InferRequestedOutput('C', { classCount: 3 }),
    ],
  });
  assert.equal(req.headerLength, undefined);
  const text = req.chunks[0].toString('utf8');
  // Exact uint64 and Triton's NaN literal: JSON.stringify could write neither.
  assert.match(text, /"sequence_id":18446744073709551615/);
  assert.match(text, /"data":\[1\.5,NaN\]/);
  const header = JSON.parse(text.replace('NaN', 'null').replace('18446744073709551615', '0')) as Record<
    string,
    unknown
  >;
  assert.deepEqual(header, {
    id: 'r1',
    parameters: { custom: 'x', sequence_id: 0, sequence_start: true, priority: 2, timeout: 1000 },
    inputs: [{ name: 'A', shape: [2], datatype: 'FP32', data: [1.5, null] }],
    outputs: [
      { name: 'O', parameters: { binary_data: false } },
      { name: 'C', parameters: { classification: 3, binary_data: true } },
    ],
  });
});

void test('INT64 JSON data is written exactly; FP16 and non-UTF-8 BYTES refuse JSON', () => {
  const a = new InferInput('A', [1], 'INT64').setData([2n ** 63n - 1n], { binary: false });
  assert.match(encodeInferRequest([a], {}).chunks[0].toString(), /"data":\[9223372036854775807\]/);
  const h = new InferInput('H', [1], 'FP16').setData([1], { binary: false });
  assert.throws(() => encodeInferRequest([h], {}), /FP16 data cannot be sent as JSON/);
  const s = new InferInput('S', [1], 'BYTES').setData([new Uint8Array([0xff])], { binary: false });
  assert.throws(() => encodeInferRequest([s], {}), /not UTF-8 text/);
});

void test('JSON float data keeps the sign of zero (found by the fuzzer)', () => {
  // String(-0) is '0': the server read +0. '-0.0' is a double -0 for both Triton's parser and Nereid's.
  const a = new InferInput('A', [3], 'FP32').setData([-0, 0, -1.5], { binary: false });
  const b = new InferInput('B', [1], 'FP64').setData([-0], { binary: false });
  const text = encodeInferRequest([a, b], {}).chunks[0].toString();
  assert.match(text, /"data":\[-0\.0,0,-1\.5\]/);
  assert.match(text, /"data":\[-0\.0\]/);
});

void test('shared-memory inputs and outputs carry region parameters and no data', () => {
  const a = new InferInput('A', [4], 'FP32').setSharedMemory('in', 16, 32);
  const o = new InferRequestedOutput('O').setSharedMemory('out', 16);
  const req = encodeInferRequest([a], { outputs: [o] });
  assert.deepEqual(headerOf(req.chunks, req.headerLength), {
    inputs: [
      {
        name: 'A',
        shape: [4],
        datatype: 'FP32',
        parameters: { shared_memory_region: 'in', shared_memory_byte_size: 16, shared_memory_offset: 32 },
      },
    ],
    outputs: [{ name: 'O', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 16 } }],
  });
});

void test('reserved parameter names and incomplete inputs are refused before sending', () => {
  const a = new InferInput('A', [1], 'INT32').setData([1]);
  assert.throws(
    () => encodeInferRequest([a], { parameters: { sequence_id: 1 } }),
    /set with the 'sequenceId' option/,
  );
  assert.throws(() => encodeInferRequest([new InferInput('B', [1], 'INT32')], {}), /no data set/);
  assert.throws(() => encodeInferRequest([a], { sequenceId: -1 }), RangeError);
});

function responseBody(header: unknown, blobs: Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...blobs]), headerLength: json.length };
}

void test('decodes mixed binary and JSON outputs', () => {
  const blob = Buffer.from(new Int32Array([5, 6]).buffer);
  const { body, headerLength } = responseBody(
    {
      model_name: 'm',
      model_version: '3',
      id: 'q',
      parameters: { p: 1, nested: { dropped: true } },
      outputs: [
        { name: 'B', datatype: 'INT32', shape: [2], parameters: { binary_data_size: 8 } },
        { name: 'J', datatype: 'BOOL', shape: [2, 1], data: [[true], [false]] },
      ],
    },
    [blob],
  );
  const r = decodeInferResponse(body, headerLength);
  assert.equal(r.modelName, 'm');
  assert.equal(r.modelVersion, '3');
  assert.equal(r.id, 'q');
  assert.deepEqual(r.parameters, { p: 1 });
  assert.deepEqual(r.asArray('B', 'INT32'), [5, 6]);
  assert.deepEqual(r.asArray('J', 'BOOL'), [true, false]);
  assert.deepEqual(r.output('B')?.parameters, {});
});

void test('JSON INT64/UINT64 data beyond 2^53 is read exactly; NaN literals are accepted', () => {
  const text =
    '{"model_name":"m","outputs":[' +
    '{"name":"I","datatype":"INT64","shape":[2],"data":[9223372036854775807,-9223372036854775808]},' +
    '{"name":"U","datatype":"UINT64","shape":[1],"data":[18446744073709551615]},' +
    '{"name":"F","datatype":"FP32","shape":[2],"data":[NaN,-Infinity]}]}';
  const r = decodeInferResponse(Buffer.from(text), undefined);
  assert.deepEqual(r.asArray('I', 'INT64'), [2n ** 63n - 1n, -(2n ** 63n)]);
  assert.deepEqual(r.asArray('U', 'UINT64'), [2n ** 64n - 1n]);
  const f = r.asArray('F', 'FP32');
  assert.ok(Number.isNaN(f[0]));
  assert.equal(f[1], -Infinity);
});

void test('malformed responses are refused with a clear error', () => {
  const out = (o: Record<string, unknown>): unknown => ({
    outputs: [{ name: 'O', datatype: 'INT32', shape: [2], ...o }],
  });
  const cases: [unknown, Buffer[], RegExp][] = [
    [out({ parameters: { binary_data_size: 8 } }), [Buffer.alloc(4)], /runs past the body/],
    [out({ parameters: { binary_data_size: 4 } }), [Buffer.alloc(4)], /has 4 bytes; INT32 \[2\] needs 8/],
    [out({ data: [1, 2, 3] }), [], /has 12 bytes; INT32 \[2\] needs 8/],
    [out({ data: [1, 2] }), [Buffer.alloc(3)], /3 unexpected bytes after the last output/],
    [out({ datatype: 'FLOAT', data: [1, 2] }), [], /unknown datatype "FLOAT"/],
    [out({ shape: [-1], data: [] }), [], /invalid shape/],
    [out({}), [], /neither data nor binary_data_size/],
    [{ outputs: 5 }, [], /'outputs' is not an array/],
  ];
  for (const [header, blobs, re] of cases) {
    const { body, headerLength } = responseBody(header, blobs);
    assert.throws(() => decodeInferResponse(body, blobs.length ? headerLength : undefined), re);
  }
  assert.throws(() => decodeInferResponse(Buffer.from('{"outputs":['), undefined), /invalid JSON/);
  assert.throws(() => decodeInferResponse(Buffer.from('{}'), 10), /does not fit a 2-byte body/);
});

void test('error bodies: the server message, else the text, else the status text', () => {
  assert.equal(errorMessage(Buffer.from('{"error":"model not found"}'), 'Not Found'), 'model not found');
  assert.equal(errorMessage(Buffer.from('plain failure\n'), 'Bad'), 'plain failure');
  assert.equal(errorMessage(Buffer.alloc(0), 'Bad Request'), 'Bad Request');
});
