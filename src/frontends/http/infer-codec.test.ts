import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError, type ErrorCode } from '../../common/errors.js';
import { joinBytesElements, type Tensor } from '../../common/tensor.js';
import type { InferenceResponse } from '../../core/index.js';
import {
  decodeInferRequest,
  encodeInferResponse,
  inferenceHeaderLength,
  type OutputFormat,
} from './infer-codec.js';

const OPTS = { modelName: 'm', modelVersion: '', maxInputSize: 1 << 26 };

function decode(json: unknown, binary: Buffer[] = [], headerLength?: 'auto') {
  const head = Buffer.from(typeof json === 'string' ? json : JSON.stringify(json));
  const body = Buffer.concat([head, ...binary]);
  return decodeInferRequest(
    body,
    headerLength === 'auto' || binary.length > 0 ? head.length : undefined,
    OPTS,
  );
}

function rejects(fn: () => unknown, message: string | RegExp, code: ErrorCode = 'INVALID_ARG'): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof NereidError, String(err));
    assert.equal(err.code, code);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

function f32(...v: number[]): Buffer {
  const b = Buffer.alloc(4 * v.length);
  v.forEach((x, i) => b.writeFloatLE(x, 4 * i));
  return b;
}

void test('JSON request: id, parameters, inputs, outputs and formats', () => {
  const { request, format } = decode({
    id: 'r1',
    parameters: {
      sequence_id: 7,
      sequence_start: true,
      sequence_end: false,
      priority: 2,
      timeout: 100,
      custom: 'x',
      d: 0.5,
      binary_data_output: true,
    },
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [2], data: [1, 2], parameters: { note: 'n' } }],
    outputs: [{ name: 'A', parameters: { binary_data: false, classification: 3 } }, { name: 'B' }],
  });
  assert.equal(request.modelName, 'm');
  assert.equal(request.id, 'r1');
  assert.deepEqual(request.parameters, {
    sequence_id: 7,
    sequence_start: true,
    sequence_end: false,
    priority: 2,
    timeout: 100,
    custom: 'x',
    d: 0.5,
  });
  assert.equal(request.inputs.length, 1);
  const input = request.inputs[0];
  assert.deepEqual([input.name, input.datatype, input.shape], ['IN', 'FP32', [2]]);
  assert.deepEqual(input.data, f32(1, 2));
  assert.deepEqual(input.parameters, { note: 'n' });
  assert.deepEqual(request.outputs, [{ name: 'A', parameters: { classification: 3 } }, { name: 'B' }]);
  assert.equal(format.defaultBinary, true);
  assert.deepEqual([...format.binary], [['A', false]]);
});

void test('binary inputs are views into the body, sliced in JSON order', () => {
  const a = f32(1, 2, 3);
  const b = joinBytesElements(['x', 'yz']);
  const head = {
    inputs: [
      { name: 'A', datatype: 'FP32', shape: [3], parameters: { binary_data_size: a.length } },
      { name: 'J', datatype: 'INT32', shape: [1], data: [5] },
      { name: 'E', datatype: 'FP32', shape: [0], parameters: { binary_data_size: 0 } },
      { name: 'B', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: b.length } },
    ],
  };
  const headBuf = Buffer.from(JSON.stringify(head));
  const body = Buffer.concat([headBuf, a, b]);
  const { request } = decodeInferRequest(body, headBuf.length, OPTS);
  const [A, J, E, B] = request.inputs;
  assert.deepEqual(A.data, a);
  assert.equal(A.data.buffer, body.buffer, 'binary input must be a view, not a copy');
  assert.equal(A.data.byteOffset, body.byteOffset + headBuf.length);
  assert.equal(J.data.readInt32LE(0), 5);
  assert.equal(E.data.length, 0);
  assert.deepEqual(B.data, b);
  assert.equal(B.data.buffer, body.buffer);
  assert.equal(A.parameters, undefined, 'binary_data_size is frontend-only');
});

