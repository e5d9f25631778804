import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelStats, type InferResponseStatistics } from './model-stats.js';
import { RequestRecord } from './request-record.js';

const MS = 1_000_000n;

/** A request seen at t=0, queued at 1 ms, taken by an instance at `dispatch` ms, ended at `end` ms. */
function rec(batchSize: number, dispatch: bigint, end: bigint, outcome: 'success' | 'BACKEND' = 'success') {
  const r = new RequestRecord(0n, 1n * MS, batchSize);
  r.computeStart = dispatch * MS;
  if (outcome === 'success') r.succeed(end * MS);
  else r.failed(end * MS, outcome);
  return r;
}

describe('ModelStats', () => {
  it('counts a successful execution: batch-expanded inference count, queue and compute phases', () => {
    const s = new ModelStats('m', '1');
    const r = rec(4, 3n, 10n);
    r.outputNs = Number(2n * MS);
    s.recordExecution([r], 3n * MS, 11n * MS);
    const snap = s.snapshot();
    assert.equal(snap.inference_count, 4);
    assert.equal(snap.execution_count, 1);
    assert.ok(snap.last_inference > 0);
    assert.deepEqual(snap.inference_stats.success, { count: 1, ns: Number(10n * MS) });
    assert.deepEqual(snap.inference_stats.queue, { count: 1, ns: Number(2n * MS) });
    // No timings reported: the execute() wall time minus the core's output handling is compute_infer, for
    // the request only up to its end (10 ms; execute() settled at 11 ms), for the batch the whole of it.
    assert.deepEqual(snap.inference_stats.compute_input, { count: 1, ns: 0 });
    assert.deepEqual(snap.inference_stats.compute_infer, { count: 1, ns: Number(5n * MS) });
    assert.deepEqual(snap.inference_stats.compute_output, { count: 1, ns: Number(2n * MS) });
    assert.deepEqual(snap.inference_stats.fail, { count: 0, ns: 0 });
    assert.deepEqual(snap.batch_stats, [
      {
        batch_size: 4,
        compute_input: { count: 1, ns: 0 },
        compute_infer: { count: 1, ns: Number(6n * MS) },
        compute_output: { count: 1, ns: Number(2n * MS) },
      },
    ]);
  });

  it('uses the phase timings a backend reported, plus the core output handling', () => {
    const s = new ModelStats('m', '1');
    const r = rec(1, 2n, 9n);
    r.reportTiming({ computeInputNs: 100, computeInferNs: 200, computeOutputNs: 300 });
    r.outputNs = 50;
    s.recordExecution([r], 2n * MS, 9n * MS);
    const st = s.snapshot().inference_stats;
    assert.deepEqual(st.compute_input, { count: 1, ns: 100 });
    assert.deepEqual(st.compute_infer, { count: 1, ns: 200 });
    assert.deepEqual(st.compute_output, { count: 1, ns: 350 });
  });

  it("keeps a request's phases inside its own time, however long the execution ran", () => {
    const s = new ModelStats('m', '1');
    // Batch phases of 1 + 4 + 3 ms reported (plus 1 ms of the core's output handling for both); the first
    // request ended 6 ms after dispatch, the second 9 ms after.
    const first = rec(1, 2n, 8n);
    const second = rec(1, 2n, 11n);
    for (const r of [first, second]) {
      r.reportTiming({
        computeInputNs: Number(MS),
        computeInferNs: Number(4n * MS),
        computeOutputNs: Number(3n * MS),
      });
      r.outputNs = Number(MS / 2n);
    }
    s.recordExecution([first, second], 2n * MS, 12n * MS);
    const snap = s.snapshot();
    const st = snap.inference_stats;
    // first: 1 + 4 + 1 (4 ms of output cut: it lies past its end); second: 1 + 4 + 4, all inside 9 ms.
    assert.deepEqual(st.compute_input, { count: 2, ns: Number(2n * MS) });
    assert.deepEqual(st.compute_infer, { count: 2, ns: Number(8n * MS) });
    assert.deepEqual(st.compute_output, { count: 2, ns: Number(5n * MS) });
    const computeNs = st.compute_input.ns + st.compute_infer.ns + st.compute_output.ns;
    assert.ok(st.queue.ns + computeNs <= st.success.ns);
    // The batch's own phases are not cut.
    assert.deepEqual(snap.batch_stats[0].compute_output, { count: 1, ns: Number(4n * MS) });
  });

  it('ignores malformed timing reports', () => {
    const r = new RequestRecord(0n, 0n, 1);
    r.reportTiming({ computeInputNs: -1, computeInferNs: 1, computeOutputNs: 1 });
    r.reportTiming({ computeInputNs: NaN, computeInferNs: 1, computeOutputNs: 1 });
    assert.equal(r.timing, undefined);
  });

  it('one execution of several requests: batch stats once, per-request phases for each', () => {
    const s = new ModelStats('m', '1');
    s.recordExecution([rec(2, 3n, 5n), rec(3, 3n, 5n)], 3n * MS, 5n * MS);
    const snap = s.snapshot();
    assert.equal(snap.execution_count, 1);
    assert.equal(snap.inference_count, 5);
    assert.equal(snap.inference_stats.success.count, 2);
    assert.equal(snap.inference_stats.compute_infer.count, 2);
    assert.equal(snap.inference_stats.compute_infer.ns, Number(4n * MS));
    assert.equal(snap.batch_stats.length, 1);
    assert.equal(snap.batch_stats[0].batch_size, 5);
    assert.equal(snap.batch_stats[0].compute_infer.count, 1);
  });

  it('failures: counted with their reason and duration, never as executions or phases', () => {
    const s = new ModelStats('m', '1');
    s.recordExecution([rec(2, 3n, 7n, 'BACKEND')], 3n * MS, 8n * MS);
    const early = new RequestRecord(0n, 1n * MS, 1);
    early.failed(4n * MS, 'CANCELED');
    s.recordEarlyFailure(early);
    const snap = s.snapshot();
    assert.deepEqual(snap.inference_stats.fail, { count: 2, ns: Number(11n * MS) });
    assert.equal(snap.execution_count, 0);
    assert.equal(snap.inference_count, 0);
    assert.equal(snap.last_inference, 0);
    assert.deepEqual(snap.batch_stats, []);
    assert.equal(snap.inference_stats.queue.count, 0);
    assert.equal(snap.inference_stats.compute_infer.count, 0);
    assert.deepEqual(s.failures, { REJECTED: 0, CANCELED: 1, BACKEND: 1, OTHER: 0 });
    assert.deepEqual(s.counters().failure, { REJECTED: 0, CANCELED: 1, BACKEND: 1, OTHER: 0 });
  });

  it('an execution with one success among failures still counts as an execution', () => {
    const s = new ModelStats('m', '1');
    s.recordExecution([rec(1, 3n, 5n), rec(1, 3n, 5n, 'BACKEND')], 3n * MS, 5n * MS);
    const snap = s.snapshot();
    assert.equal(snap.execution_count, 1);
    assert.equal(snap.inference_stats.success.count, 1);
    assert.equal(snap.inference_stats.fail.count, 1);
    assert.equal(snap.batch_stats[0].batch_size, 2);
  });

  it('response statistics per response index', () => {
    const s = new ModelStats('m', '1');
    s.recordResponse(0, 'success', 0n, 7n, 10n);
    s.recordResponse(1, 'success', 10n, 15n, 16n);
    s.recordResponse(0, 'fail', 0n, 0n, 4n);
    s.recordResponse(2, 'empty', 16n, 0n, 20n);
    s.recordResponse(1, 'cancel', 10n, 0n, 13n);
    const rs = s.snapshot().response_stats as Record<string, InferResponseStatistics>;
    assert.deepEqual(Object.keys(rs), ['0', '1', '2']);
    assert.deepEqual(rs['0'], {
      compute_infer: { count: 2, ns: 11 },
      compute_output: { count: 1, ns: 3 },
      success: { count: 1, ns: 10 },
      fail: { count: 1, ns: 4 },
      empty_response: { count: 0, ns: 0 },
      cancel: { count: 0, ns: 0 },
    });
    assert.deepEqual(rs['1'].cancel, { count: 1, ns: 3 });
    assert.deepEqual(rs['1'].success, { count: 1, ns: 6 });
    assert.deepEqual(rs['2'].empty_response, { count: 1, ns: 4 });
    assert.deepEqual(rs['2'].compute_infer, { count: 1, ns: 4 });
    assert.deepEqual(rs['2'].compute_output, { count: 0, ns: 0 });
  });

  it('pending comes from the owner (its scheduler queue)', () => {
    const s = new ModelStats('m', '1');
    assert.equal(s.pending, 0);
    let queued = 3;
    s.pendingSource = () => queued;
    assert.equal(s.pending, 3);
    queued = 0;
    assert.equal(s.pending, 0);
  });

  it('the snapshot has exactly the fields of Triton statistics JSON', () => {
    const snap = new ModelStats('m', '7').snapshot();
    assert.deepEqual(Object.keys(snap), [
      'name',
      'version',
      'last_inference',
      'inference_count',
      'execution_count',
      'inference_stats',
      'batch_stats',
      'memory_usage',
      'response_stats',
    ]);
    assert.deepEqual(Object.keys(snap.inference_stats), [
      'success',
      'fail',
      'queue',
      'compute_input',
      'compute_infer',
      'compute_output',
      'cache_hit',
      'cache_miss',
    ]);
    assert.equal(snap.version, '7');
  });
});
