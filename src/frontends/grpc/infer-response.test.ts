import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ALL_DATATYPES, byteSizeOf } from '../../common/datatype.js';
import type { OutputTensor } from '../../core/index.js';
import {
  SCATTER_MIN_BYTES,
  encodeInferResponse,
  encodeStreamResponse,
  type ResponseFields,
} from './infer-response.js';
import { decodeMessage } from './test-client.testkit.js';

/** Joins the pieces, checks the gRPC prefix and decodes the message with protobufjs. */
function unframe(pieces: Buffer[], type: string): Record<string, unknown> {
  const all = Buffer.concat(pieces);
  assert.equal(all[0], 0, 'not compressed');
  assert.equal(all.readUInt32BE(1), all.length - 5, 'prefix length');
  return decodeMessage(type, all.subarray(5));
}

interface PlainOutput {
  name: string;
  datatype: string;
  shape: string[];
  parameters: Record<string, Record<string, unknown>>;
}

const base = (outputs: OutputTensor[], parameters: ResponseFields['parameters'] = {}): ResponseFields => ({
  modelName: 'm',
  modelVersion: '2',
  id: 'req-1',
  parameters,
  outputs,
});

describe('encodeInferResponse', () => {
  it('writes every datatype into raw_output_contents, in output order', () => {
    const outputs: OutputTensor[] = ALL_DATATYPES.map((dt, i) => ({
      name: `OUT${i}`,
      datatype: dt,
      shape: [3, 1],
      data: randomBytes(dt === 'BYTES' ? 5 : 3 * byteSizeOf(dt)),
    }));
    const m = unframe(encodeInferResponse(base(outputs)), 'inference.ModelInferResponse');
    assert.equal(m.model_name, 'm');
    assert.equal(m.model_version, '2');
    assert.equal(m.id, 'req-1');
    const outs = m.outputs as PlainOutput[];
    const raws = m.raw_output_contents as Buffer[];
    assert.equal(outs.length, ALL_DATATYPES.length);
    outs.forEach((o, i) => {
      assert.equal(o.name, `OUT${i}`);
      assert.equal(o.datatype, ALL_DATATYPES[i]);
      assert.deepEqual(o.shape, ['3', '1']);
      assert.deepEqual(Buffer.from(raws[i]), outputs[i].data);
    });
  });

  it('writes response parameters with the matching InferParameter member', () => {
    const m = unframe(
      encodeInferResponse(
        base([], { b: true, f: false, i: -5, big: 2n ** 63n, neg: -(2n ** 62n), d: 0.5, s: 'x', e: '' }),
      ),
      'inference.ModelInferResponse',
    );
    assert.deepEqual(m.parameters, {
      b: { bool_param: true, parameter_choice: 'bool_param' },
      f: { bool_param: false, parameter_choice: 'bool_param' },
      i: { int64_param: '-5', parameter_choice: 'int64_param' },
      big: { uint64_param: '9223372036854775808', parameter_choice: 'uint64_param' },
      neg: { int64_param: '-4611686018427387904', parameter_choice: 'int64_param' },
      d: { double_param: 0.5, parameter_choice: 'double_param' },
      s: { string_param: 'x', parameter_choice: 'string_param' },
      e: { string_param: '', parameter_choice: 'string_param' },
    });
  });

  it('omits empty strings and keeps an empty raw entry for empty tensors and scalars', () => {
    const m = unframe(
      encodeInferResponse({
        modelName: 'm',
        modelVersion: '',
        id: '',
        parameters: {},
        outputs: [{ name: 'S', datatype: 'FP32', shape: [], data: Buffer.alloc(0) }],
      }),
      'inference.ModelInferResponse',
    );
    assert.equal(m.id, '');
    assert.deepEqual((m.outputs as PlainOutput[])[0].shape, []);
    assert.equal((m.raw_output_contents as Buffer[]).length, 1);
  });

  it('hands large tensors out by reference (no copy) and the pieces still form the message', () => {
    const big = randomBytes(SCATTER_MIN_BYTES * 4);
    const small = randomBytes(16);
    const pieces = encodeInferResponse(
      base([
        { name: 'BIG', datatype: 'UINT8', shape: [big.length], data: big },
        { name: 'SMALL', datatype: 'UINT8', shape: [16], data: small },
      ]),
    );
    assert.ok(pieces.includes(big), 'the tensor itself is one of the pieces');
    const m = unframe(pieces, 'inference.ModelInferResponse');
    const raws = m.raw_output_contents as Buffer[];
    assert.deepEqual(Buffer.from(raws[0]), big);
    assert.deepEqual(Buffer.from(raws[1]), small);
  });

  it('outputs in shared memory carry their region and an empty raw entry', () => {
    const m = unframe(
      encodeInferResponse(
        base([
          {
            name: 'O',
            datatype: 'FP32',
            shape: [4],
            data: Buffer.alloc(0),
            sharedMemory: { region: 'out', offset: 8, byteSize: 16 },
          },
          { name: 'P', datatype: 'FP32', shape: [1], data: Buffer.alloc(4, 1) },
        ]),
      ),
      'inference.ModelInferResponse',
    );
    const [o, p] = m.outputs as PlainOutput[];
    assert.deepEqual(o.parameters, {
      shared_memory_region: { string_param: 'out', parameter_choice: 'string_param' },
      shared_memory_offset: { int64_param: '8', parameter_choice: 'int64_param' },
      shared_memory_byte_size: { int64_param: '16', parameter_choice: 'int64_param' },
    });
    assert.deepEqual(p.parameters, {});
    const raws = m.raw_output_contents as Buffer[];
    assert.equal(raws.length, 2);
    assert.equal(raws[0].length, 0);
    assert.equal(raws[1].length, 4);
  });
});

describe('encodeStreamResponse', () => {
  it('wraps the response, and carries an error message with the request id', () => {
    const ok = unframe(
      encodeStreamResponse(
        '',
        base([{ name: 'O', datatype: 'INT32', shape: [1], data: Buffer.alloc(4, 2) }], {
          triton_final_response: true,
        }),
      ),
      'inference.ModelStreamInferResponse',
    );
    assert.equal(ok.error_message, '');
    const r = ok.infer_response as Record<string, unknown>;
    assert.equal(r.id, 'req-1');
    assert.deepEqual(r.parameters, {
      triton_final_response: { bool_param: true, parameter_choice: 'bool_param' },
    });
    const big = randomBytes(SCATTER_MIN_BYTES + 1);
    const scattered = unframe(
      encodeStreamResponse('', base([{ name: 'O', datatype: 'UINT8', shape: [big.length], data: big }])),
      'inference.ModelStreamInferResponse',
    );
    assert.deepEqual(
      Buffer.from(((scattered.infer_response as Record<string, unknown>).raw_output_contents as Buffer[])[0]),
      big,
    );

    const err = unframe(
      encodeStreamResponse('failed: ünïcode', {
        modelName: '',
        modelVersion: '',
        id: 'r9',
        parameters: {},
        outputs: [],
      }),
      'inference.ModelStreamInferResponse',
    );
    assert.equal(err.error_message, 'failed: ünïcode');
    assert.equal((err.infer_response as Record<string, unknown>).id, 'r9');
  });

  it('an empty infer_response is still present on the wire', () => {
    const pieces = encodeStreamResponse('e', {
      modelName: '',
      modelVersion: '',
      id: '',
      parameters: {},
      outputs: [],
    });
    const all = Buffer.concat(pieces);
    assert.deepEqual([...all.subarray(5)], [0x0a, 1, 0x65, 0x12, 0]);
  });
});
