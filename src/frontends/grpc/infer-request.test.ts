import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { ALL_DATATYPES, byteSizeOf } from '../../common/datatype.js';
import { NereidError } from '../../common/errors.js';
import { joinBytesElements } from '../../common/tensor.js';
import { parseInferRequest, toInferenceRequest, type ConvertedRequest } from './infer-request.js';
import { encodeMessage } from './test-client.testkit.js';

const REQUEST = 'inference.ModelInferRequest';

function decode(value: object): ConvertedRequest {
  return toInferenceRequest(parseInferRequest(encodeMessage(REQUEST, value)));
}

function invalid(fn: () => unknown, text: string | RegExp): void {
  assert.throws(fn, (e: unknown) => {
    if (!(e instanceof NereidError) || e.code !== 'INVALID_ARG') return false;
    return typeof text === 'string' ? e.message === text : text.test(e.message);
  });
}

const input = (name: string, datatype: string, shape: number[], extra: object = {}): object => ({
  name,
  datatype,
  shape,
  ...extra,
});

describe('ModelInferRequest: raw_input_contents', () => {
  it('carries every datatype as a view into the received message', () => {
    const inputs = ALL_DATATYPES.map((dt, i) => input(`IN${i}`, dt, [2, 3]));
    const raw = ALL_DATATYPES.map((dt) =>
      dt === 'BYTES' ? joinBytesElements(['a', 'bb', '', 'dddd', 'é', 'f']) : randomBytes(6 * byteSizeOf(dt)),
    );
    const message = encodeMessage(REQUEST, {
      model_name: 'm',
      model_version: '3',
      id: 'r1',
      inputs,
      raw_input_contents: raw,
    });
    const { request } = toInferenceRequest(parseInferRequest(message));
    assert.equal(request.modelName, 'm');
    assert.equal(request.modelVersion, '3');
    assert.equal(request.id, 'r1');
    assert.equal(request.outputs, undefined);
    assert.equal(request.inputs.length, ALL_DATATYPES.length);
    request.inputs.forEach((inp, i) => {
      assert.equal(inp.name, `IN${i}`);
      assert.equal(inp.datatype, ALL_DATATYPES[i]);
      assert.deepEqual(inp.shape, [2, 3]);
      assert.deepEqual(inp.data, raw[i]);
      assert.equal(inp.data.buffer, message.buffer, `${inp.datatype}: no copy`);
    });
  });

  it('reads shapes packed or unpacked, with negative and zero dims, and skips unknown fields', () => {
    const inner = protobuf.Writer.create();
    inner.uint32((1 << 3) | 2).string('IN');
    inner.uint32((2 << 3) | 2).string('FP32');
    for (const d of [0, -1, 7]) inner.uint32(3 << 3).int64(d); // unpacked shape
    inner.uint32((99 << 3) | 0).uint64(5); // unknown field
    const w = protobuf.Writer.create();
    w.uint32((5 << 3) | 2).bytes(inner.finish());
    w.uint32((7 << 3) | 2).bytes(Buffer.alloc(0));
    w.uint32((100 << 3) | 2).bytes(Buffer.from('future field'));
    const { request } = toInferenceRequest(parseInferRequest(Buffer.from(w.finish())));
    assert.deepEqual(request.inputs[0].shape, [0, -1, 7]);
  });

  it('refuses dims beyond 2^53', () => {
    invalid(
      () => decode({ inputs: [input('IN', 'FP32', [2 ** 60])], raw_input_contents: [Buffer.alloc(0)] }),
      /beyond/,
    );
  });

  it("Triton's errors for missing, mixed or mistyped data", () => {
    invalid(
      () =>
        decode({
          model_name: 'm',
          inputs: [input('A', 'FP32', [1]), input('B', 'FP32', [1])],
          raw_input_contents: [Buffer.alloc(4)],
        }),
      "unable to find data for input tensor 'B' for model 'm' in request.",
    );
    invalid(
      () =>
        decode({
          model_name: 'm',
          inputs: [input('A', 'FP32', [1], { contents: { fp32_contents: [1] } })],
          raw_input_contents: [Buffer.alloc(4)],
        }),
      "contents field must not be specified when using raw_input_contents for 'A' for model 'm'",
    );
    invalid(
      () =>
        decode({
          model_name: 'm',
          inputs: [input('A', 'FLOAT', [1])],
          raw_input_contents: [Buffer.alloc(4)],
        }),
      "inference input 'A' for model 'm' has invalid datatype 'FLOAT'",
    );
  });
});

