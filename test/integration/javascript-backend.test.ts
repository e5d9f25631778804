// The javascript backend end to end on a real server (HTTP on port 0 and the core API in-process): every
// lifecycle hook, batching, sequences, decoupled streaming (in-process and HTTP generate_stream), BLS into
// the ONNX model `simple` and into a decoupled model, errors, hangs and crashes confined to one worker,
// worker threads counted across load and unload, and the TypeScript examples (tokenizer_ts in an ensemble
// with an ONNX model, stream_ts).
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BackendRequest } from '../../src/backend-api/backend.js';
import { JavascriptBackend, type JsInstance } from '../../src/backends/javascript/index.js';
import type { NereidError } from '../../src/common/errors.js';
import { silentLogger } from '../../src/common/logger.js';
import { joinBytesElements, splitBytesElements, type Tensor as CoreTensor } from '../../src/common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
} from '../../src/model-config/index.js';
import type { InferInput, InferenceResponse, Parameters } from '../../src/core/types.js';
import { GrpcClient, InferInput as ClientInput } from '../../src/client/index.js';
import {
  EXAMPLES,
  ROOT,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';
import { collect, postSse } from './sse.js';

const FIXTURES = path.join(ROOT, 'test/fixtures/javascript');

function int32(name: string, values: number[], shape = [values.length]): InferInput {
  return { name, datatype: 'INT32', shape, data: Buffer.from(new Int32Array(values).buffer) };
}
function bytes(name: string, values: string[], shape = [values.length]): InferInput {
  return { name, datatype: 'BYTES', shape, data: joinBytesElements(values) };
}
const readInt32 = (r: InferenceResponse, name: string): number[] => {
  const t = r.outputs.find((o) => o.name === name)!;
  return Array.from(
    new Int32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length)),
  );
};
const readFloat64 = (r: InferenceResponse, name: string): number[] => {
  const t = r.outputs.find((o) => o.name === name)!;
  return Array.from(
    new Float64Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length)),
  );
};
const readStrings = (r: InferenceResponse, name: string): string[] =>
  splitBytesElements(r.outputs.find((o) => o.name === name)!.data).map((b) => b.toString('utf8'));

/** Threads of this process (main, libuv, V8 platform, and every worker thread with its hooks thread). */
const threadCount = (): number => readdirSync('/proc/self/task').length;

