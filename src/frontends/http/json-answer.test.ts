/** Sliced JSON answers: the same text as the whole-answer encoder, refused for the same reasons, before any text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import { joinBytesElements } from '../../common/tensor.js';
import type { InferenceResponse, OutputTensor } from '../../core/index.js';
import { encodeInferResponse, MAX_JSON_RESPONSE_BYTES, type OutputFormat } from './infer-codec.js';
import { jsonAnswerPieces, jsonElementCount, planJsonAnswer, SLICE_ELEMENTS } from './json-answer.js';

const JSON_ONLY: OutputFormat = { defaultBinary: false, binary: new Map() };
const noTurn = (): Promise<void> => Promise.resolve();

function response(outputs: OutputTensor[]): InferenceResponse {
  return {
    modelName: 'm',
    modelVersion: '1',
    id: 'req-7',
    parameters: { p: 1n << 60n },
    outputs,
    final: true,
  };
}

function fp32(name: string, values: number[]): OutputTensor {
  return {
    name,
    datatype: 'FP32',
    shape: [values.length],
    data: Buffer.from(new Float32Array(values).buffer),
  };
}

function strings(name: string, values: (string | Buffer)[]): OutputTensor {
  return {
    name,
    datatype: 'BYTES',
    shape: [values.length],
    data: joinBytesElements(values.map((v) => (typeof v === 'string' ? Buffer.from(v) : v))),
  };
}

async function sliced(r: InferenceResponse, format: OutputFormat, limit = MAX_JSON_RESPONSE_BYTES) {
  const plan = await planJsonAnswer(r, format, limit, noTurn);
  const pieces = [...jsonAnswerPieces(plan)];
  return { plan, pieces, json: pieces.join('') };
}

test('sliced text equals the whole encoder for every datatype, across slice boundaries', async () => {
  const n = 2 * SLICE_ELEMENTS + 5;
  const i64 = new BigInt64Array(n).map((_, i) => BigInt(i) * -(1n << 40n));
  const u8 = new Uint8Array(n).map((_, i) => i % 256);
  const outputs: OutputTensor[] = [
    fp32(
      'floats',
      Array.from({ length: n }, (_, i) => (i === 7 ? NaN : i === 8 ? -Infinity : i === 9 ? -0 : i / 3)),
    ),
    { name: 'i64', datatype: 'INT64', shape: [n], data: Buffer.from(i64.buffer) },
    { name: 'u8', datatype: 'UINT8', shape: [1, n], data: Buffer.from(u8.buffer) },
    { name: 'bool', datatype: 'BOOL', shape: [n], data: Buffer.from(u8.map((v) => v % 2)) },
    strings(
      'text',
      Array.from({ length: n }, (_, i) => (i % 1000 === 0 ? 'quote " and \u2028 é' : `s${i}`)),
    ),
    { name: 'empty', datatype: 'INT32', shape: [0, 3], data: Buffer.alloc(0) },
    { name: 'half', datatype: 'FP16', shape: [2], data: Buffer.alloc(4) },
    {
      name: 'in_shm',
      datatype: 'FP32',
      shape: [4],
      data: Buffer.alloc(0),
      sharedMemory: { region: 'r', offset: 16, byteSize: 16 },
    },
  ];
  for (const format of [
    JSON_ONLY,
    { defaultBinary: false, binary: new Map([['u8', true]]) },
    { defaultBinary: true, binary: new Map([['floats', false]]) },
  ]) {
    const whole = encodeInferResponse(response(outputs), format);
    const { plan, pieces, json } = await sliced(response(outputs), format);
    assert.equal(json, whole.json);
    assert.equal(plan.hasBinary, whole.hasBinary);
    assert.deepEqual(plan.binary, whole.binary);
    JSON.parse(json.replace(/NaN|-?Infinity/g, '0')); // well-formed apart from Triton's literals
    // No piece holds more than one slice of elements.
    const longest = Math.max(...pieces.map((p) => p.length));
    assert.ok(longest < 40 * SLICE_ELEMENTS, `a piece of ${longest} characters`);
  }
});

test('BYTES that are not UTF-8 go as binary, as the whole encoder sends them', async () => {
  const n = SLICE_ELEMENTS + 3;
  const values: Buffer[] = Array.from({ length: n }, (_, i) => Buffer.from(`v${i}`));
  values[n - 1] = Buffer.from([0xff, 0xfe]);
  const r = response([strings('raw', values), fp32('f', [1, 2])]);
  const whole = encodeInferResponse(r, JSON_ONLY);
  const { plan, json } = await sliced(r, JSON_ONLY);
  assert.equal(plan.hasBinary, true);
  assert.equal(json, whole.json);
  assert.deepEqual(plan.binary, whole.binary);
});

test('an answer too large for JSON, or data that does not match its shape, is refused at planning', async () => {
  const big = fp32('big', new Array<number>(1000).fill(1));
  await assert.rejects(planJsonAnswer(response([big]), JSON_ONLY, 1500, noTurn), (err: unknown) => {
    assert.ok(err instanceof NereidError);
    assert.equal(err.code, 'INVALID_ARG');
    assert.match(err.message, /output 'big' is too large to be returned as JSON.*binary_data/);
    return true;
  });
  // As binary it fits: the limit is on JSON text only.
  const asBinary = await planJsonAnswer(
    response([big]),
    { defaultBinary: true, binary: new Map() },
    1500,
    noTurn,
  );
  assert.equal(asBinary.hasBinary, true);

  const short: OutputTensor = { name: 'short', datatype: 'INT32', shape: [10], data: Buffer.alloc(36) };
  await assert.rejects(planJsonAnswer(response([short]), JSON_ONLY, MAX_JSON_RESPONSE_BYTES, noTurn), {
    code: 'INTERNAL',
    message: /output tensor shape does not match size of output for 'short'/,
  });
  const badBytes: OutputTensor = { ...strings('s', ['a', 'b']), shape: [3] };
  await assert.rejects(planJsonAnswer(response([badBytes]), JSON_ONLY, MAX_JSON_RESPONSE_BYTES, noTurn), {
    code: 'INTERNAL',
  });
});

test('jsonElementCount counts only what is written as JSON text', () => {
  const r = response([
    fp32('a', [1, 2, 3]),
    { name: 'h', datatype: 'FP16', shape: [5], data: Buffer.alloc(10) },
    {
      name: 's',
      datatype: 'FP32',
      shape: [7],
      data: Buffer.alloc(0),
      sharedMemory: { region: 'r', offset: 0, byteSize: 28 },
    },
    fp32('b', [4]),
  ]);
  assert.equal(jsonElementCount(r, JSON_ONLY), 4);
  assert.equal(jsonElementCount(r, { defaultBinary: false, binary: new Map([['a', true]]) }), 1);
  assert.equal(jsonElementCount(r, { defaultBinary: true, binary: new Map() }), 0);
});
