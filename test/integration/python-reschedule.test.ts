// Request rescheduling in Python models (`request.set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)`
// with `sequence_batching { iterative_sequence: true }`), over the real server and real stubs: Triton's
// iterative-sequence countdown as a decoupled model (one response per execution, over a gRPC stream and
// HTTP generate_stream, several sequences batched together) and as a default-mode model (None in the
// returned list until the last execution); and every misuse: a model whose scheduler cannot take the
// request back, a request carrying END, a response returned for a rescheduled request, rescheduling from a
// decoupled `async def execute`. The stubs are gone afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput } from '../../src/client/index.js';
import type { NereidError } from '../../src/common/errors.js';
import type { InferenceResponse } from '../../src/core/types.js';
import { makeRepository, post, removeRepository, startServer, type TestServer } from './harness.js';
import { i32, ints, pythonFlags, pythonModel, shmFiles, stubPids } from './python-support.js';
import { collect, postSse } from './sse.js';

const config = (name: string, extra: string, maxBatch = 4): string => `
name: "${name}"
backend: "python"
max_batch_size: ${maxBatch}
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
${extra}`;

const DECOUPLED = 'model_transaction_policy { decoupled: true }';
const ITERATIVE = 'sequence_batching { iterative_sequence: true }';
/** The oldest strategy batches the sequences that have a request waiting, without padding rows. */
const ITERATIVE_OLDEST =
  'sequence_batching { iterative_sequence: true oldest { max_candidate_sequences: 8 } }';

/**
 * Triton's README example for decoupled models, for batches of several sequences: IN is how many responses
 * to send; each execution sends the remaining count and reschedules until it reaches 0.
 */
const COUNTDOWN_DECOUPLED = `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.remaining = {}

    def execute(self, requests):
        for request in requests:
            key = request.correlation_id()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender = request.get_response_sender()
            if key == 0:
                # A padding row of the direct strategy (an empty slot below a busy one): nobody waits for it.
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.remaining[key] = int(value.flat[0])
            self.remaining[key] -= 1
            left = self.remaining[key]
            out = pb_utils.Tensor("OUT", np.full(value.shape, left, np.int32))
            if left <= 0:
                del self.remaining[key]
                sender.send(pb_utils.InferenceResponse([out]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(pb_utils.InferenceResponse([out]))
        return None
`;

/** The default-mode variant: None for a rescheduled request; the last execution answers with the step count. */
const COUNTDOWN = `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.remaining = {}
        self.steps = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            key = request.correlation_id()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.remaining[key] = int(value.flat[0])
                self.steps[key] = 0
            self.remaining[key] -= 1
            self.steps[key] += 1
            if self.remaining[key] > 0:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
            else:
                del self.remaining[key]
                steps = self.steps.pop(key)
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.full(value.shape, steps, np.int32))]))
        return responses
`;

/** Reschedules whenever IN > 1 (a decoupled model sends a response first); answers IN == 1 at once. */
const RESCHEDULE_ALWAYS = (decoupled: boolean): string => `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            response = pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)])
            if int(value.flat[0]) == 1:
                ${decoupled ? 'request.get_response_sender().send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)' : 'responses.append(response)'}
                continue
            request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            ${decoupled ? 'request.get_response_sender().send(response)' : 'responses.append(None)'}
        return ${decoupled ? 'None' : 'responses'}
`;

/** Returns a response for a request it rescheduled (Triton refuses the whole batch). */
const WRONG_RETURN = `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            responses.append(pb_utils.InferenceResponse([pb_utils.get_input_tensor_by_name(request, "IN")]))
        return responses
`;

/** A decoupled async execute has returned before its coroutine runs: too late to reschedule. */
const ASYNC_DECOUPLED = `
import asyncio

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        await asyncio.sleep(0)
        for request in requests:
            sender = request.get_response_sender()
            try:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                error = pb_utils.TritonError("set_release_flags did not refuse")
            except pb_utils.TritonModelException as e:
                error = pb_utils.TritonError(str(e), pb_utils.TritonError.UNSUPPORTED)
            sender.send(pb_utils.InferenceResponse(error=error), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`;