describe('javascript backend', () => {
  let s: TestServer;
  let repo: string;

  const infer = (modelName: string, inputs: InferInput[], parameters?: Parameters, signal?: AbortSignal) =>
    s.running.server.inferOnce({
      modelName,
      inputs,
      parameters,
      signal: signal ?? new AbortController().signal,
    });

  before(async () => {
    repo = makeRepository({});
    for (const m of ['lifecycle_ts', 'faults_js', 'bls_ts', 'seq_js', 'identity_js']) {
      cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
    }
    for (const m of [
      'simple',
      'add_sub_python',
      'stream_ts',
      'tokenizer_ts',
      'text_classifier_onnx',
      'text_classifier_ensemble',
    ]) {
      cpSync(path.join(EXAMPLES, m), path.join(repo, m), { recursive: true });
    }
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=*',
      '--log-verbose=1',
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  describe('lifecycle', () => {
    it('autoCompleteConfig filled inputs, outputs, max_batch_size and kept dynamic batching', async () => {
      const res = await request(`${s.url}/v2/models/lifecycle_ts/config`);
      assert.equal(res.status, 200);
      const config = res.json<{
        max_batch_size: number;
        backend: string;
        input: { name: string; data_type: string; dims: number[] }[];
        output: { name: string; data_type: string }[];
        dynamic_batching: { max_queue_delay_microseconds: number };
      }>();
      assert.equal(config.backend, 'javascript');
      assert.equal(config.max_batch_size, 8);
      assert.deepEqual(
        config.input.map((i) => [i.name, i.data_type, i.dims]),
        [['IN', 'TYPE_INT32', [-1]]],
      );
      assert.deepEqual(
        config.output.map((o) => [o.name, o.data_type]),
        [
          ['OUT', 'TYPE_INT32'],
          ['BATCH', 'TYPE_INT32'],
          ['ARGS', 'TYPE_STRING'],
        ],
      );
      assert.equal(config.dynamic_batching.max_queue_delay_microseconds, 300000);
    });

    it('initialize() got Triton’s args and the context; execute() ran the TypeScript model (.mts + helper)', async () => {
      const r = await infer('lifecycle_ts', [int32('IN', [1, 2, 3], [1, 3])]);
      assert.deepEqual(readInt32(r, 'OUT'), [2, 4, 6]);
      const seen = JSON.parse(readStrings(r, 'ARGS')[0]) as {
        args: Record<string, string>;
        contextKeys: string[];
        decoupled: boolean;
        configName: string;
      };
      assert.deepEqual(Object.keys(seen.args).sort(), [
        'model_config',
        'model_instance_device_id',
        'model_instance_kind',
        'model_instance_name',
        'model_name',
        'model_repository',
        'model_version',
      ]);
      assert.equal(seen.args.model_name, 'lifecycle_ts');
      assert.equal(seen.args.model_instance_name, 'lifecycle_ts_0');
      assert.equal(seen.args.model_instance_kind, 'CPU');
      assert.equal(seen.args.model_instance_device_id, '0');
      assert.equal(seen.args.model_version, '1');
      assert.equal(seen.args.model_repository, path.join(repo, 'lifecycle_ts'));
      assert.equal((JSON.parse(seen.args.model_config) as { max_batch_size: number }).max_batch_size, 8);
      assert.equal(seen.configName, 'lifecycle_ts');
      assert.equal(seen.decoupled, false);
      for (const k of ['config', 'infer', 'inferStream', 'log', 'modelDir', 'instanceName']) {
        assert.ok(seen.contextKeys.includes(k), `context has ${k}`);
      }
      assert.ok(
        s.logs.some((l) => l.includes('[lifecycle_ts_0] initialized lifecycle_ts_0')),
        'the model’s logger reached the server log',
      );
    });

    it('dynamic batching hands execute() several requests at once', async () => {
      const rs = await Promise.all(
        [1, 2, 3, 4].map((i) => infer('lifecycle_ts', [int32('IN', [i], [1, 1])])),
      );
      assert.deepEqual(
        rs.map((r) => readInt32(r, 'BATCH')[0]),
        [4, 4, 4, 4],
      );
      assert.deepEqual(
        rs.map((r) => readInt32(r, 'OUT')[0]),
        [2, 4, 6, 8],
      );
    });

    it('finalize() runs on unload (and the model loads again afterwards)', async () => {
      const marker = path.join(repo, 'lifecycle_ts', 'finalized.txt');
      rmSync(marker, { force: true });
      assert.equal((await post(`${s.url}/v2/repository/models/lifecycle_ts/unload`, {})).status, 200);
      assert.match(readFileSync(marker, 'utf8'), /^finalized after \d+ executions/);
      assert.equal((await post(`${s.url}/v2/repository/models/lifecycle_ts/load`, {})).status, 200);
      const r = await infer('lifecycle_ts', [int32('IN', [5], [1, 1])]);
      assert.deepEqual(readInt32(r, 'OUT'), [10]);
    });
  });

  describe('sequences', () => {
    it('the sequence batcher passes correlation ids and START/END flags; state lives in the model', async () => {
      const step = (value: number, params: Parameters): Promise<InferenceResponse> =>
        infer('seq_js', [int32('INPUT', [value], [1, 1])], { sequence_id: 42n, ...params });
      const a = await step(5, { sequence_start: true });
      const b = await step(7, {});
      const c = await step(1, { sequence_end: true });
      assert.deepEqual(
        [a, b, c].map((r) => readInt32(r, 'OUTPUT')[0]),
        [5, 12, 13],
      );
      assert.deepEqual(
        [a, b, c].map((r) => readInt32(r, 'FLAGS')[0]),
        [1, 0, 2],
      );
    });
  });

  describe('decoupled streaming', () => {
    it('in-process: stream_ts sends one response per word, then an empty final one', async () => {
      const seen: { token: string[]; index: number[]; final: boolean }[] = [];
      for await (const r of s.running.server.infer({
        modelName: 'stream_ts',
        inputs: [bytes('PROMPT', ['one  two three'])],
        signal: new AbortController().signal,
      })) {
        seen.push({
          token: r.outputs.length ? readStrings(r, 'TOKEN') : [],
          index: r.outputs.length ? readInt32(r, 'INDEX') : [],
          final: r.final,
        });
      }
      assert.deepEqual(seen, [
        { token: ['one'], index: [0], final: false },
        { token: ['two'], index: [1], final: false },
        { token: ['three'], index: [2], final: false },
        { token: [], index: [], final: true },
      ]);
    });

    it('gRPC ModelStreamInfer: stream_ts streams its tokens, then the final flag', async () => {
      const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
      try {
        const stream = client.streamInfer();
        stream.send({
          model: 'stream_ts',
          inputs: [new ClientInput('PROMPT', [1], 'BYTES').setData(['red green'])],
          requestId: 'g',
          // The flag-only final response reaches a gRPC client only when it asks for it, as in Triton.
          enableEmptyFinalResponse: true,
        });
        stream.end();
        const seen: [string[], boolean][] = [];
        for await (const r of stream.results()) {
          seen.push([r.outputs.length > 0 ? (r.asArray('TOKEN') as string[]) : [], r.final]);
        }
        assert.deepEqual(seen, [
          [['red'], false],
          [['green'], false],
          [[], true],
        ]);
      } finally {
        client.close();
      }
    });

    it('HTTP generate_stream: the tokens arrive as server-sent events, as they are made', async () => {
      const res = await postSse(`${s.url}/v2/models/stream_ts/generate_stream`, {
        PROMPT: 'alpha beta gamma',
        DELAY_MS: 150,
      });
      assert.equal(res.status, 200);
      const events = await collect(res);
      assert.deepEqual(
        events.map((e) => [e.data.TOKEN, e.data.INDEX]),
        [
          ['alpha', 0],
          ['beta', 1],
          ['gamma', 2],
        ],
      );
      // Two 150 ms pauses between the first and the last token: they were not sent all at the end.
      assert.ok(events[2].at - events[0].at >= 200, `first to last ${events[2].at - events[0].at} ms`);
    });

    it('a cancelled stream stops early; the model sees request.signal', async () => {
      const ac = new AbortController();
      const words = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ');
      const got: string[] = [];
      const started = Date.now();
      try {
        for await (const r of s.running.server.infer({
          modelName: 'stream_ts',
          inputs: [bytes('PROMPT', [words]), int32('DELAY_MS', [200])],
          signal: ac.signal,
        })) {
          if (r.outputs.length) got.push(readStrings(r, 'TOKEN')[0]);
          if (got.length === 2) ac.abort();
        }
      } catch (err) {
        assert.equal((err as NereidError).code, 'CANCELLED');
      }
      assert.equal(got.length, 2);
      // The instance is free again (the model ended its stream): a new stream runs at once.
      const again: string[] = [];
      for await (const r of s.running.server.infer({
        modelName: 'stream_ts',
        inputs: [bytes('PROMPT', ['still here']), int32('DELAY_MS', [0])],
        signal: new AbortController().signal,
      })) {
        if (r.outputs.length) again.push(readStrings(r, 'TOKEN')[0]);
      }
      assert.deepEqual(again, ['still', 'here']);
      // Streaming all 50 words 200 ms apart would take 10 s; the cancel stopped it after the second.
      assert.ok(Date.now() - started < 6_000, 'the model stopped streaming well before its 50 words');
    });
  });

  describe('BLS', () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const b = Array.from({ length: 16 }, () => 3);

    it('a TypeScript model calls the ONNX model `simple` and the decoupled stream_ts through the server', async () => {
      const r = await infer('bls_ts', [int32('A', a, [1, 16]), int32('B', b, [1, 16])]);
      assert.deepEqual(
        readInt32(r, 'SUM'),
        a.map((v) => v + 3),
      );
      assert.deepEqual(
        readInt32(r, 'DIFF'),
        a.map((v) => v - 3),
      );
      assert.deepEqual(readStrings(r, 'ECHO'), ['one|two|three']);
    });

    it('a TypeScript model calls a Python model (add_sub_python) through the server', async () => {
      const res = await post(`${s.url}/v2/models/bls_ts/infer`, {
        inputs: [
          { name: 'A', datatype: 'INT32', shape: [1, 16], data: a },
          { name: 'B', datatype: 'INT32', shape: [1, 16], data: b },
        ],
        outputs: [{ name: 'PY' }],
      });
      assert.equal(res.status, 200, res.body.toString());
      const out = res.json<{ outputs: { name: string; shape: number[]; data: number[] }[] }>().outputs;
      assert.deepEqual(
        out.map((o) => o.name),
        ['PY'],
      );
      assert.deepEqual(out[0].shape, [1, 4]);
      assert.deepEqual(out[0].data, [3, 4, 5, 6]);
    });

    it('BLS errors reach the caller with the target’s code and message', async () => {
      const res = await post(`${s.url}/v2/models/bls_ts/infer`, {
        inputs: [
          { name: 'A', datatype: 'INT32', shape: [1, 16], data: [-1, ...a.slice(1)] },
          { name: 'B', datatype: 'INT32', shape: [1, 16], data: b },
        ],
        outputs: [{ name: 'SUM' }],
      });
      assert.ok(res.status >= 400, `status ${res.status}`);
      assert.match(res.json<{ error: string }>().error, /no_such_model/);
    });
  });

  describe('errors and faults', () => {
    it('a NereidError thrown by execute() keeps its code (HTTP 400) and message', async () => {
      const res = await post(`${s.url}/v2/models/faults_js/infer`, {
        inputs: [{ name: 'MODE', datatype: 'BYTES', shape: [1], data: ['throw'] }],
      });
      assert.equal(res.status, 400);
      assert.equal(res.json<{ error: string }>().error, 'this model refuses the request');
    });

    it('any other exception is INTERNAL; a wrong response count and a wrong output datatype are caught', async () => {
      await assert.rejects(infer('faults_js', [bytes('MODE', ['throw_plain'])]), {
        code: 'INTERNAL',
        // Where in the model's own file it threw (docs/errors.md), the error's own text last.
        message:
          /^model 'faults_js' version 1 instance 'faults_js_\d+(_\d+)?': execute\(\) failed at 1\/model\.mjs:\d+:\d+: Error: plain failure$/,
      });
      await assert.rejects(infer('faults_js', [bytes('MODE', ['wrong_count'])]), {
        code: 'INTERNAL',
        message:
          /Number of InferenceResponse objects do not match the number of InferenceRequest objects\. InferenceRequest\(s\) size is:1, and InferenceResponse\(s\) size is:0/,
      });
      await assert.rejects(infer('faults_js', [bytes('MODE', ['bad_output'])]), {
        code: 'INTERNAL',
        message: /sent output 'OUT' as FP32, but its config declares INT32/,
      });
      await assert.rejects(infer('faults_js', [bytes('MODE', ['moved'])]), {
        message: /output 'OUT': its buffer was already sent in a response/,
      });
      const ok = await infer('faults_js', [bytes('MODE', ['ok'])]);
      assert.deepEqual(readInt32(ok, 'OUT'), [1]);
    });

    for (const mode of ['hang', 'spin']) {
      it(`a model that ${mode === 'hang' ? 'never resolves' : 'loops forever'} times out; the other instance and other models keep serving`, async () => {
        const started = Date.now();
        const stuck = infer('faults_js', [bytes('MODE', [mode])]);
        // While one instance is stuck: the event loop answers, the other instance and `simple` serve.
        const lagStart = performance.now();
        await new Promise((r) => setTimeout(r, 50));
        // A blocked main thread would run this 50 ms timer only after the 1500 ms execution timeout.
        assert.ok(performance.now() - lagStart < 1400, 'the main thread is not blocked');
        const other = await infer('faults_js', [bytes('MODE', ['ok'])]);
        assert.deepEqual(readInt32(other, 'OUT'), [1]);
        const simple = await infer('simple', [
          int32('INPUT0', new Array<number>(16).fill(1), [1, 16]),
          int32('INPUT1', new Array<number>(16).fill(1), [1, 16]),
        ]);
        assert.deepEqual(readInt32(simple, 'OUTPUT0'), new Array<number>(16).fill(2));
        await assert.rejects(stuck, {
          code: 'UNAVAILABLE',
          message: /made no progress for 1500 ms \(execution_timeout_ms\); its worker was restarted/,
        });
        assert.ok(Date.now() - started >= 1400, 'failed by the timeout, not before');
        // The replaced worker serves again: both instances answer.
        const after = await Promise.all(
          [0, 1, 2, 3].map(() => infer('faults_js', [bytes('MODE', ['burn:50'])])),
        );
        assert.equal(
          new Set(after.map((r) => readFloat64(r, 'TIMES')[2])).size,
          2,
          'two live worker threads',
        );
      });
    }

    for (const mode of ['exit', 'uncaught']) {
      it(`a worker that dies (${mode}) fails its request with INTERNAL and is restarted`, async () => {
        await assert.rejects(infer('faults_js', [bytes('MODE', [mode])]), {
          code: 'INTERNAL',
          message: /its worker thread exited unexpectedly/,
        });
        const r = await infer('faults_js', [bytes('MODE', ['ok'])]);
        assert.deepEqual(readInt32(r, 'OUT'), [1]);
        assert.ok(s.logs.some((l) => l.includes('exited') && l.includes('restarting it')));
      });
    }

    it('CPU-bound executions run in parallel on the instances’ own threads', async () => {
      // Both workers up (an earlier test restarted one): two distinct threads answer.
      await waitFor(async () => {
        const rs = await Promise.all(
          [0, 1, 2, 3].map(() => infer('faults_js', [bytes('MODE', ['burn:20'])])),
        );
        return new Set(rs.map((r) => readFloat64(r, 'TIMES')[2])).size === 2;
      });
      const rs = await Promise.all([0, 1].map(() => infer('faults_js', [bytes('MODE', ['burn:400'])])));
      const [a, b] = rs.map((r) => readFloat64(r, 'TIMES'));
      assert.notEqual(a[2], b[2], 'two worker threads');
      assert.ok(
        a[0] < b[1] && b[0] < a[1],
        `the two executions overlap: [${a[0]}, ${a[1]}] [${b[0]}, ${b[1]}]`,
      );
    });
  });

  describe('threads', () => {
    it('unload leaves no worker thread behind', async () => {
      await post(`${s.url}/v2/repository/models/faults_js/unload`, {});
      const before = threadCount();
      await post(`${s.url}/v2/repository/models/faults_js/load`, {});
      assert.ok(
        threadCount() >= before + 2,
        `two instances, two worker threads (${before} -> ${threadCount()})`,
      );
      await infer('faults_js', [bytes('MODE', ['exit'])]).catch(() => undefined); // one restart on the way
      await infer('faults_js', [bytes('MODE', ['ok'])]);
      assert.equal((await post(`${s.url}/v2/repository/models/faults_js/unload`, {})).status, 200);
      assert.equal(threadCount(), before);
      await post(`${s.url}/v2/repository/models/faults_js/load`, {});
    });
  });

  describe('tensors', () => {
    it('an input in a SharedArrayBuffer reaches the model and comes back without a copy', async () => {
      const shared = new SharedArrayBuffer(16);
      const data = Buffer.from(shared);
      new Float32Array(shared).set([1, 2, 3, 4]);
      const r = await infer('identity_js', [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data }]);
      const out = r.outputs[0].data;
      assert.ok(out.buffer instanceof SharedArrayBuffer, 'the output is a view of shared memory');
      new Float32Array(shared)[0] = 42; // written after the response: the output sees it
      assert.equal(out.readFloatLE(0), 42);
    });

    it('BYTES tensors keep their framing through the worker', async () => {
      const r = await infer('tokenizer_ts', [bytes('TEXT', ['good movie'], [1, 1])]);
      const ids = r.outputs[0];
      assert.equal(ids.datatype, 'INT64');
      assert.deepEqual(ids.shape, [1, 16]);
      assert.deepEqual(
        [...ids.data.subarray(0, 24)],
        [...Buffer.from(new BigInt64Array([21n, 16n, 0n]).buffer)],
      );
    });
  });

  describe('examples', () => {
    const logits = (r: InferenceResponse): number[] => {
      const t = r.outputs[0];
      return Array.from(
        new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length)),
      );
    };

    it('tokenizer_ts: deterministic ids from the tiny vocabulary, padded to 16, one row per batch row', async () => {
      const r = await infer('tokenizer_ts', [bytes('TEXT', ['This movie was GREAT', 'zzz'], [2, 1])]);
      const t = r.outputs[0];
      const ids = Array.from(
        new BigInt64Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length)),
        Number,
      );
      assert.deepEqual(t.shape, [2, 16]);
      assert.deepEqual(ids.slice(0, 5), [5, 16, 9, 22, 0]);
      assert.deepEqual(ids.slice(16, 18), [1, 0]);
    });

    it('text_classifier_ensemble: the TypeScript tokenizer feeds the ONNX scorer (in-process and HTTP)', async () => {
      const r = await infer('text_classifier_ensemble', [
        bytes('TEXT', ['I love this great movie', 'a terrible and boring film'], [2, 1]),
      ]);
      const [negA, posA, negB, posB] = logits(r);
      assert.ok(posA > negA && negB > posB, `logits ${logits(r).join(',')}`);
      const res = await post(`${s.url}/v2/models/text_classifier_ensemble/infer`, {
        inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: ['excellent food'] }],
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [0, 2]);
    });
  });
});

