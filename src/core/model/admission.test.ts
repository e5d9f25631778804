// Admission, shared by ModelVersion and EnsembleVersion: which states take a request (a table), what a
// refused request leaves behind (its trace starts and ends, its error names the request), and the
// statistics record an admitted one starts with.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import { freezeModelConfig, normalizeModelConfig, parseModelConfigText } from '../../model-config/index.js';
import { ModelStats } from '../stats/model-stats.js';
import type { InferenceTrace, TraceActivity } from '../trace/types.js';
import type { InferenceRequest } from '../types.js';
import { admitRequest } from './admission.js';
import { VersionHolds } from './holds.js';

const config = freezeModelConfig(
  normalizeModelConfig(
    parseModelConfigText(
      'name: "m"\ninput [{ name: "IN" data_type: TYPE_FP32 dims: [2] }]\n' +
        'output [{ name: "OUT" data_type: TYPE_FP32 dims: [2] }]',
      'c',
    ),
    { backend: 'x' },
  ),
);
const version = { modelName: 'm', version: 3, config, stats: new ModelStats('m', '3') };
const good = (): InferenceRequest => ({
  modelName: 'm',
  id: 'r1',
  inputs: [{ name: 'IN', datatype: 'FP32', shape: [2], data: Buffer.alloc(8) }],
});

function recordingTrace(): { trace: InferenceTrace; seen: TraceActivity[] } {
  const seen: TraceActivity[] = [];
  const trace: InferenceTrace = {
    id: 1,
    parentId: 0,
    wantsTensors: false,
    setModel: () => {},
    report: (activity) => void seen.push(activity),
    tensor: (_a: string, _t: Tensor) => {},
    spawn: () => trace,
    end: () => void seen.push('REQUEST_END'),
    release: () => {},
    context: () => undefined,
  };
  return { trace, seen };
}

void describe('admitRequest', () => {
  const table: [state: string, held: boolean, revoked: boolean, admitted: boolean][] = [
    ['READY', false, false, true],
    ['READY', true, false, true],
    ['UNLOADING', true, false, true],
    ['UNLOADING', false, false, false],
    ['UNLOADING', true, true, false],
    ['LOADING', true, false, false],
    ['UNLOADED', true, false, false],
  ];
  for (const [state, held, revoked, admitted] of table) {
    void it(`${state}, ${held ? 'held' : 'not held'}${revoked ? ', holds revoked' : ''}: ${admitted ? 'admitted' : 'UNAVAILABLE'}`, () => {
      const holds = new VersionHolds();
      if (revoked) holds.revoke();
      const admit = () => admitRequest(version, state, holds, held, good(), 10n, undefined);
      if (admitted) {
        assert.equal(admit().prepared.batchSize, 1);
      } else {
        assert.throws(admit, (e: NereidError) => {
          assert.equal(e.code, 'UNAVAILABLE');
          assert.equal(e.message, "Request for unknown model: 'm' version 3 is not at ready state");
          return true;
        });
      }
    });
  }

  void it('a refused request: its trace starts and ends, its error names the request id', () => {
    const { trace, seen } = recordingTrace();
    const request: InferenceRequest = { ...good(), inputs: [], trace };
    assert.throws(
      () => admitRequest(version, 'READY', new VersionHolds(), false, request, 10n, undefined),
      (e: NereidError) => e.code === 'INVALID_ARG' && e.message.startsWith('[request id: r1] '),
    );
    assert.deepEqual(seen, ['REQUEST_START', 'REQUEST_END']);
  });

  void it('an admitted request: its record starts when it arrived and queues from `queueStart`', () => {
    const { trace, seen } = recordingTrace();
    const request: InferenceRequest = { ...good(), trace };
    const { record } = admitRequest(version, 'READY', new VersionHolds(), false, request, 10n, 20n);
    assert.equal(record.requestStart, 10n);
    assert.equal(record.queueStart, 20n);
    assert.equal(record.trace, trace);
    assert.deepEqual(seen, ['REQUEST_START', 'QUEUE_START']);
  });
});