describe('ModelInferRequest: typed contents', () => {
  it('converts typed contents of several inputs', () => {
    const { request } = decode({
      model_name: 'm',
      inputs: [
        input('A', 'INT8', [3], { contents: { int_contents: [-1, 2, 3] } }),
        input('B', 'BYTES', [2], { contents: { bytes_contents: [Buffer.from('x'), Buffer.from('yz')] } }),
        input('C', 'BOOL', [1], { contents: { bool_contents: [true] } }),
      ],
    });
    assert.deepEqual([...request.inputs[0].data], [255, 2, 3]);
    assert.deepEqual(request.inputs[1].data, joinBytesElements(['x', 'yz']));
    assert.deepEqual([...request.inputs[2].data], [1]);
  });
});

describe('ModelInferRequest: request parameters', () => {
  const withParams = (parameters: object): ConvertedRequest => decode({ model_name: 'm', parameters });

  it('keeps a parameter named __proto__ as a parameter (found by the fuzzer)', () => {
    const params = JSON.parse('{"__proto__":{"int64_param":"5"}}') as object;
    const { request } = decode({
      model_name: 'm',
      parameters: params,
      inputs: [
        input('x', 'INT32', [1], { parameters: JSON.parse('{"__proto__":{"bool_param":true}}') as object }),
      ],
      raw_input_contents: [Buffer.alloc(4)],
    });
    assert.equal(Object.getOwnPropertyDescriptor(request.parameters, '__proto__')?.value, 5);
    assert.equal(Object.getPrototypeOf(request.parameters), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(request.inputs[0].parameters, '__proto__')?.value, true);
  });

  it('passes well-known and custom parameters with their types', () => {
    const { request, enableEmptyFinalResponse } = withParams({
      sequence_id: { int64_param: '42' },
      sequence_start: { bool_param: true },
      sequence_end: { bool_param: false },
      priority: { uint64_param: '2' },
      timeout: { int64_param: '1000' },
      custom_b: { bool_param: false },
      custom_i: { int64_param: '-9007199254740993' },
      custom_s: { string_param: '' },
      custom_d: { double_param: 0.25 },
      custom_u: { uint64_param: '18446744073709551615' },
      triton_enable_empty_final_response: { bool_param: true },
    });
    assert.equal(enableEmptyFinalResponse, true);
    assert.deepEqual(request.parameters, {
      sequence_id: 42,
      sequence_start: true,
      sequence_end: false,
      priority: 2,
      timeout: 1000,
      custom_b: false,
      custom_i: -9007199254740993n,
      custom_s: '',
      custom_d: 0.25,
      custom_u: 18446744073709551615n,
    });
  });

  it('sequence_id as a string, a uint64, or a negative int64 (the same 64 bits unsigned)', () => {
    assert.equal(withParams({ sequence_id: { string_param: 'abc' } }).request.parameters?.sequence_id, 'abc');
    assert.equal(withParams({ sequence_id: { uint64_param: '7' } }).request.parameters?.sequence_id, 7);
    assert.equal(
      withParams({ sequence_id: { int64_param: '-1' } }).request.parameters?.sequence_id,
      2n ** 64n - 1n,
    );
  });

  it("Triton's errors for mistyped well-known parameters", () => {
    invalid(
      () => withParams({ sequence_id: { bool_param: true } }),
      "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    );
    invalid(
      () => withParams({ sequence_start: { int64_param: '1' } }),
      "invalid value type for 'sequence_start' parameter, expected bool_param.",
    );
    invalid(
      () => withParams({ priority: { int64_param: '-1' } }),
      "invalid value for 'priority', expected value >= 0.",
    );
    invalid(
      () => withParams({ priority: { string_param: 'high' } }),
      "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
    );
    invalid(
      () => withParams({ timeout: { uint64_param: '1' } }),
      "invalid value type for 'timeout' parameter, expected int64_param.",
    );
    invalid(
      () => withParams({ triton_foo: { bool_param: true } }),
      "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
    );
    invalid(
      () => withParams({ triton_enable_empty_final_response: { string_param: 'yes' } }),
      "invalid value type for 'triton_enable_empty_final_response' parameter, expected bool_param.",
    );
    invalid(
      () => withParams({ custom: {} }),
      "invalid value type for 'custom' parameter, expected int64_param, bool_param, or string_param.",
    );
  });
});

describe('ModelInferRequest: shared memory and outputs', () => {
  const shm = (region: object, offset?: object, size?: object): object => ({
    shared_memory_region: region,
    ...(offset && { shared_memory_offset: offset }),
    ...(size && { shared_memory_byte_size: size }),
  });

  it('turns shared-memory parameters into SharedMemoryRef, keeping other tensor parameters', () => {
    const { request } = decode({
      model_name: 'm',
      inputs: [
        input('A', 'FP32', [4], {
          parameters: {
            ...shm({ string_param: 'r0' }, { int64_param: '16' }, { int64_param: '16' }),
            note: { string_param: 'x' },
          },
        }),
        input('B', 'FP32', [1]),
      ],
      outputs: [
        { name: 'O', parameters: shm({ string_param: 'r1' }, undefined, { int64_param: '64' }) },
        { name: 'P', parameters: { classification: { int64_param: '3' } } },
        { name: 'Q' },
      ],
      raw_input_contents: [Buffer.alloc(4)], // consumed by B: A is in shared memory
    });
    const [a, b] = request.inputs;
    assert.deepEqual(a.sharedMemory, { region: 'r0', offset: 16, byteSize: 16 });
    assert.equal(a.data.length, 0);
    assert.deepEqual(a.parameters, { note: 'x' });
    assert.equal(b.data.length, 4);
    assert.deepEqual(request.outputs, [
      { name: 'O', sharedMemory: { region: 'r1', offset: 0, byteSize: 64 } },
      { name: 'P', parameters: { classification: 3 } },
      { name: 'Q' },
    ]);
  });

  it("Triton's shared-memory and classification errors", () => {
    const one = (parameters: object, contents?: object): ConvertedRequest =>
      decode({
        model_name: 'm',
        inputs: [input('A', 'FP32', [1], { parameters, ...(contents && { contents }) })],
      });
    invalid(
      () => one(shm({ int64_param: '1' }, undefined, { int64_param: '4' })),
      "invalid value type for 'shared_memory_region' parameter for tensor 'A', expected string_param.",
    );
    invalid(
      () => one({ shared_memory_offset: { int64_param: '0' } }),
      "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'A'",
    );
    invalid(
      () => one({ shared_memory_byte_size: { int64_param: '4' } }),
      "'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter for tensor 'A'",
    );
    invalid(
      () => one(shm({ string_param: 'r' })),
      "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor 'A'",
    );
    invalid(
      () => one(shm({ string_param: 'r' }, { string_param: '0' }, { int64_param: '4' })),
      "invalid value type for 'shared_memory_offset' parameter for tensor 'A', expected int64_param.",
    );
    invalid(
      () => one(shm({ string_param: 'r' }, undefined, { int64_param: '4' }), { fp32_contents: [1] }),
      "unexpected 'content' provided when using shared memory for input tensor 'A' for model 'm'",
    );
    const out = (parameters: object): ConvertedRequest =>
      decode({ model_name: 'm', outputs: [{ name: 'O', parameters }] });
    invalid(
      () => out({ classification: { string_param: '3' } }),
      "invalid value type for 'classification' parameter, expected int64_param",
    );
    invalid(
      () => out({ classification: { int64_param: '0' } }),
      "invalid value for 'classification' parameter, expected >= 0",
    );
    invalid(
      () =>
        out({
          classification: { int64_param: '2' },
          ...shm({ string_param: 'r' }, undefined, { int64_param: '4' }),
        }),
      "output can't set both 'shared_memory_region' and 'classification'",
    );
  });
});

describe('ModelInferRequest: hostile bytes', () => {
  const valid = encodeMessage(REQUEST, {
    model_name: 'simple',
    id: 'x',
    parameters: { sequence_id: { int64_param: '5' }, p: { double_param: 1.5 } },
    inputs: [
      input('A', 'INT32', [1, 4], { parameters: { k: { bool_param: true } } }),
      input('B', 'INT32', [1, 4], { contents: { int_contents: [1, 2, 3, 4] } }),
    ],
    outputs: [{ name: 'O', parameters: { classification: { int64_param: '1' } } }],
    raw_input_contents: [Buffer.alloc(16, 7)],
  });

  /** Parsing either succeeds or fails with INVALID_ARG: nothing else may escape. */
  function survives(bytes: Buffer): void {
    try {
      toInferenceRequest(parseInferRequest(bytes));
    } catch (e) {
      assert.ok(
        e instanceof NereidError && e.code === 'INVALID_ARG',
        `${String(e)} for ${bytes.toString('hex')}`,
      );
    }
  }

  it('every truncation fails cleanly', () => {
    for (let n = 0; n < valid.length; n++) survives(valid.subarray(0, n));
  });

  it('random corruptions fail cleanly', () => {
    for (let i = 0; i < 3000; i++) {
      const b = Buffer.from(valid);
      const flips = 1 + (i % 4);
      for (let k = 0; k < flips; k++) b[(i * 7919 + k * 104729) % b.length] = (i * 31 + k * 17) & 0xff;
      survives(b);
    }
    for (let i = 0; i < 500; i++) survives(randomBytes(1 + (i % 200)));
  });

  it('a huge declared length is refused without allocating', () => {
    const w = protobuf.Writer.create();
    w.uint32((7 << 3) | 2).uint64(String(2n ** 40n));
    invalid(
      () => parseInferRequest(Buffer.from(w.finish())),
      /malformed protobuf message: length 1099511627776 exceeds/,
    );
    const w2 = protobuf.Writer.create();
    w2.uint32((5 << 3) | 2).uint32(0xffffffff);
    invalid(() => parseInferRequest(Buffer.from(w2.finish())), /malformed protobuf message/);
  });
});
