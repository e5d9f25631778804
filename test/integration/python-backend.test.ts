// The Python backend against a real server and real stub processes (the repository's .venv Python with
// numpy): Triton-style model.py files for add_sub, a ResNet-tutorial-style classifier on two instances,
// auto_complete_config without a config.pbtxt, BLS into the ONNX `simple` (sync, async, decoupled) and into
// the `simple_ensemble` ensemble, decoupled streaming (in-process and HTTP generate_stream), per-request
// errors, every fault a stub can have (crash, kill, raise, wrong responses, prints, hangs in initialize),
// cancellation, large tensors through /dev/shm and inline, interpreter selection, and that nothing is left
// behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput as ClientInput } from '../../src/client/index.js';
import type { NereidError } from '../../src/common/errors.js';
import type { InferInput, InferenceResponse, Parameters } from '../../src/core/types.js';
import {
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  ROOT,
  startServer,
  type TestServer,
  waitFor,
} from './harness.js';
import { i32, ints, pythonFlags, shmFiles, stubPids, VENV_PYTHON } from './python-support.js';

const PY_FIXTURES = path.join(ROOT, 'test/fixtures/python');

const f32 = (v: number[]): Buffer => Buffer.from(new Float32Array(v).buffer);
const u32 = (v: number[]): Buffer => Buffer.from(new Uint32Array(v).buffer);
const floats = (b: Buffer): number[] => Array.from(new Float32Array(Uint8Array.from(b).buffer));
const bytesOf = (elements: (string | Buffer)[]): Buffer => {
  const parts: Buffer[] = [];
  for (const e of elements) {
    const b = typeof e === 'string' ? Buffer.from(e) : e;
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    parts.push(len, b);
  }
  return Buffer.concat(parts);
};
const strings = (b: Buffer): string[] => {
  const out: string[] = [];
  for (let off = 0; off < b.length;) {
    const n = b.readUInt32LE(off);
    out.push(b.toString('utf8', off + 4, off + 4 + n));
    off += 4 + n;
  }
  return out;
};

function input(name: string, datatype: InferInput['datatype'], shape: number[], data: Buffer): InferInput {
  return { name, datatype, shape, data };
}

async function expectError(p: Promise<unknown>, code: string, ...fragments: string[]): Promise<NereidError> {
  try {
    await p;
  } catch (err) {
    const e = err as NereidError;
    assert.equal(e.code, code, e.message);
    for (const f of fragments) assert.ok(e.message.includes(f), `'${e.message}' should mention '${f}'`);
    return e;
  }
  assert.fail(`expected a ${code} error`);
}

/** Load failures reach the client wrapped by the repository ("load failed for model ..."): check the text. */
async function expectLoadError(p: Promise<unknown>, ...fragments: string[]): Promise<void> {
  try {
    await p;
  } catch (err) {
    const message = (err as Error).message;
    for (const f of fragments) assert.ok(message.includes(f), `'${message}' should mention '${f}'`);
    return;
  }
  assert.fail('expected the load to fail');
}

