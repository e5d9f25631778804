import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { joinBytesElements } from '../common/tensor.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../model-config/model-config.js';
import { applyReshape, prepareRequest, SEQUENCE_END, SEQUENCE_START } from './inference.js';
import type { InferInput } from './types.js';

function config(over: Partial<ModelConfig>): ModelConfig {
  const io = (name: string, extra: Partial<ModelInput> = {}): ModelInput => ({
    name,
    data_type: 'TYPE_INT32',
    dims: [16],
    ...extra,
  });
  const out = (name: string, extra: Partial<ModelOutput> = {}): ModelOutput => ({
    name,
    data_type: 'TYPE_INT32',
    dims: [16],
    ...extra,
  });
  return {
    name: 'simple',
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 8,
    input: [io('INPUT0'), io('INPUT1')],
    output: [out('OUTPUT0'), out('OUTPUT1')],
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: 'model.onnx',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
    ...over,
  };
}

const int32 = (name: string, shape: number[], n = shape.reduce((a, b) => a * b, 1)): InferInput => ({
  name,
  datatype: 'INT32',
  shape,
  data: Buffer.alloc(n * 4),
});

describe('prepareRequest', () => {
  const simple = config({});

  it('accepts a well-formed batched request and reports its batch size', () => {
    const p = prepareRequest(simple, {
      modelName: 'simple',
      id: 'r1',
      inputs: [int32('INPUT0', [3, 16]), int32('INPUT1', [3, 16])],
    });
    assert.equal(p.batchSize, 3);
    assert.equal(p.id, 'r1');
    assert.deepEqual(
      p.outputs.map((o) => o.name),
      ['OUTPUT0', 'OUTPUT1'],
    );
  });

  it("rejects a shape that misses the batch dimension with Triton's message", () => {
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [2, 8]), int32('INPUT1', [2, 8])],
        }),
      (e: Error) =>
        e.message.startsWith(
          "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [2,8]",
        ),
    );
  });

  it('rejects a batch larger than max_batch_size', () => {
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [9, 16]), int32('INPUT1', [9, 16])],
        }),
      /inference request batch-size must be <= 8 for 'simple'/,
    );
  });

  it('names missing required inputs', () => {
    assert.throws(
      () => prepareRequest(simple, { modelName: 'simple', inputs: [int32('INPUT0', [1, 16])] }),
      (e: Error) =>
        e.message ===
        "expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all required input(s).",
    );
  });

  it('rejects a byte size that does not match the shape', () => {
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [1, 16], 15), int32('INPUT1', [1, 16])],
        }),
      /input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60/,
    );
  });

  it('rejects the wrong datatype, unknown inputs and outputs, and duplicate outputs', () => {
    const fp: InferInput = { name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Buffer.alloc(64) };
    assert.throws(
      () => prepareRequest(simple, { modelName: 'simple', inputs: [fp, int32('INPUT1', [1, 16])] }),
      /inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'/,
    );
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [1, 16]), int32('NOPE', [1, 16])],
        }),
      /unexpected inference input 'NOPE' for model 'simple'/,
    );
    // Too many inputs is a count error first, as in Triton.
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [1, 16]), int32('INPUT1', [1, 16]), int32('NOPE', [1, 16])],
        }),
      (e: Error) => e.message.startsWith("expected 2 inputs but got 3 inputs for model 'simple'"),
    );
    const both = [int32('INPUT0', [1, 16]), int32('INPUT1', [1, 16])];
    assert.throws(
      () => prepareRequest(simple, { modelName: 'simple', inputs: both, outputs: [{ name: 'X' }] }),
      /unexpected inference output 'X' for model 'simple'/,
    );
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: both,
          outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }],
        }),
      /output 'OUTPUT0' already exists in request/,
    );
  });

  it('counts BYTES elements against the shape', () => {
    const cfg = config({
      max_batch_size: 0,
      input: [{ name: 'TEXT', data_type: 'TYPE_STRING', dims: [-1] }],
      output: [],
    });
    const text = (n: number): InferInput => ({
      name: 'TEXT',
      datatype: 'BYTES',
      shape: [3],
      data: joinBytesElements(Array.from({ length: n }, (_, i) => `s${i}`)),
    });
    assert.equal(prepareRequest(cfg, { modelName: 'm', inputs: [text(3)] }).inputs.get('TEXT')?.shape[0], 3);
    assert.throws(
      () => prepareRequest(cfg, { modelName: 'm', inputs: [text(2)] }),
      /expected 3 string elements for inference input 'TEXT' for model 'simple', got 2/,
    );
  });

  it('applies the config reshape while keeping the batch dimension', () => {
    const cfg = config({
      max_batch_size: 0,
      input: [{ name: 'data_0', data_type: 'TYPE_FP32', dims: [3, 4, 4], reshape: { shape: [1, 3, 4, 4] } }],
      output: [],
    });
    const p = prepareRequest(cfg, {
      modelName: 'm',
      inputs: [{ name: 'data_0', datatype: 'FP32', shape: [3, 4, 4], data: Buffer.alloc(3 * 16 * 4) }],
    });
    assert.deepEqual(p.inputs.get('data_0')?.shape, [1, 3, 4, 4]);
    assert.deepEqual(applyReshape([2, 6], [-1, 3]), [4, 3]);
  });

  it('reads sequence, priority and timeout parameters', () => {
    const p = prepareRequest(simple, {
      modelName: 'simple',
      inputs: [int32('INPUT0', [1, 16]), int32('INPUT1', [1, 16])],
      parameters: {
        sequence_id: 2n ** 63n,
        sequence_start: true,
        sequence_end: true,
        priority: 2,
        timeout: 100,
      },
    });
    assert.equal(p.correlationId, 2n ** 63n);
    assert.equal(p.flags, SEQUENCE_START | SEQUENCE_END);
    assert.equal(p.priority, 2);
    assert.equal(p.timeoutUs, 100);
    assert.throws(
      () =>
        prepareRequest(simple, {
          modelName: 'simple',
          inputs: [int32('INPUT0', [1, 16]), int32('INPUT1', [1, 16])],
          parameters: { priority: 'high' },
        }),
      /parameter 'priority' must be an integer/,
    );
  });
});
