// requireInput / requireOutput: the throwing twins of input() / output(), for code type-checked under
// `strict` (the docs' examples use them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../common/errors.js';
import { InferenceRequest } from './request.js';
import { InferenceResponse } from './response.js';
import { Tensor } from './tensor.js';

describe('sdk requireInput / requireOutput', () => {
  const a = Tensor.from('A', new Int32Array([1, 2]));
  const b = Tensor.from('B', new Float32Array([0.5]));

  it('return the tensor of that name, as input() / output() do', () => {
    const req = new InferenceRequest({ modelName: 'm', inputs: [a, b] });
    assert.equal(req.requireInput('B'), req.input('B'));
    assert.deepEqual([...req.requireInput('A').int32()], [1, 2]);
    const res = new InferenceResponse({ outputs: [a, b], modelName: 'm' });
    assert.equal(res.requireOutput('A'), res.output('A'));
    assert.deepEqual([...res.requireOutput('B').float32()], [0.5]);
  });

  it('throw INVALID_ARG naming the model and the tensors there are when the name is missing', () => {
    const req = new InferenceRequest({ modelName: 'm', inputs: [a, b] });
    assert.equal(req.input('C'), undefined);
    assert.throws(
      () => req.requireInput('C'),
      (e: unknown) =>
        e instanceof NereidError &&
        e.code === 'INVALID_ARG' &&
        e.message === "the request for model 'm' has no input 'C' (inputs: 'A', 'B')",
    );
    const res = new InferenceResponse({ outputs: [b], modelName: 'simple' });
    assert.throws(
      () => res.requireOutput('OUTPUT0'),
      (e: unknown) =>
        e instanceof NereidError &&
        e.code === 'INVALID_ARG' &&
        e.message === "the response of model 'simple' has no output 'OUTPUT0' (outputs: 'B')",
    );
    assert.throws(() => new InferenceResponse().requireOutput('X'), {
      message: "the response has no output 'X' (outputs: none)",
    });
  });
});
