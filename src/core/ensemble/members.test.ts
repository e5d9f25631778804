import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { ensembleConfig, memberConfig, type EnsembleSpec, type MemberSpec } from './ensemble.testkit.js';
import { checkMembers, type MemberCheck } from './members.js';
import { planEnsemble } from './plan.js';
import { shapeForConsumer } from './shapes.js';

function check(spec: EnsembleSpec, members: Record<string, MemberSpec>): MemberCheck {
  const config = ensembleConfig(spec);
  const plan = planEnsemble(config);
  const configs: FrozenModelConfig[] = plan.steps.map((s) => memberConfig(members[s.modelName]));
  return checkMembers(config, plan, configs);
}

function checkError(spec: EnsembleSpec, members: Record<string, MemberSpec>): string {
  try {
    check(spec, members);
  } catch (err) {
    assert.ok(err instanceof NereidError);
    assert.equal(err.code, 'INVALID_ARG');
    return err.message;
  }
  assert.fail('the ensemble was accepted');
}

const oneStep = (model = 'm'): EnsembleSpec => ({
  inputs: ['IN'],
  outputs: ['OUT'],
  steps: [{ model, inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
});
const plain: MemberSpec = { name: 'm', inputs: ['I'], outputs: ['O'] };

describe('checkMembers: mapping and tensor agreement (Triton messages)', () => {
  it('accepts a member whose names, datatypes and shapes agree', () => {
    assert.deepEqual(check(oneStep(), { m: plain }), { decoupled: false, decoupledSteps: [false] });
  });

  it('names a datatype mismatch with both models', () => {
    assert.equal(
      checkError(oneStep(), { m: { ...plain, inputs: [{ name: 'I', type: 'TYPE_INT32' }] } }),
      'in ensemble ens, ensemble tensor IN: inconsistent data type: TYPE_FP32 is inferred from model ens while TYPE_INT32 is inferred from model m',
    );
  });

  it('names a shape mismatch between two steps with full shapes', () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [
        { model: 'a', inputs: { I: 'IN' }, outputs: { O: 'mid' } },
        { model: 'b', inputs: { I: 'mid' }, outputs: { O: 'OUT' } },
      ],
    };
    assert.equal(
      checkError(spec, {
        a: { name: 'a', inputs: ['I'], outputs: [{ name: 'O', dims: [8] }] },
        b: { name: 'b', inputs: ['I'], outputs: ['O'] },
      }),
      'in ensemble ens, ensemble tensor mid: inconsistent shape: [8] is inferred from model a while [4] is inferred from model b',
    );
  });

  it('accepts a batching member inside a non-batching ensemble when the full shapes agree', () => {
    const spec: EnsembleSpec = {
      inputs: [{ name: 'IN', dims: [-1, 4] }],
      outputs: [{ name: 'OUT', dims: [-1, 4] }],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    assert.equal(check(spec, { m: { ...plain, maxBatch: 8 } }).decoupled, false);
  });

  it('refuses a member whose max_batch_size is below the ensemble’s', () => {
    assert.equal(
      checkError({ ...oneStep(), maxBatch: 8 }, { m: { ...plain, maxBatch: 4 } }),
      'ensemble ens allows maximum batch size 8, but it contains model m which only allows maximum batch size to be 4',
    );
  });

  it('refuses names the member does not have, and required inputs nobody feeds', () => {
    assert.equal(
      checkError(oneStep(), { m: { ...plain, inputs: ['OTHER'] } }),
      'in ensemble ens, ensemble tensor IN is mapping to non-existing input I in model m',
    );
    assert.equal(
      checkError(oneStep(), { m: { ...plain, outputs: ['OTHER'] } }),
      'in ensemble ens, ensemble tensor OUT is mapped from non-existing output O in model m',
    );
    assert.equal(
      checkError(oneStep(), { m: { ...plain, inputs: ['I', 'J'] } }),
      'in ensemble ens, input J in model m is not mapped to any ensemble tensors',
    );
    assert.equal(
      check(oneStep(), { m: { ...plain, inputs: ['I', { name: 'J', optional: true }] } }).decoupled,
      false,
      'an optional member input may stay unmapped',
    );
  });
});

describe('checkMembers: decoupled steps', () => {
  const chain: EnsembleSpec = {
    inputs: ['IN'],
    outputs: ['OUT'],
    steps: [
      { model: 'gen', inputs: { I: 'IN' }, outputs: { O: 'piece' } },
      { model: 'post', inputs: { I: 'piece' }, outputs: { O: 'OUT' } },
    ],
  };

  it('makes the ensemble decoupled when a step on its data path is', () => {
    const result = check(chain, {
      gen: { name: 'gen', inputs: ['I'], outputs: ['O'], decoupled: true },
      post: { name: 'post', inputs: ['I'], outputs: ['O'] },
    });
    assert.deepEqual(result, { decoupled: true, decoupledSteps: [true, false] });
  });

  it('refuses a step that combines a decoupled lineage with the request’s own tensors', () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [
        { model: 'gen', inputs: { I: 'IN' }, outputs: { O: 'piece' } },
        { model: 'join', inputs: { I0: 'piece', I1: 'IN' }, outputs: { O: 'OUT' } },
      ],
    };
    assert.equal(
      checkError(spec, {
        gen: { name: 'gen', inputs: ['I'], outputs: ['O'], decoupled: true },
        join: { name: 'join', inputs: ['I0', 'I1'], outputs: ['O'] },
      }),
      "in ensemble ens, step of model 'join' receives inputs originated from different decoupled models",
    );
  });

  it('refuses ensemble outputs from different lineages (named after the ensemble)', () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['A', 'B'],
      steps: [
        { model: 'gen', inputs: { I: 'IN' }, outputs: { O: 'A' } },
        { model: 'post', inputs: { I: 'IN' }, outputs: { O: 'B' } },
      ],
    };
    assert.equal(
      checkError(spec, {
        gen: { name: 'gen', inputs: ['I'], outputs: ['O'], decoupled: true },
        post: { name: 'post', inputs: ['I'], outputs: ['O'] },
      }),
      "in ensemble ens, step of model 'ens' receives inputs originated from different decoupled models",
    );
  });
});

describe('shapeForConsumer (batching boundary)', () => {
  it('adds a batch of 1 for a batching consumer of an unbatched sample, strips it the other way', () => {
    assert.deepEqual(shapeForConsumer([4], true, 0, [4]), [1, 4]);
    assert.deepEqual(shapeForConsumer([4], false, 1, [1, 4]), [4]);
  });

  it('leaves shapes alone when both sides agree or the tensor already fits', () => {
    assert.deepEqual(shapeForConsumer([4], true, 3, [3, 4]), [3, 4]);
    assert.deepEqual(shapeForConsumer([4], false, 0, [4]), [4]);
    assert.deepEqual(shapeForConsumer([-1, 4], false, 3, [3, 4]), [3, 4]);
    assert.deepEqual(shapeForConsumer([4], true, 0, [2, 4]), [2, 4]);
  });
});
