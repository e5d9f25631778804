/**
 * The packed run and result messages: what goes in comes out, tensor by tensor in order, after a real
 * structured clone that moves the tensors' ArrayBuffers (as postMessage does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packResult, packRun, unpackResult, unpackRun, type OrtWireTensor } from './protocol.js';

const tensor = (name: string, values: number[]): OrtWireTensor => ({
  name,
  datatype: 'INT32',
  shape: [1, values.length],
  data: Int32Array.from(values).buffer,
});

const valuesOf = (t: OrtWireTensor): number[] => [...new Int32Array(t.data)];

void describe('onnxruntime worker protocol', () => {
  it('a run keeps its id, fetches and every feed in order across a transferring clone', () => {
    const feeds = [tensor('INPUT0', [1, 2, 3]), tensor('INPUT1', [4]), tensor('INPUT2', [])];
    const packed = packRun({ id: 7, feeds, fetches: ['OUTPUT1', 'OUTPUT0'] });
    const moved = structuredClone(packed, { transfer: feeds.map((f) => f.data) });
    assert.equal(feeds[0].data.byteLength, 0, 'the buffers were moved, not copied');
    const run = unpackRun(moved);
    assert.equal(run.kind, 'run');
    assert.equal(run.id, 7);
    assert.deepEqual(run.fetches, ['OUTPUT1', 'OUTPUT0']);
    assert.deepEqual(
      run.feeds.map((f) => [f.name, f.datatype, f.shape, valuesOf(f)]),
      [
        ['INPUT0', 'INT32', [1, 3], [1, 2, 3]],
        ['INPUT1', 'INT32', [1, 1], [4]],
        ['INPUT2', 'INT32', [1, 0], []],
      ],
    );
  });

  it('a result keeps its id, run times and outputs; a run without tensors stays empty', () => {
    const outputs = [tensor('OUTPUT0', [9, 8]), tensor('OUTPUT1', [-1])];
    const packed = packResult(3, { outputs, runStart: 10n, runEnd: 2n ** 62n });
    const { id, result } = unpackResult(structuredClone(packed, { transfer: outputs.map((o) => o.data) }));
    assert.equal(id, 3);
    assert.equal(result.runStart, 10n);
    assert.equal(result.runEnd, 2n ** 62n);
    assert.deepEqual(
      result.outputs.map((o) => [o.name, valuesOf(o)]),
      [
        ['OUTPUT0', [9, 8]],
        ['OUTPUT1', [-1]],
      ],
    );
    assert.deepEqual(unpackRun(packRun({ id: 1, feeds: [], fetches: [] })).feeds, []);
    assert.deepEqual(
      unpackResult(packResult(2, { outputs: [], runStart: 0n, runEnd: 0n })).result.outputs,
      [],
    );
  });
});
