// A decoupled model's instance is free as soon as its execute returns, as in Triton: on a real server, two
// streams against a one-instance decoupled model (JavaScript, Python, the built-in repeat) interleave, the
// statistics count each execution once and each request when it ends, an instance that crashes with open
// streams fails all of them and recovers, a JavaScript stream the model forgets fails after
// execution_timeout_ms without taking the worker down, and unload waits for open streams (or their
// cancellation) before the instances go away.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NereidError } from '../../src/common/errors.js';
import type { InferInput, ModelStatistics } from '../../src/core/types.js';
import { makeRepository, removeRepository, startServer, waitFor, type TestServer } from './harness.js';
import { pythonFlags, pythonModel, stubPids } from './python-support.js';

const IO = `
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "DELAY" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] }
]
output [ { name: "IDX" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

/** MODE 0: COUNT responses DELAY ms apart, then the final flag; 1: the worker dies after the first; 2: no final. */
const JS_MODEL = `
import { RESPONSE_COMPLETE_FINAL, Tensor } from 'nereid-server';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export default class Streamer {
  execute(requests) {
    for (const request of requests) void this.stream(request);
  }

  async stream(request) {
    const sender = request.getResponseSender();
    const count = request.input('COUNT').int32()[0];
    const delay = request.input('DELAY').int32()[0];
    const mode = request.input('MODE').int32()[0];
    for (let i = 0; i < count; i++) {
      await sleep(delay);
      if (request.isCancelled()) {
        sender.send({ error: new Error('cancelled by the client') }, RESPONSE_COMPLETE_FINAL);
        return;
      }
      sender.send({ outputs: [Tensor.from('IDX', new Int32Array([i]))] });
      if (mode === 1) process.exit(3);
    }
    if (mode !== 2) sender.send(undefined, RESPONSE_COMPLETE_FINAL);
  }
}
`;

/** The same in Python, a thread per request (python_backend's decoupled examples); MODE 1 ends the stub. */
const PY_MODEL = `
import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            delay = int(pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()[0]) / 1000
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            sender = request.get_response_sender()
            args = (sender, count, delay, mode)
            threading.Thread(target=self.stream, args=args, daemon=True).start()
        return None

    def stream(self, sender, count, delay, mode):
        for i in range(count):
            time.sleep(delay)
            if sender.is_cancelled():
                break
            idx = pb_utils.Tensor("IDX", np.array([i], dtype=np.int32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[idx]))
            if mode == 1:
                os._exit(7)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`;

const REPEAT = `
name: "repeat_one"
backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const int32 = (name: string, values: number[]): InferInput => ({
  name,
  datatype: 'INT32',
  shape: [values.length],
  data: Buffer.from(new Int32Array(values).buffer),
});
const uint32 = (name: string, values: number[]): InferInput => ({
  name,
  datatype: 'UINT32',
  shape: [values.length],
  data: Buffer.from(new Uint32Array(values).buffer),
});

interface Streamed {
  /** performance.now() of each response with outputs. */
  readonly times: number[];
  /** performance.now() when the stream ended (final response or error). */
  readonly end: number;
  readonly error?: NereidError;
  readonly final: boolean;
}

interface Counts {
  executions: number;
  inferences: number;
  success: number;
  fail: number;
  batch1: number;
}

function countsOf(st: ModelStatistics): Counts {
  return {
    executions: st.execution_count,
    inferences: st.inference_count,
    success: st.inference_stats.success.count,
    fail: st.inference_stats.fail.count,
    batch1: st.batch_stats.find((b) => b.batch_size === 1)?.compute_infer.count ?? 0,
  };
}

function delta(after: Counts, before: Counts): Counts {
  return {
    executions: after.executions - before.executions,
    inferences: after.inferences - before.inferences,
    success: after.success - before.success,
    fail: after.fail - before.fail,
    batch1: after.batch1 - before.batch1,
  };
}

