// The generate extension's JSON mapping against Triton's rules (http_server.cc): keys in document order,
// inputs shaped from the model metadata, everything else a parameter, flat sorted responses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { joinBytesElements } from '../../common/tensor.js';
import type { InferenceResponse, ModelMetadata } from '../../core/index.js';
import { generateResponseJson, parseGenerateRequest, shapeFor, topLevelKeys } from './generate-codec.js';

const META: ModelMetadata = {
  name: 'llm',
  versions: ['1'],
  platform: 'python',
  inputs: [
    { name: 'text_input', datatype: 'BYTES', shape: [1, 1] },
    { name: 'STREAM', datatype: 'BOOL', shape: [1] },
    { name: 'IDS', datatype: 'INT64', shape: [-1, -1] },
    { name: 'COUNT', datatype: 'UINT32', shape: [1] },
    { name: 'SCORES', datatype: 'FP32', shape: [-1, 2] },
  ],
  outputs: [],
};
const LIMIT = 1 << 20;
const parse = (text: string, limit = LIMIT) => parseGenerateRequest(text, META, limit);

describe('topLevelKeys', () => {
  it('lists the top-level keys in order, repeats included, skipping nested values', () => {
    assert.deepEqual(
      topLevelKeys(' {"a": 1, "b": {"a": [1, {"c": "}"}]}, "a\\"q": "x,y", "b": [], "e": null} '),
      ['a', 'b', 'a"q', 'b', 'e'],
    );
    assert.deepEqual(topLevelKeys('{}'), []);
    assert.deepEqual(topLevelKeys('[1]'), []);
  });

  it('skips a leading byte order mark, as the JSON parser does (found by the fuzzer)', () => {
    assert.deepEqual(topLevelKeys('\uFEFF{"a": 1, "a": 2}'), ['a', 'a']);
    // Before the fix the body parsed but its keys were not seen: the input and parameter were dropped.
    const r = parse('\uFEFF{"text_input": "hi", "temperature": 9007199254740993}');
    assert.deepEqual(
      r.inputs.map((i) => i.name),
      ['text_input'],
    );
    assert.deepEqual(r.parameters, { temperature: 9007199254740993n });
  });

  it('keeps a parameter named __proto__ (found by the fuzzer)', () => {
    const r = parse('{"__proto__": 1}');
    assert.equal(Object.getOwnPropertyDescriptor(r.parameters, '__proto__')?.value, 1);
    assert.equal(Object.getPrototypeOf(r.parameters), Object.prototype);
  });
});

describe('shapeFor', () => {
  it('fills -1 dims as Triton does: fixed dims divide, the innermost -1 takes the rest', () => {
    assert.deepEqual(shapeFor('x', [-1, -1], 6), [1, 6]);
    assert.deepEqual(shapeFor('x', [-1, 2], 6), [3, 2]);
    assert.deepEqual(shapeFor('x', [1, 1], 1), [1, 1]);
    assert.deepEqual(shapeFor('x', [-1], 0), [0]);
    assert.throws(() => shapeFor('x', [-1, 4], 6), {
      message: "The schema can not convert input 'x' to tensor with proper shape",
    });
    assert.throws(() => shapeFor('x', [1], 2), /can not convert input 'x'/);
  });
});

