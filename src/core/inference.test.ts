import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { joinBytesElements } from '../common/tensor.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../model-config/model-config.js';
import {
  applyReshape,
  checkBatchSize,
  checkInputNames,
  nextBatchSize,
  prepareInputs,
  prepareOutputs,
  prepareRequest,
  requestControls,
  SEQUENCE_END,
  SEQUENCE_START,
} from './inference.js';
import type { InferInput, Parameters, RequestedOutput } from './types.js';

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

// The steps prepareRequest runs, one table each: what each accepts, and the error each gives otherwise.

/** Runs `f`; the error message it throws, or undefined when it returns. */
function errorOf(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('checkInputNames', () => {
  const optional = config({
    input: [
      { name: 'A', data_type: 'TYPE_INT32', dims: [1] },
      { name: 'B', data_type: 'TYPE_INT32', dims: [1], optional: true },
    ],
  });
  const rows: { what: string; names: string[]; cfg?: ModelConfig; error?: string }[] = [
    { what: 'all inputs', names: ['INPUT0', 'INPUT1'] },
    { what: 'any order', names: ['INPUT1', 'INPUT0'] },
    { what: 'a name twice', names: ['INPUT0', 'INPUT0'], error: "input 'INPUT0' already exists in request" },
    {
      what: 'too few (count first)',
      names: ['INPUT1'],
      error:
        "expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT1'], but missing required input(s) ['INPUT0']. Please provide all required input(s).",
    },
    {
      what: 'an unknown name in the right count',
      names: ['INPUT0', 'X'],
      error: "unexpected inference input 'X' for model 'simple'",
    },
    { what: 'the optional one left out', names: ['A'], cfg: optional },
    {
      what: 'a range when some are optional',
      names: [],
      cfg: optional,
      error:
        "expected number of inputs between 1 and 2 but got 0 inputs for model 'simple'. Got input(s) [], but missing required input(s) ['A']. Please provide all required input(s).",
    },
    {
      what: 'the required one missing in range',
      names: ['B'],
      cfg: optional,
      error: "missing required input(s) ['A'] for model 'simple'",
    },
  ];
  for (const row of rows) {
    it(`${row.what}: ${row.error ?? 'accepted'}`, () => {
      const cfg = row.cfg ?? config({});
      assert.equal(
        errorOf(() =>
          checkInputNames(
            cfg,
            row.names.map((name) => ({ name })),
          ),
        ),
        row.error,
      );
    });
  }
});

describe('nextBatchSize and checkBatchSize', () => {
  const rows: { shapes: number[][]; batch?: number; error?: string }[] = [
    { shapes: [[3, 16]], batch: 3 },
    {
      shapes: [
        [3, 16],
        [3, 4],
      ],
      batch: 3,
    },
    {
      shapes: [
        [3, 16],
        [2, 16],
      ],
      error: "input 'IN1' batch size does not match other inputs for 'simple'",
    },
    { shapes: [[8, 1]], batch: 8 },
    { shapes: [[9, 1]], error: "inference request batch-size must be <= 8 for 'simple'" },
    { shapes: [[0, 1]], error: "inference request batch-size must be >= 1 for 'simple'" },
  ];
  const cfg = config({});
  for (const row of rows) {
    it(`${JSON.stringify(row.shapes)} → ${row.error ?? row.batch}`, () => {
      let batch = 1;
      const error = errorOf(() => {
        row.shapes.forEach(
          (shape, i) => (batch = nextBatchSize('simple', i, batch, { name: `IN${i}`, shape })),
        );
        checkBatchSize(cfg, row.shapes.length, batch);
      });
      assert.equal(error, row.error);
      if (row.error === undefined) assert.equal(batch, row.batch);
    });
  }
  it('a request without inputs passes the lower bound (its size is whatever the caller started with)', () => {
    assert.doesNotThrow(() => checkBatchSize(cfg, 0, 0));
  });
});

describe('prepareInputs', () => {
  it('a model that does not batch has batch size 1 whatever the first dimension', () => {
    const cfg = config({ max_batch_size: 0 });
    const { inputs, batchSize } = prepareInputs(cfg, [int32('INPUT0', [16]), int32('INPUT1', [16])]);
    assert.equal(batchSize, 1);
    assert.deepEqual([...inputs.keys()], ['INPUT0', 'INPUT1']);
  });
  it("checks in Triton's order: a batch disagreement before the second input's byte size", () => {
    const cfg = config({});
    assert.equal(
      errorOf(() => prepareInputs(cfg, [int32('INPUT0', [2, 16]), int32('INPUT1', [3, 16], 1)])),
      "input 'INPUT1' batch size does not match other inputs for 'simple'",
    );
  });
});

describe('prepareOutputs', () => {
  const cfg = config({});
  const rows: { what: string; outputs?: RequestedOutput[]; plan?: [string, number][]; error?: string }[] = [
    {
      what: 'none named: all, config order',
      plan: [
        ['OUTPUT0', 0],
        ['OUTPUT1', 0],
      ],
    },
    {
      what: 'empty list: all',
      outputs: [],
      plan: [
        ['OUTPUT0', 0],
        ['OUTPUT1', 0],
      ],
    },
    {
      what: 'request order',
      outputs: [{ name: 'OUTPUT1' }, { name: 'OUTPUT0' }],
      plan: [
        ['OUTPUT1', 0],
        ['OUTPUT0', 0],
      ],
    },
    {
      what: 'classification',
      outputs: [{ name: 'OUTPUT0', parameters: { classification: 3 } }],
      plan: [['OUTPUT0', 3]],
    },
    {
      what: 'a bad classification',
      outputs: [{ name: 'OUTPUT0', parameters: { classification: -1 } }],
      error: "classification parameter of output 'OUTPUT0' must be a non-negative integer",
    },
    {
      what: 'an unknown output',
      outputs: [{ name: 'X' }],
      error: "unexpected inference output 'X' for model 'simple'",
    },
    {
      what: 'an output twice',
      outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }],
      error: "output 'OUTPUT0' already exists in request",
    },
  ];
  for (const row of rows) {
    it(`${row.what}`, () => {
      let plan: [string, number][] | undefined;
      const error = errorOf(() => {
        plan = prepareOutputs(cfg, row.outputs).map((o) => [o.name, o.classification]);
      });
      assert.equal(error, row.error);
      assert.deepEqual(plan, row.plan);
    });
  }
});