void test('binary framing errors use Triton wording', () => {
  const a = f32(1, 2);
  const head = {
    inputs: [{ name: 'A', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 12 } }],
  };
  rejects(
    () => decode(head, [a]),
    "unexpected size for input 'A', expecting 4 additional bytes for model 'm'",
  );
  const head2 = {
    inputs: [{ name: 'A', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 4 } }],
  };
  rejects(() => decode(head2, [a]), "unexpected additional input data for model 'm'");
  rejects(
    () => decode(head2),
    "must specify valid 'Inference-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
  );
  rejects(
    () =>
      decode(
        { inputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters: { binary_data_size: -1 } }] },
        [a],
      ),
    "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
  );
});

void test('each input sets exactly one of data / binary_data_size / shared_memory_region', () => {
  const base =
    "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But";
  rejects(() => decode({ inputs: [{ name: 'A', datatype: 'FP32', shape: [1] }] }), `${base} no field is set`);
  rejects(
    () =>
      decode(
        {
          inputs: [
            { name: 'A', datatype: 'FP32', shape: [1], data: [1], parameters: { binary_data_size: 4 } },
          ],
        },
        [f32(1)],
      ),
    `${base} set 'data' 'binary_data_size'`,
  );
  rejects(
    () =>
      decode({
        inputs: [
          {
            name: 'A',
            datatype: 'FP32',
            shape: [1],
            data: [1],
            parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 },
          },
        ],
      }),
    `${base} set 'data' 'shared_memory_region'`,
  );
});

void test('shared-memory inputs and outputs decode to core references', () => {
  const { request, format } = decode({
    inputs: [
      {
        name: 'A',
        datatype: 'FP32',
        shape: [1, 4],
        parameters: {
          shared_memory_region: 'in',
          shared_memory_offset: 8,
          shared_memory_byte_size: 16,
          note: 'kept',
        },
      },
      {
        name: 'B',
        datatype: 'FP32',
        shape: [1],
        parameters: { shared_memory_region: 'in', shared_memory_byte_size: 4 },
      },
    ],
    outputs: [
      {
        name: 'Y',
        parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64, binary_data: false },
      },
      { name: 'Z' },
    ],
  });
  assert.deepEqual(request.inputs[0], {
    name: 'A',
    datatype: 'FP32',
    shape: [1, 4],
    data: Buffer.alloc(0),
    sharedMemory: { region: 'in', offset: 8, byteSize: 16 },
    parameters: { note: 'kept' },
  });
  assert.deepEqual(request.inputs[1].sharedMemory, { region: 'in', offset: 0, byteSize: 4 });
  assert.deepEqual(request.outputs, [
    { name: 'Y', sharedMemory: { region: 'out', offset: 0, byteSize: 64 } },
    { name: 'Z' },
  ]);
  assert.equal(format.binary.get('Y'), false);

  // Values beyond 2^53 pass through (rounded): the core finds them out of bounds with Triton's messages.
  const big = decode(
    '{"inputs":[],"outputs":[{"name":"Y","parameters":{"shared_memory_region":"out",' +
      '"shared_memory_offset":18446744073709551584,"shared_memory_byte_size":18446744073709551584}}]}',
  );
  const ref = big.request.outputs?.[0].sharedMemory;
  assert.ok(
    ref !== undefined && ref.offset > Number.MAX_SAFE_INTEGER && ref.byteSize > Number.MAX_SAFE_INTEGER,
  );
});

