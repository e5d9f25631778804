import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InferInput, InferRequestedOutput } from '../infer-input.js';
import {
  decodeInferResponse,
  encodeInferRequest,
  fromInferParameter,
  toInferParameter,
  type ModelInferRequestMsg,
  type ModelInferResponseMsg,
} from './infer-codec.js';
import { encodeMessage, messageType } from './proto.js';

/** Through the real wire format: encode with protobufjs, decode again. */
function wire(msg: ModelInferRequestMsg): ModelInferRequestMsg {
  const type = messageType('ModelInferRequest');
  return type.decode(encodeMessage(type, msg)) as unknown as ModelInferRequestMsg;
}

void test('parameters keep their type and exact 64-bit values through the wire', () => {
  const values = [true, false, 'text', 42, -7, 0.5, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n];
  const type = messageType('InferParameter');
  for (const v of values) {
    const decoded = type.decode(encodeMessage(type, toInferParameter(v)));
    assert.equal(fromInferParameter(decoded as never), v, String(v));
  }
  // Triton's clients send priority as uint64_param.
  assert.deepEqual(Object.keys(toInferParameter(3, true)), ['uint64_param']);
  // A number beyond 2^53 is a double: sent as one, never wrapped into int64 (found by the fuzzer).
  for (const v of [-9223372036854778000, 2 ** 64, 1e300, 2 ** 53]) {
    const decoded = type.decode(encodeMessage(type, toInferParameter(v)));
    assert.equal(fromInferParameter(decoded as never), v, String(v));
  }
});

void test('a parameter named __proto__ travels as a parameter (found by the fuzzer)', () => {
  const input = new InferInput('A', [1], 'INT32').setData([1]).setParameter('__proto__', 'in');
  assert.deepEqual(Object.keys(input.parameters), ['__proto__']);
  const out = new InferRequestedOutput('Y').setParameter('__proto__', 2);
  const msg = wire(
    encodeInferRequest('m', [input], {
      parameters: JSON.parse('{"__proto__":true}') as Record<string, boolean>,
      outputs: [out],
    }),
  );
  assert.deepEqual(Object.keys(msg.parameters), ['__proto__']);
  assert.deepEqual(Object.keys(msg.inputs[0].parameters ?? {}), ['__proto__']);
  assert.deepEqual(Object.keys(msg.outputs[0].parameters), ['__proto__']);
  // Names of Object.prototype's members are ordinary parameter names too.
  const named = wire(encodeInferRequest('m', [input], { parameters: { constructor: 1, toString: 'x' } }));
  assert.deepEqual(Object.keys(named.parameters).sort(), ['constructor', 'toString']);
});

void test('raw_input_contents by default, one entry per input with data, in input order', () => {
  const a = new InferInput('A', [2], 'INT32').setData([1, 2]);
  const shm = new InferInput('S', [2], 'INT32').setSharedMemory('r', 8);
  const b = new InferInput('B', [1], 'BYTES').setData(['xy']);
  const msg = wire(
    encodeInferRequest('m', [a, shm, b], {
      modelVersion: 2,
      requestId: 'id',
      sequenceId: 2n ** 64n - 1n,
      sequenceEnd: true,
      priority: 1,
      outputs: [new InferRequestedOutput('O', { classCount: 2 })],
    }),
  );
  assert.equal(msg.model_name, 'm');
  assert.equal(msg.model_version, '2');
  assert.equal(msg.id, 'id');
  assert.deepEqual(
    msg.raw_input_contents.map((b) => Buffer.from(b).toString('hex')),
    [a.data!.toString('hex'), b.data!.toString('hex')],
  );
  assert.equal(fromInferParameter(msg.parameters.sequence_id), 2n ** 64n - 1n);
  assert.equal(fromInferParameter(msg.parameters.sequence_end), true);
  assert.equal(fromInferParameter(msg.parameters.priority), 1);
  assert.equal(fromInferParameter(msg.inputs[1].parameters!.shared_memory_region), 'r');
  assert.equal(fromInferParameter(msg.outputs[0].parameters.classification), 2);
});

void test('typed contents when no input asks for binary; FP16 has no contents field', () => {
  const cases: [InferInput, string, unknown[]][] = [
    [
      new InferInput('b', [2], 'BOOL').setData([true, false], { binary: false }),
      'bool_contents',
      [true, false],
    ],
    [new InferInput('i8', [1], 'INT8').setData([-5], { binary: false }), 'int_contents', [-5]],
    [new InferInput('u16', [1], 'UINT16').setData([65535], { binary: false }), 'uint_contents', [65535]],
    [new InferInput('f', [1], 'FP32').setData([0.5], { binary: false }), 'fp32_contents', [0.5]],
    [new InferInput('d', [1], 'FP64').setData([Math.PI], { binary: false }), 'fp64_contents', [Math.PI]],
  ];
  const msg = wire(
    encodeInferRequest(
      'm',
      cases.map(([i]) => i),
      {},
    ),
  );
  assert.equal(msg.raw_input_contents.length, 0);
  cases.forEach(([, field, expected], k) => {
    assert.deepEqual((msg.inputs[k].contents as Record<string, unknown>)[field], expected, field);
  });
  const i64 = wire(
    encodeInferRequest(
      'm',
      [new InferInput('x', [1], 'INT64').setData([-(2n ** 63n)], { binary: false })],
      {},
    ),
  );
  const long = i64.inputs[0].contents!.int64_contents![0];
  assert.ok(typeof long === 'object');
  assert.equal(long.high | 0, -0x80000000);
  const half = new InferInput('h', [1], 'FP16').setData([1], { binary: false });
  assert.throws(() => encodeInferRequest('m', [half], {}), /FP16 has no typed gRPC contents/);
  // One binary input makes every input raw (Triton takes one form per request).
  const mixed = encodeInferRequest('m', [half.setData([1]), cases[0][0]], {});
  assert.equal(mixed.raw_input_contents.length, 2);
});

void test('responses: raw contents by output position, typed contents, parameters', () => {
  const type = messageType('ModelInferResponse');
  const raw = Buffer.from(new Int32Array([3, 4]).buffer);
  const bytes = encodeMessage(type, {
    model_name: 'm',
    model_version: '1',
    id: 'r',
    parameters: { triton_final_response: { bool_param: false } },
    outputs: [
      { name: 'R', datatype: 'INT32', shape: [2] },
      {
        name: 'C',
        datatype: 'INT64',
        shape: [1],
        contents: { int64_contents: [{ low: -1, high: 0x7fffffff }] },
      },
    ],
    raw_output_contents: [raw],
  });
  const r = decodeInferResponse(type.decode(bytes) as unknown as ModelInferResponseMsg);
  assert.deepEqual(r.asArray('R', 'INT32'), [3, 4]);
  assert.deepEqual(r.asArray('C', 'INT64'), [2n ** 63n - 1n]);
  assert.equal(r.final, false);
  assert.equal(r.id, 'r');
  const bad = encodeMessage(type, {
    outputs: [{ name: 'R', datatype: 'INT32', shape: [3] }],
    raw_output_contents: [raw],
  });
  assert.throws(() => decodeInferResponse(type.decode(bad) as unknown as ModelInferResponseMsg), /needs 12/);
});