describe('decoupled models free their instance when execute returns', () => {
  let s: TestServer;
  let repo: string;
  const prefix = `nereid_dec_${process.pid}_`;

  before(async () => {
    repo = makeRepository({
      js_stream: {
        config: `name: "js_stream"\nbackend: "javascript"\n${IO}`,
        files: { '1/model.mjs': JS_MODEL },
      },
      js_forget: {
        config:
          `name: "js_forget"\nbackend: "javascript"\n${IO}` +
          'parameters [ { key: "execution_timeout_ms" value: { string_value: "600" } } ]\n',
        files: { '1/model.mjs': JS_MODEL },
      },
      py_stream: pythonModel(`name: "py_stream"\nbackend: "python"\n${IO}`, PY_MODEL),
      repeat_one: { config: REPEAT },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=*',
      ...pythonFlags(prefix),
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  const counts = (model: string): Counts => countsOf(s.running.server.modelStatistics(model)[0]);

  /** Streams one request, noting when each response came; resolves (never rejects) when it ended. */
  async function stream(model: string, inputs: InferInput[], signal?: AbortSignal): Promise<Streamed> {
    const times: number[] = [];
    let final = false;
    try {
      for await (const r of s.running.server.infer({ modelName: model, inputs, signal })) {
        if (r.outputs.length > 0) times.push(performance.now());
        final ||= r.final;
      }
    } catch (err) {
      return { times, end: performance.now(), error: err as NereidError, final };
    }
    return { times, end: performance.now(), final };
  }

  const request = (count: number, delay: number, mode = 0): InferInput[] => [
    int32('COUNT', [count]),
    int32('DELAY', [delay]),
    int32('MODE', [mode]),
  ];

  async function twoStreamsInterleave(model: string, inputs: () => InferInput[], responses: number) {
    const before = counts(model);
    const [first, second] = await Promise.all([stream(model, inputs()), stream(model, inputs())]);
    for (const x of [first, second]) {
      assert.equal(x.error, undefined, x.error?.message);
      assert.equal(x.final, true);
      assert.equal(x.times.length, responses);
    }
    // One instance, yet the second stream started while the first one was still streaming.
    assert.ok(
      second.times[0] < first.end && first.times[0] < second.end,
      `first ${first.times[0]}..${first.end}, second ${second.times[0]}..${second.end}`,
    );
    assert.deepEqual(delta(counts(model), before), {
      executions: 2,
      inferences: 2,
      success: 2,
      fail: 0,
      batch1: 2,
    });
  }

  it('JavaScript: two streams on one instance interleave; each execution and request counted once', async () => {
    await twoStreamsInterleave('js_stream', () => request(4, 80), 4);
  });

  it('Python: two streams on one instance interleave; each execution and request counted once', async () => {
    await twoStreamsInterleave('py_stream', () => request(4, 80), 4);
  });

  it("the built-in repeat backend: execute returns after WAIT, as Triton's does, so streams interleave", async () => {
    await twoStreamsInterleave(
      'repeat_one',
      () => [int32('IN', [1, 2, 3, 4]), uint32('DELAY', [80, 80, 80, 80]), uint32('WAIT', [0])],
      4,
    );
  });

  it('JavaScript: a worker crash fails every open stream of the instance, which then serves again', async () => {
    const before = counts('js_stream');
    const long = stream('js_stream', request(40, 50));
    await waitFor(() => counts('js_stream').executions > before.executions);
    const crashing = await stream('js_stream', request(3, 20, 1));
    const open = await long;
    for (const x of [crashing, open]) {
      assert.equal(x.error?.code, 'INTERNAL');
      assert.match(x.error.message, /worker thread exited unexpectedly \(exit code 3/);
    }
    assert.ok(open.times.length < 40, 'the long stream was cut');
    const again = await stream('js_stream', request(2, 10));
    assert.equal(again.error, undefined);
    assert.equal(again.times.length, 2);
    const d = delta(counts('js_stream'), before);
    assert.equal(d.fail, 2);
    assert.equal(d.success, 1);
  });

  it('Python: a stub crash fails every open stream of the instance, which then serves again', async () => {
    const [pid] = stubPids('py_stream_0_0');
    assert.ok(pid !== undefined, 'the stub runs');
    const before = counts('py_stream');
    const long = stream('py_stream', request(40, 50));
    await waitFor(() => counts('py_stream').executions > before.executions);
    const crashing = await stream('py_stream', request(3, 20, 1));
    const open = await long;
    for (const x of [crashing, open]) {
      assert.equal(x.error?.code, 'INTERNAL');
      assert.match(x.error.message, /Stub process 'py_stream_0_0' is not healthy/);
    }
    assert.ok(open.times.length < 40, 'the long stream was cut');
    const again = await stream('py_stream', request(2, 10));
    assert.equal(again.error, undefined, again.error?.message);
    assert.equal(again.times.length, 2);
    assert.notDeepEqual(stubPids('py_stream_0_0'), [pid], 'a new stub serves');
    const d = delta(counts('py_stream'), before);
    assert.equal(d.fail, 2);
    assert.equal(d.success, 1);
  });

  it('JavaScript: a stream the model forgets fails after execution_timeout_ms; the worker serves on', async () => {
    const forgotten = stream('js_forget', request(1, 0, 2));
    const busy = stream('js_forget', request(12, 100));
    const lost = await forgotten;
    assert.equal(lost.times.length, 1);
    assert.equal(lost.error?.code, 'UNAVAILABLE');
    assert.match(lost.error.message, /sent nothing for request .* for 600 ms after execute\(\) returned/);
    const ok = await busy;
    assert.equal(ok.error, undefined, ok.error?.message);
    assert.equal(ok.times.length, 12, 'the other stream on the same worker was not cut');
    assert.ok(!s.logs.some((l) => l.includes("the worker of JavaScript model instance 'js_forget_0_0'")));
  });

  for (const model of ['js_stream', 'py_stream']) {
    it(`${model}: unload refuses new requests and waits for an open stream to finish`, async () => {
      let unloaded = false;
      const open = stream(model, request(5, 100));
      await waitFor(() => s.running.server.modelStatistics(model)[0].execution_count > 0);
      const unloading = s.running.server.unloadModel(model).then(() => (unloaded = true));
      await waitFor(() => !s.running.server.isModelReady(model));
      await assert.rejects(
        (async () => {
          for await (const _ of s.running.server.infer({ modelName: model, inputs: request(1, 0) })) void _;
        })(),
        { code: 'NOT_FOUND', message: /has no available versions/ },
      );
      const done = await open;
      assert.equal(done.error, undefined, done.error?.message);
      assert.equal(done.times.length, 5, 'the open stream got every response');
      await unloading;
      assert.equal(unloaded, true);
      if (model === 'py_stream') assert.deepEqual(stubPids('py_stream_0_0'), []);
      await s.running.server.loadModel(model);
    });

    it(`${model}: unload with a long stream ends once its client cancels it`, async () => {
      const controller = new AbortController();
      const open = stream(model, request(1000, 20), controller.signal);
      await waitFor(() => s.running.server.modelStatistics(model)[0].execution_count > 0);
      let unloaded = false;
      const unloading = s.running.server.unloadModel(model).then(() => (unloaded = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(unloaded, false, 'unload waits for the open stream');
      const cancelledAt = performance.now();
      controller.abort();
      const done = await open;
      assert.ok(done.times.length < 1000);
      assert.ok(done.error !== undefined || done.final, 'the stream ended');
      await unloading;
      // The whole stream (1000 responses, 20 ms apart) would take 20 s.
      assert.ok(performance.now() - cancelledAt < 15_000, 'unload finished soon after the cancellation');
      await s.running.server.loadModel(model);
    });
  }
});