void test('shared-memory parameter errors use Triton wording', () => {
  const input = (parameters: Record<string, unknown>) => ({
    inputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters }],
  });
  const output = (parameters: Record<string, unknown>) => ({
    inputs: [],
    outputs: [{ name: 'Y', parameters }],
  });
  rejects(
    () => decode(input({ shared_memory_region: 'r' })),
    "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor 'A'",
  );
  rejects(
    () => decode(output({ shared_memory_byte_size: 4 })),
    "'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter for tensor 'Y'",
  );
  rejects(
    () => decode(output({ shared_memory_offset: 4 })),
    "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'Y'",
  );
  rejects(
    () => decode(input({ shared_memory_region: 7, shared_memory_byte_size: 4 })),
    "Unable to parse 'shared_memory_region': attempt to access JSON non-string as string",
  );
  for (const bad of [-1, 1.5, 'x', true]) {
    rejects(
      () => decode(input({ shared_memory_region: 'r', shared_memory_byte_size: bad })),
      "Unable to parse 'shared_memory_byte_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    rejects(
      () =>
        decode(output({ shared_memory_region: 'r', shared_memory_byte_size: 4, shared_memory_offset: bad })),
      "Unable to parse 'shared_memory_offset': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
  }
  rejects(
    () => decode(output({ shared_memory_region: 'r', shared_memory_byte_size: 4, classification: 2 })),
    "Output can't set both 'shared_memory_region' and 'classification'",
  );
  rejects(
    () => decode(output({ shared_memory_region: 'r', shared_memory_byte_size: 4, binary_data: true })),
    "Output can't set both 'shared_memory_region' and 'binary_data'",
  );
});

void test('structural errors name the field', () => {
  rejects(
    () => decode('[]'),
    "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
  );
  rejects(
    () => decode({}),
    "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
  );
  rejects(
    () => decode({ inputs: {} }),
    "Unable to parse 'inputs': attempt to access JSON non-array as array",
  );
  rejects(
    () => decode({ id: 5, inputs: [] }),
    "Unable to parse 'id': attempt to access JSON non-string as string",
  );
  rejects(
    () => decode({ inputs: [{ datatype: 'FP32', shape: [1], data: [1] }] }),
    "Unable to parse 'name': attempt to access non-existing object member 'name'",
  );
  rejects(
    () => decode({ inputs: [{ name: 'A', datatype: 'FP33', shape: [1], data: [1] }] }),
    "invalid datatype for input A (got 'FP33')",
  );
  rejects(
    () => decode({ inputs: [{ name: 'A', datatype: 'FP32', data: [1] }] }),
    "Unable to parse 'shape': attempt to access non-existing object member 'shape'",
  );
  rejects(
    () => decode({ inputs: [{ name: 'A', datatype: 'FP32', shape: [1], data: 1 }] }),
    "Unable to parse 'data': attempt to access JSON non-array as array",
  );
  rejects(
    () => decode({ inputs: [], outputs: [{ name: 'O', parameters: { binary_data: 1 } }] }),
    "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
  );
  rejects(
    () => decode({ inputs: [], outputs: [{ name: 'O', parameters: { classification: -2 } }] }),
    "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
  );
  rejects(() => decode('{"inputs": [1,]}'), 'failed to parse the request JSON buffer: Invalid value. at 14');
});

void test('a number too big for a double in FP data is refused as Triton does, where JSON.parse took it', () => {
  const text = '{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":[1,1e400]}]}';
  rejects(
    () => decode(text),
    `failed to parse the request JSON buffer: Number too big to be stored in double. at ${text.indexOf('1e400')}`,
  );
  // Infinity spelled as rapidjson's literal is data.
  const { request } = decode('{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":[1,-Infinity]}]}');
  assert.deepEqual(request.inputs[0].data, f32(1, -Infinity));
});