async function expectError(p: Promise<unknown>, code: string, ...fragments: string[]): Promise<void> {
  try {
    await p;
  } catch (err) {
    const e = err as NereidError;
    assert.equal(e.code, code, e.message);
    for (const f of fragments) assert.ok(e.message.includes(f), `'${e.message}' should mention '${f}'`);
    return;
  }
  assert.fail(`expected a ${code} error`);
}

describe('python backend: request rescheduling', () => {
  let s: TestServer;
  let repo: string;
  const prefix = `nereid_resched_${process.pid}_`;
  const models = [
    'countdown_decoupled',
    'countdown',
    'plain_default',
    'plain_dynamic',
    'plain_sequence',
    'plain_decoupled',
    'wrong_return',
    'async_decoupled',
  ];

  const inIn = (
    v: number,
    batching = true,
  ): { name: string; datatype: 'INT32'; shape: number[]; data: Buffer } => ({
    name: 'IN',
    datatype: 'INT32',
    shape: batching ? [1, 1] : [1],
    data: i32([v]),
  });
  const stream = async (
    modelName: string,
    value: number,
    parameters?: Record<string, string | number | boolean | bigint>,
  ): Promise<InferenceResponse[]> => {
    const out: InferenceResponse[] = [];
    for await (const r of s.running.server.infer({ modelName, inputs: [inIn(value)], parameters }))
      out.push(r);
    return out;
  };
  const once = (
    modelName: string,
    value: number,
    parameters?: Record<string, string | number | boolean | bigint>,
  ) => s.running.server.inferOnce({ modelName, inputs: [inIn(value)], parameters });
  const outOf = (r: InferenceResponse): number => ints(r.outputs.find((o) => o.name === 'OUT')!.data)[0];

  before(async () => {
    repo = makeRepository({
      countdown_decoupled: pythonModel(
        config('countdown_decoupled', `${DECOUPLED}\n${ITERATIVE}`),
        COUNTDOWN_DECOUPLED,
      ),
      countdown: pythonModel(config('countdown', ITERATIVE_OLDEST), COUNTDOWN),
      plain_default: pythonModel(config('plain_default', ''), RESCHEDULE_ALWAYS(false)),
      plain_dynamic: pythonModel(config('plain_dynamic', 'dynamic_batching {}'), RESCHEDULE_ALWAYS(false)),
      plain_sequence: pythonModel(config('plain_sequence', 'sequence_batching {}'), RESCHEDULE_ALWAYS(false)),
      plain_decoupled: pythonModel(config('plain_decoupled', DECOUPLED), RESCHEDULE_ALWAYS(true)),
      wrong_return: pythonModel(config('wrong_return', ITERATIVE), WRONG_RETURN),
      async_decoupled: pythonModel(config('async_decoupled', `${DECOUPLED}\n${ITERATIVE}`), ASYNC_DECOUPLED),
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      ...models.map((m) => `--load-model=${m}`),
      ...pythonFlags(prefix),
    ]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('a decoupled countdown streams one response per execution over a gRPC stream', async () => {
    const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    try {
      const grpc = client.streamInfer();
      const send = (id: string, n: number): void =>
        grpc.send({
          model: 'countdown_decoupled',
          inputs: [new InferInput('IN', [1, 1], 'INT32').setData([n])],
          requestId: id,
        });
      send('three', 3);
      send('two', 2);
      send('one', 1);
      grpc.end();
      const seen = new Map<string, [number, boolean][]>();
      for await (const r of grpc.results()) {
        seen.set(r.id, [...(seen.get(r.id) ?? []), [r.asArray('OUT', 'INT32')[0], r.final]]);
      }
      assert.deepEqual(seen.get('three'), [
        [2, false],
        [1, false],
        [0, true],
      ]);
      assert.deepEqual(seen.get('two'), [
        [1, false],
        [0, true],
      ]);
      assert.deepEqual(seen.get('one'), [[0, true]]);
    } finally {
      client.close();
    }
  });

  it('a decoupled countdown streams over HTTP generate_stream, as in Triton’s test', async () => {
    const events = await collect(
      await postSse(`${s.url}/v2/models/countdown_decoupled/generate_stream`, { IN: 2 }),
    );
    assert.deepEqual(
      events.map((e) => e.data.OUT),
      [1, 0],
    );
  });

  it('many sequences at once, batched together, each ends with its own count', async () => {
    const executions = (): number =>
      s.running.server.modelStatistics('countdown_decoupled')[0].execution_count;
    const before = executions();
    const counts = [5, 1, 3, 4, 2, 6, 1, 2];
    const results = await Promise.all(counts.map((n) => stream('countdown_decoupled', n)));
    const total = counts.reduce((a, b) => a + b, 0);
    assert.ok(executions() - before < total, `${executions() - before} executions for ${total} iterations`);
    results.forEach((responses, i) => {
      const n = counts[i];
      assert.deepEqual(
        responses.map(outOf),
        Array.from({ length: n }, (_, k) => n - 1 - k),
      );
      assert.deepEqual(
        responses.map((r) => r.final),
        Array.from({ length: n }, (_, k) => k === n - 1),
      );
    });
  });

  it('a default-mode countdown returns None until its last execution; one response, counted once', async () => {
    const stats = (): { success: number; executions: number } => {
      const [m] = s.running.server.modelStatistics('countdown');
      return { success: m.inference_stats.success.count, executions: m.execution_count };
    };
    const before = stats();
    const counts = [4, 1, 3, 2];
    const answers = await Promise.all(counts.map((n) => once('countdown', n)));
    assert.deepEqual(answers.map(outOf), counts, 'each request ran once per count');
    const res = await post(`${s.url}/v2/models/countdown/infer`, {
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [3] }],
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(res.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [3]);
    const after = stats();
    assert.equal(after.success - before.success, 5, 'every request counted once, as a success');
    assert.ok(after.executions - before.executions >= 4, 'the longest countdown took 4 executions');
  });

  it('fails a rescheduled request where the scheduler cannot take it back; the model keeps serving', async () => {
    const text =
      'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.';
    await expectError(once('plain_default', 2), 'INVALID_ARG', text);
    await expectError(once('plain_dynamic', 2), 'INVALID_ARG', text);
    await expectError(
      once('plain_sequence', 2, { sequence_id: 9n, sequence_start: true, sequence_end: true }),
      'INVALID_ARG',
      text,
    );
    // A request that carries END cannot be rescheduled, iterative or not.
    await expectError(
      once('countdown', 2, { sequence_id: 11n, sequence_start: true, sequence_end: true }),
      'INVALID_ARG',
      text,
    );
    // A decoupled model's responses before the reschedule still arrive; then the error ends the stream.
    const seen: number[] = [];
    await expectError(
      (async () => {
        for await (const r of s.running.server.infer({ modelName: 'plain_decoupled', inputs: [inIn(2)] }))
          seen.push(outOf(r));
      })(),
      'INVALID_ARG',
      text,
    );
    assert.deepEqual(seen, [2]);
    assert.equal(outOf(await once('plain_default', 1)), 1);
    assert.equal(outOf(await once('plain_dynamic', 1)), 1);
    assert.deepEqual((await stream('plain_decoupled', 1)).map(outOf), [1]);
  });

  it('refuses a response for a rescheduled request, and rescheduling from a decoupled async execute', async () => {
    await expectError(
      once('wrong_return', 2),
      'INTERNAL',
      "Expected a None object in the execute function return list for reschduled request, found type '<class 'nereid_stub.api.InferenceResponse'>'.",
    );
    await expectError(
      stream('async_decoupled', 2),
      'UNSUPPORTED',
      'set TRITONSERVER_REQUEST_RELEASE_RESCHEDULE before execute returns',
    );
    // Both stubs are still there and serve again.
    await expectError(once('wrong_return', 2), 'INTERNAL', 'Expected a None object');
  });

  it('leaves no stub process and no /dev/shm file once the server stopped', async () => {
    assert.ok(stubPids().length >= models.length);
    await s.stop();
    assert.deepEqual(stubPids(), []);
    assert.deepEqual(shmFiles(prefix), []);
  });
});