describe('requestControls', () => {
  const rows: {
    params: Parameters;
    controls?: { correlationId: bigint | string; flags: number; priority: number; timeoutUs: number };
    error?: string;
  }[] = [
    { params: {}, controls: { correlationId: 0n, flags: 0, priority: 0, timeoutUs: 0 } },
    {
      params: { sequence_id: 7, sequence_start: true, priority: 1, timeout: 5n },
      controls: { correlationId: 7n, flags: SEQUENCE_START, priority: 1, timeoutUs: 5 },
    },
    {
      params: { sequence_id: 'abc', sequence_end: 'true' },
      controls: { correlationId: 'abc', flags: SEQUENCE_END, priority: 0, timeoutUs: 0 },
    },
    { params: { sequence_id: -1 }, error: "parameter 'sequence_id' must be an unsigned integer or a string" },
    { params: { priority: 1.5 }, error: "parameter 'priority' must be an integer" },
    { params: { priority: -1 }, error: "parameter 'priority' must be >= 0" },
    { params: { timeout: -1 }, error: "parameter 'timeout' must be >= 0" },
  ];
  for (const row of rows) {
    it(`${JSON.stringify(row.params, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`, () => {
      let controls: unknown;
      const error = errorOf(() => (controls = requestControls(row.params)));
      assert.equal(error, row.error);
      assert.deepEqual(controls, row.controls);
    });
  }
});