void test('shape: negative dims, element count overflow, byte size overflow (A.13 messages)', () => {
  rejects(
    () => decode({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2, -5], data: [1] }] }),
    "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
  );
  // 2^4 * (2^60 + 2) overflows int64 (written as text so the exact value reaches the parser)
  rejects(
    () =>
      decode(
        '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[16,1152921504606846978],"data":[1.0]}]}',
      ),
    "invalid shape for input 'INPUT0': shape [16,1152921504606846978] causes total element count to exceed maximum size of 9223372036854775807",
  );
  // 2^2 * (2^60 + 2) fits int64 as a count but not as FP32 bytes
  rejects(
    () =>
      decode('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4,1152921504606846978],"data":[1.0]}]}'),
    "byte size overflow for input 'INPUT0': element count (4611686018427387912) * data type size (4) exceeds maximum allowed size (9223372036854775807)",
  );
  rejects(
    () =>
      decode(
        {
          inputs: [
            { name: 'X', datatype: 'FP32', shape: [2 ** 40, 2 ** 20], parameters: { binary_data_size: 0 } },
          ],
        },
        [],
        'auto',
      ),
    "invalid shape for input 'X': shape [1099511627776,1048576] causes total element count to exceed maximum size of 9007199254740991",
  );
  rejects(
    () =>
      decode(
        '{"inputs":[{"name":"X","datatype":"FP32","shape":[0,9007199254740993],"parameters":{"binary_data_size":0}}]}',
        [],
        'auto',
      ),
    "invalid shape for input 'X': shape [0,9007199254740993] has a dimension larger than the maximum supported value of 9007199254740991",
  );
});

void test('64-bit precision: INT64 data and sequence_id beyond 2^53 arrive exact', () => {
  const { request } = decode(
    '{"parameters":{"sequence_id":18446744073709551615,"big":-9223372036854775808},' +
      '"inputs":[{"name":"A","datatype":"INT64","shape":[2],"data":[9007199254740993,-9223372036854775808]},' +
      '{"name":"B","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}]}',
  );
  assert.equal(request.parameters?.sequence_id, 18446744073709551615n);
  assert.equal(request.parameters?.big, -9223372036854775808n);
  assert.equal(request.inputs[0].data.readBigInt64LE(0), 9007199254740993n);
  assert.equal(request.inputs[0].data.readBigInt64LE(8), -9223372036854775808n);
  assert.equal(request.inputs[1].data.readBigUInt64LE(0), 18446744073709551615n);
  // a string correlation id passes through as a string
  assert.equal(
    decode({ parameters: { sequence_id: 'abc' }, inputs: [] }).request.parameters?.sequence_id,
    'abc',
  );
  // a double written with an exponent stays a double for custom parameters
  assert.equal(decode('{"parameters":{"d":1e20},"inputs":[]}').request.parameters?.d, 1e20);
});

void test('request parameter rules', () => {
  rejects(
    () => decode({ parameters: { sequence_id: -1 }, inputs: [] }),
    "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
  );
  rejects(
    () => decode({ parameters: { sequence_start: 1 }, inputs: [] }),
    "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
  );
  rejects(
    () => decode({ parameters: { priority: 'high' }, inputs: [] }),
    "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
  );
  rejects(
    () => decode({ parameters: { binary_data_output: 'yes' }, inputs: [] }),
    "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
  );
  rejects(
    () => decode({ parameters: { triton_enable_empty_final_response: true }, inputs: [] }),
    "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
  );
  rejects(
    () => decode({ parameters: { obj: { a: 1 } }, inputs: [] }),
    "parameter 'obj' has invalid type. It should be either 'int', 'bool', or 'string'.",
  );
  rejects(
    () => decode({ parameters: [], inputs: [] }),
    "Unable to parse 'parameters': attempt to access JSON non-object as object",
  );
});

void test('a parameter named __proto__ is kept as a parameter (found by the fuzzer)', () => {
  // JSON.parse makes "__proto__" an ordinary member; assigning it to a plain object changed the object's
  // prototype instead, so the parameter vanished.
  const text =
    '{"parameters":{"__proto__":1},"inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":[1],' +
    '"parameters":{"__proto__":"a"}}],"outputs":[{"name":"y","parameters":{"__proto__":true}}]}';
  const { request } = decode(text);
  assert.deepEqual(Object.keys(request.parameters ?? {}), ['__proto__']);
  assert.equal(Object.getOwnPropertyDescriptor(request.parameters, '__proto__')?.value, 1);
  assert.equal(Object.getPrototypeOf(request.parameters), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(request.inputs[0].parameters, '__proto__')?.value, 'a');
  assert.equal(Object.getOwnPropertyDescriptor(request.outputs?.[0].parameters, '__proto__')?.value, true);
});