/** A response sender that keeps what the instance sends (the core's part, reduced to a record). */
function collectingRequest(
  id: string,
  inputs: InferInput[],
  outputs: string[],
): {
  request: BackendRequest;
  sent: { outputs: readonly CoreTensor[]; final: boolean }[];
  failed: () => NereidError | undefined;
} {
  const sent: { outputs: readonly CoreTensor[]; final: boolean }[] = [];
  let failure: NereidError | undefined;
  let done = false;
  const request: BackendRequest = {
    id,
    inputs: new Map(inputs.map((t) => [t.name, t])),
    requestedOutputs: new Set(outputs),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize: inputs[0]?.shape[0] ?? 1,
    signal: new AbortController().signal,
    sender: {
      send(o, options) {
        sent.push({ outputs: o, final: options.final });
        if (options.final) done = true;
      },
      fail(e) {
        failure = e;
        done = true;
      },
      get done() {
        return done;
      },
    },
  };
  return { request, sent, failed: () => failure };
}

describe('javascript backend instances, used directly', () => {
  let dir: string;
  const backend = new JavascriptBackend();

  before(() => {
    dir = makeRepository({});
    for (const m of ['lifecycle_ts', 'identity_js'])
      cpSync(path.join(FIXTURES, m), path.join(dir, m), { recursive: true });
  });
  after(() => removeRepository(dir));

  async function instanceOf(model: string): Promise<JsInstance> {
    const modelDir = path.join(dir, model);
    const versionDir = path.join(modelDir, '1');
    const log = silentLogger();
    const raw = parseModelConfigText(readFileSync(path.join(modelDir, 'config.pbtxt'), 'utf8'), model);
    const completed = await backend.autoCompleteConfig({
      config: raw,
      modelDir,
      versionDir,
      modelPath: path.join(versionDir, 'model.js'),
      backendConfig: {},
      log,
    });
    const config = freezeModelConfig(
      normalizeModelConfig(completed, { backend: 'javascript', defaultModelFilename: 'model.js' }),
    );
    const handle = await backend.loadModel({
      config,
      modelName: model,
      version: 1,
      modelDir,
      versionDir,
      modelPath: path.join(versionDir, 'model.js'),
      backendConfig: {},
      log,
    });
    return (await handle.createInstance({
      name: `${model}_0`,
      groupName: model,
      index: 0,
      kind: 'KIND_CPU',
      deviceId: 0,
    })) as JsInstance;
  }

  it('isReady() asks the model; custom metrics count what execute() recorded; close() runs finalize()', async () => {
    const before = threadCount();
    const instance = await instanceOf('lifecycle_ts');
    assert.equal(await instance.isReady(), true);
    writeFileSync(path.join(dir, 'lifecycle_ts', 'not_ready'), '');
    assert.equal(await instance.isReady(), false);
    rmSync(path.join(dir, 'lifecycle_ts', 'not_ready'));
    assert.equal(await instance.isReady(), true);

    const calls = [1, 2, 3].map((i) =>
      collectingRequest(`r${i}`, [int32('IN', [i], [1, 1])], ['OUT', 'BATCH']),
    );
    await instance.execute(calls.map((c) => c.request));
    assert.deepEqual(
      calls.map((c) => [c.sent.length, c.sent[0].final, c.sent[0].outputs.map((o) => o.name).sort()]),
      calls.map(() => [1, true, ['BATCH', 'OUT']]),
      'one final response per request, only the requested outputs',
    );
    const metrics = await instance.customMetrics();
    const family = metrics.find((f) => f.name === 'lifecycle_requests_total');
    assert.equal(family?.kind, 'counter');
    assert.deepEqual(
      family?.metrics.map((m) => [m.labels, m.value]),
      [[{ model: 'lifecycle_ts' }, 3]],
    );

    await instance.close();
    assert.match(
      readFileSync(path.join(dir, 'lifecycle_ts', 'finalized.txt'), 'utf8'),
      /finalized after 1 executions/,
    );
    assert.equal(await instance.isReady(), false);
    assert.equal(threadCount(), before, 'close() ended the worker thread');
  });

  it('a 3x224x224 FP32 input is copied once on the way in; the output moves back without a copy', async () => {
    const instance = await instanceOf('identity_js');
    try {
      const n = 3 * 224 * 224;
      const values = new Float32Array(n).map((_, i) => i % 251);
      const input: InferInput = {
        name: 'INPUT0',
        datatype: 'FP32',
        shape: [1, n],
        data: Buffer.from(values.buffer),
      };
      const call = collectingRequest('big', [input], ['OUTPUT0']);
      await instance.execute([call.request]);
      const out = call.sent[0].outputs[0];
      assert.equal(out.data.length, n * 4);
      assert.equal(out.data.byteOffset, 0);
      assert.equal(out.data.buffer.byteLength, n * 4, 'the output is the whole buffer the worker moved');
      assert.ok(out.data.equals(input.data));
      assert.equal(input.data.length, n * 4, 'the core’s input buffer was not moved away');
      assert.deepEqual(await instance.transferCounters(), {
        inputBytesCopied: n * 4,
        inputBytesShared: 0,
        outputBytesMoved: n * 4,
        outputBytesCopied: 0,
        outputBytesShared: 0,
      });
    } finally {
      await instance.close();
    }
  });
});
