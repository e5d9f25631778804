import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { ensembleConfig, type EnsembleSpec } from './ensemble.testkit.js';
import { planEnsemble, requestPlan, stepsFor } from './plan.js';

/** IN → a → x; x → b → y; x → c → z; (y, z) → d → OUT, plus b's second output as a direct output. */
const diamond: EnsembleSpec = {
  inputs: ['IN'],
  outputs: ['OUT', 'SIDE'],
  steps: [
    { model: 'a', inputs: { I: 'IN' }, outputs: { O: 'x' } },
    { model: 'b', inputs: { I: 'x' }, outputs: { O: 'y', O2: 'SIDE' } },
    { model: 'c', inputs: { I: 'x' }, outputs: { O: 'z' } },
    { model: 'd', inputs: { I0: 'y', I1: 'z' }, outputs: { O: 'OUT' } },
  ],
};

function planError(spec: EnsembleSpec): string {
  try {
    planEnsemble(ensembleConfig(spec, { validate: false }));
  } catch (err) {
    assert.ok(err instanceof NereidError);
    assert.equal(err.code, 'INVALID_ARG');
    return err.message;
  }
  assert.fail('the plan was accepted');
}

describe('planEnsemble', () => {
  it('finds writers, readers and levels; independent steps share a level', () => {
    const plan = planEnsemble(ensembleConfig(diamond));
    assert.deepEqual(plan.levels, [[0], [1, 2], [3]]);
    assert.equal(plan.producer.get('y'), 1);
    assert.equal(plan.producer.get('IN'), undefined);
    assert.deepEqual(plan.consumers.get('x'), [1, 2]);
    assert.deepEqual(
      plan.steps[3].inputs.map((b) => `${b.member}<-${b.tensor}`),
      ['I0<-y', 'I1<-z'],
    );
    assert.deepEqual(
      plan.steps.map((s) => s.level),
      [0, 1, 1, 2],
    );
  });

  it('puts steps that read only ensemble inputs on level 0, whatever their order in the config', () => {
    const plan = planEnsemble(
      ensembleConfig({
        inputs: ['A', 'B'],
        outputs: ['OUT'],
        steps: [
          { model: 'join', inputs: { I0: 'p', I1: 'q' }, outputs: { O: 'OUT' } },
          { model: 'left', inputs: { I: 'A' }, outputs: { O: 'p' } },
          { model: 'right', inputs: { I: 'B' }, outputs: { O: 'q' } },
        ],
      }),
    );
    assert.deepEqual(plan.levels, [[1, 2], [0]]);
  });

  it('names the steps of a cycle in the direction data flows', () => {
    const message = planError({
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [
        { model: 'a', inputs: { I0: 'IN', I1: 'back' }, outputs: { O: 'fwd' } },
        { model: 'b', inputs: { I: 'fwd' }, outputs: { O: 'back', O2: 'OUT' } },
      ],
    });
    assert.equal(
      message,
      "in ensemble 'ens', steps form a cycle: step 0 (model 'a') -> step 1 (model 'b') -> step 0 (model 'a')",
    );
  });

  it('reports a step reading a tensor nothing writes', () => {
    assert.equal(
      planError({
        inputs: ['IN'],
        outputs: ['OUT'],
        steps: [{ model: 'a', inputs: { I0: 'IN', I1: 'ghost' }, outputs: { O: 'OUT' } }],
      }),
      "in ensemble 'ens', step 0 (model 'a') reads ensemble tensor 'ghost', which is neither an ensemble input nor written by any step",
    );
  });

  it('reports a tensor written twice, an ensemble input written by a step, an unwritten output, an unused input', () => {
    assert.equal(
      planError({
        inputs: ['IN'],
        outputs: ['OUT'],
        steps: [
          { model: 'a', inputs: { I: 'IN' }, outputs: { O: 'OUT' } },
          { model: 'b', inputs: { I: 'IN' }, outputs: { O: 'OUT' } },
        ],
      }),
      "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'ens' step 1",
    );
    assert.equal(
      planError({
        inputs: ['IN'],
        outputs: ['OUT'],
        steps: [{ model: 'a', inputs: { I: 'IN' }, outputs: { O: 'OUT', O2: 'IN' } }],
      }),
      "in ensemble 'ens', ensemble input 'IN' is also written by step 0 (model 'a')",
    );
    assert.equal(
      planError({
        inputs: ['IN'],
        outputs: ['OUT', 'MISSING'],
        steps: [{ model: 'a', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
      }),
      "output 'MISSING' for ensemble 'ens' is not written",
    );
    assert.equal(
      planError({
        inputs: ['IN', 'SPARE'],
        outputs: ['OUT'],
        steps: [{ model: 'a', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
      }),
      "ensemble input 'SPARE' for ensemble ens' is not used",
    );
  });
});

describe('pruning by requested outputs', () => {
  const plan = planEnsemble(ensembleConfig(diamond));

  it('runs every step for every output, and only b (after a) for SIDE', () => {
    assert.deepEqual(stepsFor(plan, ['OUT', 'SIDE']), [0, 1, 2, 3]);
    assert.deepEqual(stepsFor(plan, ['SIDE']), [0, 1]);
    assert.deepEqual(stepsFor(plan, ['OUT']), [0, 1, 2, 3]);
  });

  it('knows when two steps can be in flight at once: a wide level, or a decoupled step', () => {
    assert.equal(requestPlan(plan, ['OUT']).concurrent, true, 'b and c share a level');
    assert.equal(requestPlan(plan, ['SIDE']).concurrent, false, 'a then b is a chain');
    assert.equal(
      requestPlan(plan, ['SIDE'], [true, false, false, false]).concurrent,
      true,
      'a streams into b',
    );
  });

  it('counts each tensor once per reading step, plus once when it is a requested output', () => {
    const only = requestPlan(plan, ['SIDE']);
    assert.deepEqual(only.steps, [0, 1]);
    assert.equal(only.readers.get('x'), 1, 'c does not run, so only b reads x');
    assert.equal(only.readers.get('SIDE'), 1);
    assert.equal(only.readers.get('y'), undefined, 'd does not run: nobody reads y');
    assert.deepEqual(
      only.stepOutputs[1].map((b) => b.member),
      ['O2'],
      'b is asked only for the output somebody reads',
    );
    assert.deepEqual(only.stepOutputs[2], []);
    const all = requestPlan(plan, ['OUT', 'SIDE']);
    assert.equal(all.readers.get('x'), 2);
    assert.equal(all.readers.get('IN'), 1);
  });
});