void test('duplicate requested output', () => {
  rejects(
    () => decode({ inputs: [], outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }),
    "output 'OUTPUT0' already exists in request",
  );
});

void test('JSON header larger than the input limit', () => {
  const body = Buffer.from(JSON.stringify({ inputs: [] }));
  assert.throws(
    () => decodeInferRequest(body, undefined, { ...OPTS, maxInputSize: 5 }),
    /^NereidError: request JSON size of 13 bytes exceeds the maximum allowed input size of 5 bytes\. Use --http-max-input-size to increase the limit\.$/,
  );
});

function response(outputs: Tensor[], extra: Partial<InferenceResponse> = {}): InferenceResponse {
  return { modelName: 'm', modelVersion: '1', id: '', outputs, parameters: {}, final: true, ...extra };
}
const JSON_ONLY: OutputFormat = { defaultBinary: false, binary: new Map() };

void test('JSON response: id, version, parameters, every output as data', () => {
  const out = encodeInferResponse(
    response(
      [
        { name: 'A', datatype: 'INT32', shape: [2], data: Buffer.from([1, 0, 0, 0, 255, 255, 255, 255]) },
        { name: 'S', datatype: 'BYTES', shape: [1, 1], data: joinBytesElements(['hi']) },
      ],
      { id: 'r9', parameters: { sequence_id: 18446744073709551615n, flag: true, note: 'x' } },
    ),
    JSON_ONLY,
  );
  assert.equal(out.hasBinary, false);
  assert.equal(out.binary.length, 0);
  assert.equal(
    out.json,
    '{"id":"r9","model_name":"m","model_version":"1","parameters":{"sequence_id":18446744073709551615,"flag":true,"note":"x"},' +
      '"outputs":[{"name":"A","datatype":"INT32","shape":[2],"data":[1,-1]},{"name":"S","datatype":"BYTES","shape":[1,1],"data":["hi"]}]}',
  );
});

void test('binary and mixed responses: binary_data per output overrides binary_data_output', () => {
  const a: Tensor = { name: 'A', datatype: 'FP32', shape: [2], data: f32(1, 2) };
  const b: Tensor = { name: 'B', datatype: 'INT8', shape: [3], data: Buffer.from([1, 2, 3]) };
  const mixed = encodeInferResponse(response([a, b]), {
    defaultBinary: true,
    binary: new Map([['B', false]]),
  });
  assert.equal(mixed.hasBinary, true);
  assert.equal(mixed.binary.length, 1);
  assert.equal(mixed.binary[0], a.data, 'binary output is the tensor Buffer itself');
  assert.deepEqual(JSON.parse(mixed.json), {
    model_name: 'm',
    model_version: '1',
    outputs: [
      { name: 'A', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } },
      { name: 'B', datatype: 'INT8', shape: [3], data: [1, 2, 3] },
    ],
  });
  const perOutput = encodeInferResponse(response([a, b]), {
    defaultBinary: false,
    binary: new Map([['B', true]]),
  });
  assert.deepEqual(perOutput.binary, [b.data]);
  assert.match(perOutput.json, /"name":"A","datatype":"FP32","shape":\[2\],"data":\[1,2\]/);
});

void test('outputs without a JSON form are sent binary even when JSON was asked', () => {
  const half: Tensor = { name: 'H', datatype: 'FP16', shape: [1], data: Buffer.from([0, 0x3c]) };
  const raw: Tensor = {
    name: 'R',
    datatype: 'BYTES',
    shape: [1],
    data: joinBytesElements([Buffer.from([0xc3, 0x28])]),
  };
  const out = encodeInferResponse(response([half, raw]), JSON_ONLY);
  assert.equal(out.hasBinary, true);
  assert.deepEqual(out.binary, [half.data, raw.data]);
  assert.match(out.json, /"name":"H","datatype":"FP16","shape":\[1\],"parameters":\{"binary_data_size":2\}/);
  assert.match(out.json, /"name":"R","datatype":"BYTES","shape":\[1\],"parameters":\{"binary_data_size":6\}/);
});