describe('python backend', () => {
  let s: TestServer;
  const prefix = `nereid_test_${process.pid}_`;
  const infer = (
    modelName: string,
    inputs: InferInput[],
    parameters?: Parameters,
    id?: string,
  ): Promise<InferenceResponse> => s.running.server.inferOnce({ modelName, inputs, parameters, id });
  const stream = async (
    modelName: string,
    inputs: InferInput[],
    signal?: AbortSignal,
  ): Promise<InferenceResponse[]> => {
    const out: InferenceResponse[] = [];
    for await (const r of s.running.server.infer({ modelName, inputs, signal })) out.push(r);
    return out;
  };
  const faults = (
    mode: number,
    data: number[] = [1, 2, 3],
    parameters?: Parameters,
    id?: string,
  ): Promise<InferenceResponse> =>
    infer(
      'faults',
      [input('MODE', 'INT32', [1], i32([mode])), input('DATA', 'FP32', [data.length], f32(data))],
      parameters,
      id,
    );

  before(async () => {
    s = await startServer([
      `--model-repository=${PY_FIXTURES}`,
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      ...[
        'add_sub',
        'identity_fp32_python',
        'resnet_style',
        'auto_complete',
        'bls_simple',
        'bls_async',
        'per_request_errors',
        'faults',
        'decoupled_async',
        'simple',
        'simple_ensemble',
        'simple_identity',
        'add_sub_python',
        'repeat_int32_python',
      ].map((m) => `--load-model=${m}`),
      ...pythonFlags(prefix),
    ]);
  });

  after(async () => {
    await s?.stop();
  });

  it("serves add_sub the way python_backend's example does, in-process and over HTTP", async () => {
    const r = await infer('add_sub', [
      input('INPUT0', 'FP32', [4], f32([1, 2, 3, 4])),
      input('INPUT1', 'FP32', [4], f32([10, 20, 30, 40])),
    ]);
    const byName = new Map(r.outputs.map((o) => [o.name, o]));
    assert.deepEqual(floats(byName.get('OUTPUT0')!.data), [11, 22, 33, 44]);
    assert.deepEqual(floats(byName.get('OUTPUT1')!.data), [-9, -18, -27, -36]);
    assert.deepEqual(byName.get('OUTPUT0')!.shape, [4]);

    const http = await post(`${s.url}/v2/models/add_sub_python/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [4, 3, 2, 1] },
      ],
    });
    assert.equal(http.status, 200, http.body.toString());
    const outs = http.json<{ outputs: { name: string; data: number[] }[] }>().outputs;
    assert.deepEqual(outs.find((o) => o.name === 'OUTPUT0')!.data, [5, 5, 5, 5]);
    assert.deepEqual(outs.find((o) => o.name === 'OUTPUT1')!.data, [-3, -1, 1, 3]);
  });

  it('serves the simple_identity example: BYTES in, the same BYTES out, batched', async () => {
    const elements = ['hello', '', 'w\u00f6rld', 'x'.repeat(1000), '\u0000zero\u0000'];
    const data = bytesOf([...elements, ...elements]);
    const r = await infer('simple_identity', [input('INPUT0', 'BYTES', [2, elements.length], data)]);
    assert.deepEqual(r.outputs[0].shape, [2, elements.length]);
    assert.deepEqual(strings(r.outputs[0].data), [...elements, ...elements]);
    const meta = (await request(`${s.url}/v2/models/simple_identity`)).json<{ platform: string }>();
    assert.equal(meta.platform, 'python');
  });

  it('runs a ResNet-tutorial-style model on two instances that know their names', async () => {
    const image = f32(Array.from({ length: 3 * 8 * 8 }, (_, i) => (i % 7) / 7));
    const seen = new Set<string>();
    for (let round = 0; round < 30 && seen.size < 2; round++) {
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          infer('resnet_style', [input('INPUT', 'FP32', [1, 3, 8, 8], image)]),
        ),
      );
      for (const r of results) {
        const out = r.outputs.find((o) => o.name === 'OUTPUT')!;
        assert.deepEqual(out.shape, [1, 10]);
        const p = floats(out.data);
        assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-4, 'probabilities sum to 1');
        seen.add(strings(r.outputs.find((o) => o.name === 'INSTANCE')!.data)[0]);
      }
    }
    assert.deepEqual([...seen].sort(), ['resnet_style_0_0', 'resnet_style_0_1']);
    assert.equal(stubPids('resnet_style_0_0').length, 1);
    assert.equal(stubPids('resnet_style_0_1').length, 1);
  });

  it('fills a missing config.pbtxt from auto_complete_config', async () => {
    const config = (await request(`${s.url}/v2/models/auto_complete/config`)).json<{
      max_batch_size: number;
      input: { name: string; data_type: string; dims: number[] }[];
      output: { name: string; data_type: string; dims: number[] }[];
      dynamic_batching?: unknown;
      backend: string;
    }>();
    assert.equal(config.backend, 'python');
    assert.equal(config.max_batch_size, 4);
    assert.deepEqual(
      config.input.map((i) => [i.name, i.data_type, i.dims]),
      [['INPUT0', 'TYPE_FP32', [4]]],
    );
    assert.deepEqual(
      config.output.map((o) => [o.name, o.data_type, o.dims]),
      [['OUTPUT0', 'TYPE_FP32', [4]]],
    );
    assert.ok(config.dynamic_batching, 'set_dynamic_batching() took effect');
    const r = await infer('auto_complete', [input('INPUT0', 'FP32', [2, 4], f32([1, 2, 3, 4, 5, 6, 7, 8]))]);
    assert.deepEqual(floats(r.outputs[0].data), [2, 4, 6, 8, 10, 12, 14, 16]);
  });

  it('calls the ONNX model `simple` through BLS, and returns BLS errors as responses', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const b = Array.from({ length: 16 }, () => 3);
    const r = await infer('bls_simple', [
      input('INPUT0', 'INT32', [1, 16], i32(a)),
      input('INPUT1', 'INT32', [1, 16], i32(b)),
    ]);
    const byName = new Map(r.outputs.map((o) => [o.name, ints(o.data)]));
    assert.deepEqual(
      byName.get('OUTPUT0'),
      a.map((x) => x + 3),
    );
    assert.deepEqual(
      byName.get('OUTPUT1'),
      a.map((x) => x - 3),
    );

    await expectError(
      infer('bls_simple', [
        input('INPUT0', 'INT32', [1, 16], i32(a)),
        input('INPUT1', 'INT32', [1, 16], i32(b)),
        input('MODEL_NAME', 'BYTES', [1], bytesOf(['no_such_model'])),
      ]),
      'NOT_FOUND',
      'no_such_model',
    );
  });

  it('calls an ensemble through BLS (simple_ensemble: both outputs doubled)', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i - 4);
    const b = Array.from({ length: 16 }, (_, i) => 3 * i);
    const r = await infer('bls_simple', [
      input('INPUT0', 'INT32', [1, 16], i32(a)),
      input('INPUT1', 'INT32', [1, 16], i32(b)),
      input('MODEL_NAME', 'BYTES', [1], bytesOf(['simple_ensemble'])),
    ]);
    const byName = new Map(r.outputs.map((o) => [o.name, ints(o.data)]));
    assert.deepEqual(
      byName.get('OUTPUT0'),
      a.map((x) => 2 * x),
    );
    assert.deepEqual(
      byName.get('OUTPUT1'),
      b.map((x) => 2 * x),
    );
  });

  it('runs async BLS (async_exec in parallel) and streams from a decoupled model with exec(decoupled=True)', async () => {
    const x = Array.from({ length: 16 }, (_, i) => i - 5);
    const r = await infer('bls_async', [input('INPUT0', 'INT32', [1, 16], i32(x))]);
    const byName = new Map(r.outputs.map((o) => [o.name, ints(o.data)]));
    assert.deepEqual(
      byName.get('SUM'),
      x.map((v) => 4 * v),
    );
    assert.deepEqual(byName.get('REPEATED'), [7, 8, 9]);
  });

  it('streams decoupled responses from model threads, several requests at once', async () => {
    const run = (values: number[]): Promise<InferenceResponse[]> =>
      stream('repeat_int32_python', [
        input('IN', 'INT32', [values.length], i32(values)),
        input('DELAY', 'UINT32', [values.length], u32(values.map(() => 15))),
        input('WAIT', 'UINT32', [1], u32([0])),
      ]);
    const [first, second] = await Promise.all([run([1, 2, 3]), run([40, 50])]);
    for (const [responses, values] of [
      [first, [1, 2, 3]],
      [second, [40, 50]],
    ] as const) {
      const data = responses.filter((x) => x.outputs.length > 0);
      assert.deepEqual(
        data.map((x) => ints(x.outputs.find((o) => o.name === 'OUT')!.data)[0]),
        values,
      );
      assert.deepEqual(
        data.map(
          (x) => new Uint32Array(Uint8Array.from(x.outputs.find((o) => o.name === 'IDX')!.data).buffer)[0],
        ),
        values.map((_, i) => i),
      );
      assert.equal(responses.at(-1)!.final, true);
      assert.equal(responses.filter((x) => x.final).length, 1);
    }
    const none = await run([]);
    assert.equal(none.filter((x) => x.outputs.length > 0).length, 0, 'IN of shape [0]: no data responses');
  });

  it('streams over HTTP generate_stream', async (t) => {
    const res = await post(`${s.url}/v2/models/repeat_int32_python/generate_stream`, {
      IN: [5, 6, 7],
      DELAY: [1, 1, 1],
      WAIT: [0],
    });
    if (res.status === 404) {
      t.skip('this build has no generate_stream endpoint');
      return;
    }
    assert.equal(res.status, 200, res.body.toString());
    const events = res.body
      .toString()
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as { OUT?: number; IDX?: number; error?: string });
    assert.deepEqual(
      events.filter((e) => e.OUT !== undefined).map((e) => [e.OUT, e.IDX]),
      [
        [5, 0],
        [6, 1],
        [7, 2],
      ],
    );
  });

  it('streams over gRPC ModelStreamInfer', async () => {
    assert.ok(s.running.grpc, 'the server serves gRPC');
    const client = new GrpcClient(`127.0.0.1:${s.running.grpc.port}`);
    try {
      const stream = client.streamInfer();
      stream.send({
        model: 'repeat_int32_python',
        requestId: 'r1',
        inputs: [
          new ClientInput('IN', [2], 'INT32').setData([11, 12]),
          new ClientInput('DELAY', [2], 'UINT32').setData([1, 1]),
          new ClientInput('WAIT', [1], 'UINT32').setData([0]),
        ],
      });
      stream.end();
      const seen: [string, number][] = [];
      for await (const r of stream.results()) {
        if (r.outputs.length > 0) seen.push([r.id, r.asArray('OUT', 'INT32')[0]]);
      }
      assert.deepEqual(seen, [
        ['r1', 11],
        ['r1', 12],
      ]);
    } finally {
      client.close();
    }
  });

  it('runs a decoupled async def execute, and fails its requests when the coroutine raises', async () => {
    const responses = await stream('decoupled_async', [
      input('COUNT', 'INT32', [1], i32([5])),
      input('VALUE', 'INT32', [1], i32([10])),
    ]);
    assert.deepEqual(
      responses.filter((r) => r.outputs.length > 0).map((r) => ints(r.outputs[0].data)[0]),
      [10, 11, 12, 13, 14],
    );
    await expectError(
      stream('decoupled_async', [
        input('COUNT', 'INT32', [1], i32([-1])),
        input('VALUE', 'INT32', [1], i32([0])),
      ]),
      'INTERNAL',
      'RuntimeError: the coroutine failed',
    );
  });

  it('fails single requests of a batch with the error the model attached', async () => {
    const x = (v: number): Promise<InferenceResponse> =>
      infer('per_request_errors', [input('X', 'FP32', [1, 1], f32([v]))]);
    const [ok1, bad, ok2] = await Promise.allSettled([x(4), x(-1), x(9)]);
    assert.equal(ok1.status, 'fulfilled');
    assert.equal(ok2.status, 'fulfilled');
    if (ok1.status === 'fulfilled') assert.deepEqual(floats(ok1.value.outputs[0].data), [2]);
    if (ok2.status === 'fulfilled') assert.deepEqual(floats(ok2.value.outputs[0].data), [3]);
    assert.equal(bad.status, 'rejected');
    if (bad.status === 'rejected') {
      const e = bad.reason as NereidError;
      assert.equal(e.code, 'INVALID_ARG');
      // The dynamic batcher handed execute() the three requests together.
      assert.equal(e.message, 'negative input in a batch of 3');
    }
    const http = await post(`${s.url}/v2/models/per_request_errors/infer`, {
      inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 1], data: [-2] }],
    });
    assert.equal(http.status, 400);
    assert.match(http.json<{ error: string }>().error, /negative input/);
  });

  it("reports a raising execute with Triton's message and the model's traceback", async () => {
    const e = await expectError(
      faults(2),
      'INTERNAL',
      "Failed to process the request(s) for model 'faults' version 1 instance 'faults_0_0', message: ValueError: mode 2 raises on purpose",
    );
    // The frames in the model's own files, relative to the model folder (docs/errors.md).
    assert.match(e.message, /At:\n {2}1\/model\.py\(\d+\): execute\n$/);
    assert.deepEqual(floats((await faults(0)).outputs[0].data), [1, 2, 3], 'the model still serves');
  });

  it("counts statistics as Triton's Python backend: a raising execute runs, an error response succeeds", async () => {
    type Counts = Record<'executions' | 'inferences' | 'success' | 'fail' | 'batches', number>;
    const counts = (model: string): Counts => {
      const st = s.running.server.modelStatistics(model)[0];
      return {
        executions: st.execution_count,
        inferences: st.inference_count,
        success: st.inference_stats.success.count,
        fail: st.inference_stats.fail.count,
        batches: st.batch_stats.reduce((n, b) => n + b.compute_infer.count, 0),
      };
    };
    // The client has its answer a moment before the execution is recorded (when execute() settles).
    const moved = async (model: string, before: Counts, expected: Counts): Promise<void> => {
      const delta = (): Counts => {
        const now = counts(model);
        return {
          executions: now.executions - before.executions,
          inferences: now.inferences - before.inferences,
          success: now.success - before.success,
          fail: now.fail - before.fail,
          batches: now.batches - before.batches,
        };
      };
      await waitFor(() => delta().executions >= expected.executions).catch(() => undefined);
      assert.deepEqual(delta(), expected);
    };
    const raising = counts('faults');
    await expectError(faults(2), 'INTERNAL', 'mode 2 raises on purpose');
    await moved('faults', raising, { executions: 1, inferences: 0, success: 0, fail: 1, batches: 1 });
    const answered = counts('per_request_errors');
    await expectError(
      infer('per_request_errors', [input('X', 'FP32', [1, 1], f32([-1]))]),
      'INVALID_ARG',
      'negative input',
    );
    await moved('per_request_errors', answered, {
      executions: 1,
      inferences: 1,
      success: 1,
      fail: 0,
      batches: 1,
    });
  });

  it("rejects wrong return values from execute with Triton's messages", async () => {
    await expectError(
      faults(3),
      'INTERNAL',
      'Number of InferenceResponse objects do not match the number of InferenceRequest objects. ' +
        'InferenceRequest(s) size is:1, and InferenceResponse(s) size is:2',
    );
    await expectError(
      faults(4),
      'INTERNAL',
      "Expected a list in the execute return, found type '<class 'NoneType'>'.",
    );
    await expectError(
      faults(7),
      'INTERNAL',
      "Expected a list in the execute return, found type '<class 'tuple'>'.",
    );
    const viaSender = await faults(12);
    assert.equal(strings(viaSender.outputs.find((o) => o.name === 'INFO')!.data)[0], 'sent');
  });

  it('forwards prints and pb_utils.Logger lines to the log without disturbing the protocol', async () => {
    const r = await faults(5, [4, 5]);
    assert.deepEqual(floats(r.outputs.find((o) => o.name === 'DATA_OUT')!.data), [4, 5]);
    assert.equal(strings(r.outputs.find((o) => o.name === 'INFO')!.data)[0], 'printed');
    await faults(8);
    await waitFor(() => s.logs.some((l) => l.includes('faults_0_0: hello from stdout')));
    assert.ok(s.logs.some((l) => l.includes('faults_0_0 (stderr): to stderr')));
    const warning = s.logs.find((l) => l.includes('a warning from the model'));
    assert.ok(warning?.startsWith('W'), `a warning line: ${warning}`);
    // Triton's shape: the model's file and line, then the message JSON-escaped.
    assert.match(warning ?? '', /^W\d{4} [\d:.]+ \d+ model\.py:\d+\] "a warning from the model/);
    assert.ok(s.logs.some((l) => l.includes('an info line from faults_0_0')));
  });

  it('caps a long stdout line and drops a flood of lines with a counted note', async () => {
    const r = await faults(13);
    assert.equal(strings(r.outputs.find((o) => o.name === 'INFO')!.data)[0], 'flooded');
    // The next line let through after the flood carries the count of the lines dropped before it.
    await waitFor(async () => {
      await faults(5);
      return s.logs.some((l) => / lines dropped \(more output than the log takes\)/.test(l));
    });
    const long = s.logs.filter((l) => l.includes('faults_0_0: zzz'));
    assert.equal(long.length, 1);
    assert.ok(long[0].includes('[line truncated]'));
    assert.ok(long[0].length < 70 * 1024, `a capped line: ${long[0].length}`);
    const flood = s.logs.filter((l) => l.includes('faults_0_0: flood line')).length;
    assert.ok(flood >= 500 && flood < 20000, `flood lines logged: ${flood}`);
  });

  it('passes request parameters, ids and requested outputs, and returns response parameters', async () => {
    const r = await faults(9, [1], { custom: 'v', count: 3, flag: true, sequence_id: 42n }, 'req-7');
    const info = JSON.parse(strings(r.outputs.find((o) => o.name === 'INFO')!.data)[0]) as {
      parameters: Record<string, unknown>;
      request_id: string;
      correlation_id: number;
      requested: string[];
    };
    assert.deepEqual(info.parameters, { custom: 'v', count: 3, flag: true });
    assert.equal(info.request_id, 'req-7');
    assert.equal(info.correlation_id, 42);
    assert.deepEqual(info.requested, ['DATA_OUT', 'INFO']);
    assert.equal(r.parameters.instance, 'faults_0_0');
  });

  it('lets a running request see its cancellation through request.is_cancelled()', async () => {
    const ac = new AbortController();
    const running = (async () => {
      for await (const _ of s.running.server.infer({
        modelName: 'faults',
        inputs: [input('MODE', 'INT32', [1], i32([6])), input('DATA', 'FP32', [1], f32([0]))],
        signal: ac.signal,
      })) {
        // no responses expected
      }
    })();
    setTimeout(() => ac.abort(), 200);
    await expectError(running, 'CANCELLED', 'cancelled (sender saw it: True)');
  });

  it('fails the requests of a crashed stub, restarts it, and keeps other models serving', async () => {
    const before = stubPids('faults_0_0');
    assert.equal(before.length, 1);
    await expectError(
      faults(1),
      'INTERNAL',
      "Stub process 'faults_0_0' is not healthy",
      'exited with code 7',
    );
    // Other models are not affected while the stub restarts.
    const other = await infer('add_sub', [
      input('INPUT0', 'FP32', [4], f32([1, 1, 1, 1])),
      input('INPUT1', 'FP32', [4], f32([1, 1, 1, 1])),
    ]);
    assert.deepEqual(floats(other.outputs[0].data), [2, 2, 2, 2]);
    assert.deepEqual(floats((await faults(0, [9])).outputs[0].data), [9], 'the model recovered');
    const after1 = stubPids('faults_0_0');
    assert.equal(after1.length, 1);
    assert.notEqual(after1[0], before[0]);
    assert.ok(
      s.logs.some((l) => l.includes("Stub process 'faults_0_0' is unhealthy and it will be restarted")),
    );

    await expectError(faults(10), 'INTERNAL', "Stub process 'faults_0_0' is not healthy", 'SIGKILL');
    assert.deepEqual(floats((await faults(0, [8])).outputs[0].data), [8]);
  });

  it('recovers from a stub killed from outside', async () => {
    const [pid] = stubPids('faults_0_0');
    process.kill(pid, 'SIGKILL');
    await waitFor(() => {
      const now = stubPids('faults_0_0');
      return now.length === 1 && now[0] !== pid;
    });
    assert.deepEqual(floats((await faults(0, [7])).outputs[0].data), [7]);
  });

  it("fails a load whose initialize() raises with the model's message", async () => {
    await expectLoadError(
      s.running.server.loadModel('init_error'),
      'TritonModelException: cannot initialize init_error: weights missing',
      'model.py(8): initialize',
    );
    await waitFor(() => stubPids('init_error_0').length === 0);
  });

  it('moves large tensors through /dev/shm and leaves no file there', async () => {
    const n = 1 << 20;
    const values = Array.from({ length: n }, (_, i) => (i % 1000) - 500);
    const r = await infer('identity_fp32_python', [input('INPUT0', 'FP32', [1, n], f32(values))]);
    assert.equal(r.outputs[0].data.length, n * 4);
    assert.ok(r.outputs[0].data.equals(f32(values)));
    assert.deepEqual(
      shmFiles(prefix),
      [],
      'the shared-memory files are unlinked as soon as the stub has them',
    );
  });

  it('unloads a model, finalizing its stubs', async () => {
    assert.equal(stubPids('add_sub_0_0').length, 1);
    await s.running.server.unloadModel('add_sub');
    await waitFor(() => stubPids('add_sub_0_0').length === 0);
    assert.ok(
      s.logs.some((l) => l.includes('add_sub_0_0: Cleaning up...')),
      'finalize() ran',
    );
    await s.running.server.loadModel('add_sub');
    assert.equal(stubPids('add_sub_0_0').length, 1);
  });
});

describe('python backend transports and interpreters', () => {
  const identity = (s: TestServer, n: number): Promise<InferenceResponse> =>
    s.running.server.inferOnce({
      modelName: 'identity_fp32_python',
      inputs: [input('INPUT0', 'FP32', [1, n], f32(Array.from({ length: n }, (_, i) => i)))],
    });

  for (const [label, extra] of [
    ['every tensor inline (disable-shm=true)', ['--backend-config=python,disable-shm=true']],
    [
      'every tensor through /dev/shm (threshold 0)',
      ['--backend-config=python,shm-tensor-threshold-byte-size=0'],
    ],
  ] as const) {
    it(`answers small and large tensors with ${label}`, async () => {
      const s = await startServer([
        `--model-repository=${PY_FIXTURES}`,
        `--model-repository=${EXAMPLES}`,
        '--model-control-mode=explicit',
        '--load-model=identity_fp32_python',
        '--load-model=simple_identity',
        `--backend-config=python,python-executable=${VENV_PYTHON}`,
        ...extra,
      ]);
      try {
        for (const n of [1, 1000, 300_000]) {
          const r = await identity(s, n);
          assert.ok(r.outputs[0].data.equals(f32(Array.from({ length: n }, (_, i) => i))), `${n} floats`);
        }
        const text = bytesOf(['a', 'bb', '']);
        const r = await s.running.server.inferOnce({
          modelName: 'simple_identity',
          inputs: [input('INPUT0', 'BYTES', [1, 3], text)],
        });
        assert.deepEqual(strings(r.outputs[0].data), ['a', 'bb', '']);
      } finally {
        await s.stop();
      }
    });
  }

  it('fails a load whose initialize() hangs after stub-timeout-seconds, leaving no process', async () => {
    const s = await startServer([
      `--model-repository=${PY_FIXTURES}`,
      '--model-control-mode=explicit',
      `--backend-config=python,python-executable=${VENV_PYTHON}`,
      '--backend-config=python,stub-timeout-seconds=2',
    ]);
    try {
      const start = Date.now();
      const loading = s.running.server.loadModel('hang_init');
      // No instance_group in its config: one instance named after the model, `hang_init_0`.
      await waitFor(() => stubPids('hang_init_0').length === 1);
      await expectLoadError(
        loading,
        "Python stub 'hang_init_0' did not finish initialize() within 2 s",
        'stub-timeout-seconds',
      );
      assert.ok(Date.now() - start >= 1900, 'the timeout was honoured');
      await waitFor(() => stubPids('hang_init_0').length === 0);
      const index = s.running.server.repositoryIndex(false).find((m) => m.name === 'hang_init');
      assert.equal(index?.state, 'UNAVAILABLE');
    } finally {
      await s.stop();
    }
  });

  it('leaves no stub process and no /dev/shm file after shutdown', async () => {
    const prefix = `nereid_shutdown_${process.pid}_`;
    const s = await startServer([
      `--model-repository=${PY_FIXTURES}`,
      '--model-control-mode=explicit',
      '--load-model=resnet_style',
      '--load-model=repeat_int32_python',
      `--model-repository=${EXAMPLES}`,
      ...pythonFlags(prefix),
    ]);
    assert.equal(stubPids('resnet_style_0_0').length + stubPids('resnet_style_0_1').length, 2);
    await s.stop();
    assert.deepEqual(stubPids('resnet_style_0_0'), []);
    assert.deepEqual(stubPids('resnet_style_0_1'), []);
    assert.deepEqual(stubPids('repeat_int32_python_0_0'), []);
    assert.deepEqual(shmFiles(prefix), []);
  });

  describe('choosing the interpreter', () => {
    let repo: string;
    let cache: string;
    const model = (params: Record<string, string>): { config: string; files: Record<string, string> } => ({
      config: `
backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
${Object.entries(params)
  .map(([k, v]) => `parameters { key: "${k}" value: { string_value: "${v}" } }`)
  .join('\n')}
`,
      files: {
        '1/model.py': [
          'import sys',
          'import numpy as np',
          'import triton_python_backend_utils as pb_utils',
          'class TritonPythonModel:',
          '    def execute(self, requests):',
          '        print("interpreter", sys.executable, flush=True)',
          '        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", r.inputs()[0].as_numpy() + np.float32(1))]) for r in requests]',
          '',
        ].join('\n'),
      },
    });

    before(() => {
      cache = mkdtempSync(path.join(os.tmpdir(), 'nereid-env-cache-'));
      const envSrc = mkdtempSync(path.join(os.tmpdir(), 'nereid-env-'));
      mkdirSync(path.join(envSrc, 'bin'));
      // A packed environment whose python is the checkout's venv (a real conda-pack archive would carry its own).
      writeFileSync(path.join(envSrc, 'bin/python3'), `#!/bin/sh\nexec ${VENV_PYTHON} "$@"\n`);
      chmodSync(path.join(envSrc, 'bin/python3'), 0o755);
      const noNumpy = path.join(envSrc, 'no-numpy-python');
      // -S: no site-packages, so numpy is not importable from this "interpreter".
      writeFileSync(noNumpy, `#!/bin/sh\nexec ${VENV_PYTHON} -S "$@"\n`);
      chmodSync(noNumpy, 0o755);
      repo = makeRepository({
        env_folder: model({ EXECUTION_ENV_PATH: path.join(ROOT, '.venv') }),
        env_archive: model({ EXECUTION_ENV_PATH: '$$TRITON_MODEL_DIRECTORY/env.tar.gz' }),
        env_archive_too: model({ EXECUTION_ENV_PATH: '$$TRITON_MODEL_DIRECTORY/../env_archive/env.tar.gz' }),
        env_missing: model({ EXECUTION_ENV_PATH: '/nonexistent/env' }),
        no_numpy: model({ EXECUTION_ENV_PATH: '' }),
      });
      execFileSync('tar', ['-czf', path.join(repo, 'env_archive/env.tar.gz'), '-C', envSrc, 'bin']);
      writeFileSync(path.join(repo, 'no_numpy/python'), readFileSync(noNumpy));
      chmodSync(path.join(repo, 'no_numpy/python'), 0o755);
      rmSync(envSrc, { recursive: true, force: true });
    });

    after(() => {
      removeRepository(repo);
      rmSync(cache, { recursive: true, force: true });
    });

    it('prefers EXECUTION_ENV_PATH (a folder or a packed archive, unpacked once) over python-executable', async () => {
      const s = await startServer([
        `--model-repository=${repo}`,
        '--model-control-mode=explicit',
        '--load-model=env_folder',
        '--load-model=env_archive',
        '--load-model=env_archive_too',
        '--backend-config=python,python-executable=/nonexistent/python3',
        `--backend-config=python,execution-env-cache-directory=${cache}`,
        // Environments outside a model's own folder need the operator's leave (security.md).
        `--backend-config=python,execution-env-allowed-paths=${path.join(ROOT, '.venv')}:${path.join(repo, 'env_archive')}`,
      ]);
      try {
        for (const m of ['env_folder', 'env_archive', 'env_archive_too']) {
          const r = await s.running.server.inferOnce({
            modelName: m,
            inputs: [input('X', 'FP32', [1], f32([1]))],
          });
          assert.deepEqual(floats(r.outputs[0].data), [2], m);
        }
        assert.ok(
          !existsSync(path.join(repo, 'env_folder/1/__pycache__')),
          'no bytecode written into the model folder',
        );
        const unpacked = readdirSync(cache).filter((d) => !d.includes('.tmp-'));
        assert.equal(unpacked.length, 1, 'both models share one unpacked copy');
        assert.ok(existsSync(path.join(cache, unpacked[0], 'bin/python3')));
        assert.equal(s.logs.filter((l) => l.includes('unpacking execution environment')).length, 1);
      } finally {
        await s.stop();
      }
    });

    it('explains an interpreter that is missing, lacks numpy, or an environment that does not exist', async () => {
      const s = await startServer([
        `--model-repository=${repo}`,
        '--model-control-mode=explicit',
        '--exit-on-error=false',
        '--backend-config=python,execution-env-allowed-paths=/nonexistent',
      ]);
      try {
        const load = (m: string): Promise<void> => s.running.server.loadModel(m);
        await expectLoadError(
          load('env_missing'),
          "EXECUTION_ENV_PATH '/nonexistent/env' of model 'env_missing' does not exist",
        );
        await s.stop();
        const missing = await startServer([
          `--model-repository=${repo}`,
          '--model-control-mode=explicit',
          '--backend-config=python,python-executable=/nonexistent/python3',
        ]);
        try {
          await expectLoadError(
            missing.running.server.loadModel('no_numpy'),
            "unable to start the Python stub with '/nonexistent/python3'",
            'was not found',
          );
        } finally {
          await missing.stop();
        }
        const noNumpy = await startServer([
          `--model-repository=${repo}`,
          '--model-control-mode=explicit',
          `--backend-config=python,python-executable=${path.join(repo, 'no_numpy/python')}`,
        ]);
        try {
          await expectLoadError(
            noNumpy.running.server.loadModel('no_numpy'),
            'cannot import numpy',
            'EXECUTION_ENV_PATH',
          );
        } finally {
          await noNumpy.stop();
        }
      } finally {
        await s.stop();
      }
    });
  });
});