describe('parseGenerateRequest', () => {
  it('maps inputs by name and everything else to parameters', () => {
    const r = parse(
      '{"id": "r1", "text_input": "hi", "STREAM": true, "IDS": [1, 2, 3], "temperature": 0.5, ' +
        '"parameters": {"COUNT": 7, "max_tokens": 16, "stop": "x"}}',
    );
    assert.equal(r.id, 'r1');
    assert.deepEqual(r.parameters, { id: 'r1', temperature: 0.5, max_tokens: 16, stop: 'x' });
    const byName = new Map(r.inputs.map((i) => [i.name, i]));
    assert.deepEqual(byName.get('text_input'), {
      name: 'text_input',
      datatype: 'BYTES',
      shape: [1, 1],
      data: joinBytesElements(['hi']),
    });
    assert.deepEqual(byName.get('STREAM')?.data, Buffer.from([1]));
    assert.deepEqual(byName.get('IDS')?.shape, [1, 3]);
    assert.equal(byName.get('IDS')?.data.readBigInt64LE(16), 3n);
    assert.equal(byName.get('COUNT')?.data.readUInt32LE(0), 7);
  });

  it('keeps 64-bit integers beyond 2^53 exact', () => {
    const r = parse('{"IDS": [9007199254740993, -9223372036854775808], "seed": 18446744073709551615}');
    assert.equal(r.inputs[0].data.readBigInt64LE(0), 9007199254740993n);
    assert.equal(r.inputs[0].data.readBigInt64LE(8), -9223372036854775808n);
    assert.equal(r.parameters.seed, 18446744073709551615n);
  });

  it("refuses values of the wrong JSON type with TritonJson's words", () => {
    assert.throws(() => parse('{"text_input": 1}'), {
      message: 'attempt to access JSON non-string as string',
    });
    assert.throws(() => parse('{"STREAM": "false"}'), {
      code: 'INVALID_ARG',
      message: 'attempt to access JSON non-boolean as boolean',
    });
    assert.throws(() => parse('{"COUNT": -1}'), /non-unsigned-integer as unsigned-integer/);
    assert.throws(() => parse('{"IDS": [1.5]}'), /non-signed-integer as signed-integer/);
    assert.throws(() => parse('{"SCORES": ["a", "b"]}'), /non-number as double/);
    assert.throws(() => parse('{"text_input": {"USER": "x"}}'), /non-string as string/);
  });

  it('takes keys in document order: the first problem wins, a repeated input is an error', () => {
    assert.throws(() => parse('{"text_input": true, "STREAM": 1}'), /non-string as string/);
    assert.throws(() => parse('{"STREAM": 1, "text_input": true}'), /non-boolean as boolean/);
    assert.throws(() => parse('{"STREAM": true, "text_input": "a", "STREAM": false}'), {
      message: "input 'STREAM' already exists in request",
    });
  });

  it('checks parameters as Triton does', () => {
    assert.throws(() => parse('{"PARAMS": {"a": 1}}'), {
      message: "parameter 'PARAMS' has invalid type. It should be either 'int', 'bool', or 'string'.",
    });
    assert.throws(
      () => parse('{"parameters": 1}'),
      /^NereidError: Expected JSON object for keyword: 'parameters'/,
    );
    assert.throws(() => parse('{"parameters": {"nested": {"twice": 1}}}'), {
      message:
        "Converting keyword: 'parameters': parameter 'nested' has invalid type. It should be either 'int', 'bool', or 'string'.",
    });
    assert.throws(() => parse('{"id": 5}'), {
      message: "Unable to parse 'id': attempt to access JSON non-string as string",
    });
  });

  it('bounds the converted size by the maximum input size', () => {
    assert.throws(() => parse('{"IDS": [1, 2, 3]}', 16), {
      message:
        "request size of 0 bytes with input 'IDS' of size 24 bytes exceeds the maximum allowed input size of 16. Use --http-max-input-size to increase the limit.",
    });
  });

  it('treats an empty body as an empty request and refuses a non-object', () => {
    assert.deepEqual(parse('  '), { inputs: [], parameters: {} });
    assert.throws(() => parse('[1]'), { code: 'INVALID_ARG' });
  });
});

describe('generateResponseJson', () => {
  const response = (fields: Partial<InferenceResponse>): InferenceResponse => ({
    modelName: 'm',
    modelVersion: '3',
    id: '',
    outputs: [],
    parameters: {},
    final: true,
    ...fields,
  });

  it('writes one flat object with sorted keys; one element is a bare value', () => {
    const f = Buffer.alloc(8);
    f.writeFloatLE(0.5, 0);
    f.writeFloatLE(-1, 4);
    const json = generateResponseJson(
      response({
        id: 'x',
        parameters: { zeta: 1, big: 2n ** 64n - 1n, flag: true },
        outputs: [
          { name: 'text_output', datatype: 'BYTES', shape: [1, 1], data: joinBytesElements(['héllo']) },
          { name: 'Scores', datatype: 'FP32', shape: [2], data: f },
          { name: 'EMPTY', datatype: 'INT32', shape: [0], data: Buffer.alloc(0) },
        ],
      }),
    );
    assert.equal(
      json,
      '{"EMPTY":[],"Scores":[0.5,-1],"big":18446744073709551615,"flag":true,"id":"x","model_name":"m",' +
        '"model_version":"3","text_output":"héllo","zeta":1}',
    );
  });

  it('omits an empty id, and reserved keys win over parameters and outputs of the same name', () => {
    const one = Buffer.alloc(4);
    one.writeInt32LE(9, 0);
    const json = generateResponseJson(
      response({
        parameters: { model_name: 'p' },
        outputs: [{ name: 'model_version', datatype: 'INT32', shape: [1], data: one }],
      }),
    );
    assert.equal(json, '{"model_name":"m","model_version":"3"}');
  });

  it('carries BYTES that are not UTF-8 as text with replacement characters', () => {
    const json = generateResponseJson(
      response({
        outputs: [
          { name: 'b', datatype: 'BYTES', shape: [2], data: joinBytesElements([Buffer.from([0xff]), 'ok']) },
        ],
      }),
    );
    assert.equal(json, '{"b":["\ufffd","ok"],"model_name":"m","model_version":"3"}');
  });
});