void test('an empty binary output has size 0 and no chunk', () => {
  const out = encodeInferResponse(
    response([{ name: 'E', datatype: 'FP32', shape: [0], data: Buffer.alloc(0) }]),
    {
      defaultBinary: true,
      binary: new Map(),
    },
  );
  assert.equal(out.hasBinary, true);
  assert.equal(out.binary.length, 0);
  assert.match(out.json, /"binary_data_size":0/);
});

void test('an output written to shared memory has parameters and neither data nor a binary blob', () => {
  const out = encodeInferResponse(
    response([
      {
        name: 'Y',
        datatype: 'FP32',
        shape: [2],
        data: Buffer.alloc(0),
        sharedMemory: { region: 'out', offset: 0, byteSize: 8 },
      },
      {
        name: 'W',
        datatype: 'FP32',
        shape: [1],
        data: Buffer.alloc(0),
        sharedMemory: { region: 'out', offset: 8, byteSize: 4 },
      },
      { name: 'Z', datatype: 'FP32', shape: [1], data: f32(3) },
    ] as Tensor[]),
    { defaultBinary: true, binary: new Map() },
  );
  assert.deepEqual(out.binary, [f32(3)]);
  assert.deepEqual((JSON.parse(out.json) as { outputs: unknown }).outputs, [
    {
      name: 'Y',
      datatype: 'FP32',
      shape: [2],
      parameters: { shared_memory_region: 'out', shared_memory_byte_size: 8 },
    },
    {
      name: 'W',
      datatype: 'FP32',
      shape: [1],
      parameters: { shared_memory_region: 'out', shared_memory_offset: 8, shared_memory_byte_size: 4 },
    },
    { name: 'Z', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } },
  ]);
});

void test('Inference-Header-Content-Length is read as Triton reads it (std::stoi, then 0..body length)', () => {
  // Absent: the whole body is JSON, and an empty body is a raw request (header length = content length 0).
  assert.equal(inferenceHeaderLength(undefined, 13), undefined);
  assert.equal(inferenceHeaderLength(undefined, 0), 0);
  assert.equal(inferenceHeaderLength('13', 13), 13);
  assert.equal(inferenceHeaderLength('0', 13), 0);
  assert.equal(inferenceHeaderLength('-0', 13), 0);
  assert.equal(inferenceHeaderLength('+5', 13), 5);
  assert.equal(inferenceHeaderLength('5abc', 13), 5);
  assert.equal(inferenceHeaderLength('0000000000000000000007', 13), 7);
  const range = (got: string) => `inference header size should be in range (0, 13), got: ${got}`;
  rejects(() => inferenceHeaderLength('-5', 13), range('-5'));
  rejects(() => inferenceHeaderLength('14', 13), range('14'));
  rejects(() => inferenceHeaderLength('2147483647', 13), range('2147483647'));
  rejects(() => inferenceHeaderLength('-2147483648', 13), range('-2147483648'));
  const outOfInt = (got: string) =>
    'Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], ' +
    `got: ${got}`;
  rejects(() => inferenceHeaderLength('2147483648', 13), outOfInt('2147483648'));
  rejects(() => inferenceHeaderLength('-99999999999', 13), outOfInt('-99999999999'));
  rejects(() => inferenceHeaderLength('9'.repeat(400), 13), outOfInt('9'.repeat(400)));
  for (const bad of ['abc', '', '-', '+', 'x5']) {
    rejects(
      () => inferenceHeaderLength(bad, 13),
      `Unable to parse Inference-Header-Content-Length, got: ${bad}`,
    );
  }
});

void test('a header seen before decodes to a request of its own: nothing shared, its own tensor bytes', () => {
  const int32 = (...v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
  const header = Buffer.from(
    JSON.stringify({
      parameters: { q: 1 },
      inputs: [{ name: 'A', datatype: 'INT32', shape: [2], parameters: { binary_data_size: 8, p: 'x' } }],
      outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
    }),
  );
  const first = decodeInferRequest(Buffer.concat([header, int32(1, 2)]), header.length, OPTS);
  // What a caller does with its request must not reach the next request with the same header.
  (first.request.inputs[0].shape as number[])[0] = 99;
  (first.request.inputs[0].parameters as Record<string, unknown>).p = 'changed';
  (first.request.parameters as Record<string, unknown>).q = 2;
  (first.format.binary as Map<string, boolean>).set('OUT', false);

  const second = decodeInferRequest(Buffer.concat([header, int32(3, 4)]), header.length, OPTS);
  assert.deepEqual(second.request.inputs[0].shape, [2]);
  assert.equal(second.request.inputs[0].parameters?.p, 'x');
  assert.equal(second.request.parameters?.q, 1);
  assert.equal(second.format.binary.get('OUT'), true);
  assert.deepEqual(second.request.inputs[0].data, int32(3, 4));
  assert.notEqual(second.request.inputs[0], first.request.inputs[0]);
});

void test('a remembered header is compared by its bytes, not by the buffer it came in', () => {
  const headerOf = (name: string): Buffer =>
    Buffer.from(
      JSON.stringify({
        inputs: [{ name, datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } }],
      }),
    );
  const a = headerOf('AAAA');
  const b = headerOf('BBBB');
  assert.equal(a.length, b.length);
  const body = Buffer.concat([a, f32(1)]);
  assert.equal(decodeInferRequest(body, a.length, OPTS).request.inputs[0].name, 'AAAA');
  // The body's buffer is reused for the next request (as a pooled buffer may be): the header of the first
  // must not now read as the second's.
  b.copy(body, 0);
  assert.equal(decodeInferRequest(body, b.length, OPTS).request.inputs[0].name, 'BBBB');
  assert.equal(decodeInferRequest(Buffer.concat([a, f32(2)]), a.length, OPTS).request.inputs[0].name, 'AAAA');
});

void test('an output too large for a JSON answer is refused with INVALID_ARG naming binary data (issue 33)', () => {
  const isTooLarge = (e: unknown): boolean =>
    e instanceof NereidError && e.code === 'INVALID_ARG' && /binary_data/.test(e.message);
  // 300 M elements: refused from the shape, before a byte of JSON is built (no 500 "Invalid array length").
  const huge: Tensor = { name: 'OUT', datatype: 'INT32', shape: [300_000_000], data: Buffer.alloc(4) };
  assert.throws(() => encodeInferResponse(response([huge]), JSON_ONLY), isTooLarge);
  // Over a small limit once formatted: 1000 INT32 values of -1 are 3000 bytes of JSON text.
  const values: Tensor = { name: 'V', datatype: 'INT32', shape: [1000], data: Buffer.alloc(4000, 255) };
  assert.throws(() => encodeInferResponse(response([values]), JSON_ONLY, 2500), isTooLarge);
  // The same output as binary data fits whatever the JSON limit.
  const binary = encodeInferResponse(response([values]), { defaultBinary: true, binary: new Map() }, 100);
  assert.equal(binary.binary[0].length, 4000);
  // Under the limit it is answered as before.
  const fits = JSON.parse(encodeInferResponse(response([values]), JSON_ONLY, 5000).json) as {
    outputs: { data: number[] }[];
  };
  assert.equal(fits.outputs[0].data[0], -1);
});

void test('non-finite floats in JSON are written as Triton writes them: NaN, Infinity, -Infinity', () => {
  const t: Tensor = { name: 'F', datatype: 'FP32', shape: [3], data: f32(NaN, Infinity, -Infinity) };
  const out = encodeInferResponse(response([t]), JSON_ONLY);
  assert.match(out.json, /"data":\[NaN,Infinity,-Infinity\]/);
});
