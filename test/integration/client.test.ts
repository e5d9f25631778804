// nereid/client against the real server: HttpClient and GrpcClient on the bundled examples (simple,
// simple_string, densenet_onnx classification), every datatype through identity models (binary and
// JSON / typed contents), model control with config and file overrides, statistics, shared memory,
// errors with their status and message, cancellation, the gRPC stream, and both clients giving the same
// answers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { DataType } from '../../src/common/datatype.js';
import { ShmObjects } from '../../src/core/shm/shm.testkit.js';
import {
  GrpcClient,
  GrpcStatus,
  HttpClient,
  InferInput,
  InferRequestedOutput,
  NereidClientError,
  type InferenceClient,
  type InferResult,
  type TensorValues,
} from '../../src/client/index.js';
import {
  EXAMPLES,
  FIXTURES,
  makeRepository,
  removeRepository,
  startServer,
  type TestServer,
} from './harness.js';

const ADD_SUB = (name: string): string => `
name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
`;

// square_int32 (Triton's `square` test backend, built in: IN = n gives n responses OUT = n, then a
// flag-only final) comes from the bundled examples.

/** Sample values per datatype, extremes included; the identity models must return them unchanged. */
const SAMPLES: Partial<Record<DataType, { values: TensorValues; expected: unknown[] }>> = {
  BOOL: { values: [true, false, true], expected: [true, false, true] },
  UINT8: { values: [0, 255, 7], expected: [0, 255, 7] },
  UINT16: { values: [0, 65535, 7], expected: [0, 65535, 7] },
  UINT32: { values: [0, 4294967295, 7], expected: [0, 4294967295, 7] },
  UINT64: { values: [0n, 2n ** 64n - 1n, 7n], expected: [0n, 2n ** 64n - 1n, 7n] },
  INT8: { values: [-128, 127, 0], expected: [-128, 127, 0] },
  INT16: { values: [-32768, 32767, 0], expected: [-32768, 32767, 0] },
  INT32: { values: [-2147483648, 2147483647, 0], expected: [-2147483648, 2147483647, 0] },
  INT64: { values: [-(2n ** 63n), 2n ** 63n - 1n, 0n], expected: [-(2n ** 63n), 2n ** 63n - 1n, 0n] },
  FP16: { values: [1, -2.5, 65504], expected: [1, -2.5, 65504] },
  FP32: { values: [1.5, -0.25, Math.fround(3.3e38)], expected: [1.5, -0.25, Math.fround(3.3e38)] },
  FP64: { values: [Math.PI, -1e300, 5e-324], expected: [Math.PI, -1e300, 5e-324] },
  BYTES: { values: ['a', 'héllo wörld', ''], expected: ['a', 'héllo wörld', ''] },
};
const DATATYPES = Object.keys(SAMPLES) as DataType[];
const identity = (d: DataType): string => `id_${d.toLowerCase()}`;

const IN0 = Int32Array.from({ length: 16 }, (_, i) => i);
const IN1 = Int32Array.from({ length: 16 }, () => 1);

function simpleInputs(batch = 1, binary = true): InferInput[] {
  const repeat = (a: Int32Array): Int32Array => Int32Array.from({ length: 16 * batch }, (_, i) => a[i % 16]);
  return [
    new InferInput('INPUT0', [batch, 16], 'INT32').setData(repeat(IN0), { binary }),
    new InferInput('INPUT1', [batch, 16], 'INT32').setData(repeat(IN1), { binary }),
  ];
}

/** Everything a result says, in plain values (for comparing results of the two clients). */
function summary(r: InferResult): unknown {
  return {
    model: [r.modelName, r.modelVersion, r.id],
    parameters: r.parameters,
    outputs: r.outputs.map((o) => ({ ...o, data: r.asArray(o.name) })),
  };
}

async function rejection(p: Promise<unknown>): Promise<NereidClientError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof NereidClientError, `expected a NereidClientError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

describe('nereid/client against a real server', () => {
  let s: TestServer;
  let repo: string;
  let http: HttpClient;
  let grpc: GrpcClient;
  const shm = new ShmObjects();

  before(async () => {
    const models: Record<string, { config?: string; onnx?: string }> = {
      ctl_http: { config: ADD_SUB('ctl_http'), onnx: 'add_sub_fp32.onnx' },
      ctl_grpc: { config: ADD_SUB('ctl_grpc'), onnx: 'add_sub_fp32.onnx' },
    };
    for (const d of DATATYPES) models[identity(d)] = { onnx: `identity_${d.toLowerCase()}.onnx` };
    repo = makeRepository(models);
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--allow-client-shm=true',
      ...['simple', 'simple_string', 'densenet_onnx', 'square_int32', ...DATATYPES.map(identity)].map(
        (m) => `--load-model=${m}`,
      ),
    ]);
    assert.ok(s.running.grpc, 'the server serves gRPC');
    http = new HttpClient(s.url);
    grpc = new GrpcClient(`127.0.0.1:${s.running.grpc.port}`);
  });

  after(async () => {
    http?.close();
    grpc?.close();
    await s?.stop();
    removeRepository(repo);
    shm.cleanup();
  });

  for (const kind of ['http', 'grpc'] as const) {
    describe(`${kind === 'http' ? 'HttpClient' : 'GrpcClient'}`, () => {
      const c = (): InferenceClient => (kind === 'http' ? http : grpc);

      it('health and metadata', async () => {
        assert.equal(await c().isServerLive(), true);
        assert.equal(await c().isServerReady(), true);
        assert.equal(await c().isModelReady('simple'), true);
        assert.equal(await c().isModelReady('simple', 1), true);
        assert.equal(await c().isModelReady('no_such_model'), false);
        const server = await c().serverMetadata();
        assert.equal(server.name, 'triton');
        assert.ok(server.extensions.includes('binary_tensor_data'));
        assert.deepEqual(await c().modelMetadata('simple'), {
          name: 'simple',
          versions: ['1'],
          platform: 'onnxruntime_onnx',
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
            { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] },
          ],
          outputs: [
            { name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] },
            { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] },
          ],
        });
        const config = await c().modelConfig('simple');
        assert.equal(config.max_batch_size, 8);
        assert.deepEqual((config.input as { dims: number[] }[])[0].dims, [16]);
      });

      it('simple: sums and differences, binary and JSON / typed contents', async () => {
        for (const binary of [true, false]) {
          const r = await c().infer('simple', simpleInputs(1, binary), {
            requestId: `req-${kind}`,
            outputs: [
              new InferRequestedOutput('OUTPUT0', { binary }),
              new InferRequestedOutput('OUTPUT1', { binary }),
            ],
          });
          assert.equal(r.modelName, 'simple');
          assert.equal(r.modelVersion, '1');
          assert.equal(r.id, `req-${kind}`);
          assert.deepEqual(r.output('OUTPUT0'), {
            name: 'OUTPUT0',
            datatype: 'INT32',
            shape: [1, 16],
            parameters: {},
          });
          assert.deepEqual(
            Array.from(r.asTypedArray('OUTPUT0', 'INT32')),
            Array.from(IN0, (v) => v + 1),
          );
          assert.deepEqual(
            r.asArray('OUTPUT1', 'INT32'),
            Array.from(IN0, (v) => v - 1),
          );
        }
        // No outputs named: every output comes back.
        const all = await c().infer('simple', simpleInputs(2));
        assert.deepEqual(
          all.outputs.map((o) => [o.name, o.shape]),
          [
            ['OUTPUT0', [2, 16]],
            ['OUTPUT1', [2, 16]],
          ],
        );
      });

      it('simple_string: decimal strings in and out', async () => {
        const a = Array.from({ length: 16 }, (_, i) => String(i * 10));
        const r = await c().infer('simple_string', [
          new InferInput('INPUT0', [1, 16], 'BYTES').setData(a),
          new InferInput('INPUT1', [1, 16], 'BYTES').setData(new Array<string>(16).fill('3'), {
            binary: false,
          }),
        ]);
        assert.deepEqual(
          r.asArray('OUTPUT0', 'BYTES'),
          a.map((x) => String(Number(x) + 3)),
        );
        assert.deepEqual(
          r.asBytes('OUTPUT1').map((b) => b.toString()),
          a.map((x) => String(Number(x) - 3)),
        );
      });

      it('densenet_onnx: top-3 classification agrees with the logits and the label file', async () => {
        const pixels = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 7919) % 255) / 255);
        const image = new InferInput('data_0', [3, 224, 224], 'FP32').setData(pixels);
        const logits = (await c().infer('densenet_onnx', [image])).asArray('fc6_1', 'FP32');
        assert.equal(logits.length, 1000);
        const r = await c().infer('densenet_onnx', [image], {
          outputs: [new InferRequestedOutput('fc6_1', { classCount: 3 })],
        });
        assert.deepEqual(r.output('fc6_1')?.datatype, 'BYTES');
        assert.deepEqual(r.output('fc6_1')?.shape, [3]);
        const labels = readFileSync(path.join(EXAMPLES, 'densenet_onnx/densenet_labels.txt'), 'utf8').split(
          '\n',
        );
        const top = [...logits.keys()].sort((x, y) => logits[y] - logits[x]).slice(0, 3);
        const classes = r.asArray('fc6_1', 'BYTES').map((t) => t.split(':'));
        assert.deepEqual(
          classes.map(([, index, label]) => [Number(index), label]),
          top.map((i) => [i, labels[i]]),
        );
        for (const [score, index] of classes)
          assert.ok(Math.abs(Number(score) - logits[Number(index)]) < 1e-4);
      });

      it('every datatype round-trips through an identity model, binary and not', async () => {
        for (const d of DATATYPES) {
          const { values, expected } = SAMPLES[d]!;
          // FP16 has neither a JSON form nor a typed gRPC contents field.
          for (const binary of d === 'FP16' ? [true] : [true, false]) {
            const input = new InferInput('INPUT0', [1, values.length], d).setData(values, { binary });
            const r = await c().infer(identity(d), [input], {
              outputs: [new InferRequestedOutput('OUTPUT0', { binary })],
            });
            assert.deepEqual(r.output('OUTPUT0')?.datatype, d);
            assert.deepEqual(r.asArray('OUTPUT0'), expected, `${d} (binary: ${binary})`);
          }
        }
      });

      it('model control: load, override config and files, index, unload', async () => {
        const name = `ctl_${kind}`;
        assert.equal(await c().isModelReady(name), false);
        await c().loadModel(name);
        assert.equal(await c().isModelReady(name), true);
        const x = Float32Array.from({ length: 16 }, (_, i) => i / 2);
        const inputs = [
          new InferInput('INPUT0', [1, 16], 'FP32').setData(x),
          new InferInput('INPUT1', [1, 16], 'FP32').setData(x),
        ];
        assert.deepEqual(
          Array.from((await c().infer(name, inputs)).asTypedArray('OUTPUT0', 'FP32')),
          Array.from(x, (v) => v * 2),
        );
        let entry = (await c().repositoryIndex()).find((e) => e.name === name);
        assert.deepEqual(entry, { name, version: '1', state: 'READY', reason: '' });
        assert.ok((await c().repositoryIndex({ ready: true })).every((e) => e.state === 'READY'));

        // A config override (object form) replaces config.pbtxt for this load.
        const config = await c().modelConfig(name);
        await c().loadModel(name, { config: { ...config, max_batch_size: 2 } });
        assert.equal((await c().modelConfig(name)).max_batch_size, 2);

        // A config plus files loads a model that is not in any repository.
        const fileModel = `${name}_files`;
        await c().loadModel(fileModel, {
          config: JSON.stringify({
            name: fileModel,
            backend: 'onnxruntime',
            max_batch_size: 4,
            input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
            output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
          }),
          files: { '1/model.onnx': readFileSync(path.join(FIXTURES, 'identity_fp32.onnx')) },
        });
        const echoed = await c().infer(fileModel, [
          new InferInput('INPUT0', [1, 3], 'FP32').setData([1, 2, 3]),
        ]);
        assert.deepEqual(echoed.asArray('OUTPUT0'), [1, 2, 3]);

        await c().unloadModel(fileModel);
        await c().unloadModel(name, { unloadDependents: true });
        assert.equal(await c().isModelReady(name), false);
        entry = (await c().repositoryIndex()).find((e) => e.name === name);
        assert.deepEqual(entry, { name, version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
        const err = await rejection(c().loadModel('not_in_any_repository'));
        assert.match(err.message, /model not found in any model repository/);
      });

      it('statistics count what was run', async () => {
        const [before] = await c().modelStatistics('simple');
        for (let i = 0; i < 3; i++) await c().infer('simple', simpleInputs(2));
        const [after] = await c().modelStatistics('simple', '1');
        assert.equal(after.name, 'simple');
        assert.equal(after.version, '1');
        assert.equal(after.inference_count - before.inference_count, 6);
        assert.equal(after.execution_count - before.execution_count, 3);
        assert.equal(after.inference_stats.success.count - before.inference_stats.success.count, 3);
        assert.ok(after.inference_stats.compute_infer.ns > before.inference_stats.compute_infer.ns);
        assert.ok(after.last_inference >= before.last_inference);
        assert.ok(after.batch_stats.some((b) => b.batch_size === 2 && b.compute_infer.count >= 3));
        const all = await c().modelStatistics();
        assert.ok(all.some((m) => m.name === 'simple') && all.some((m) => m.name === 'densenet_onnx'));
      });

      it('errors carry the HTTP status (and gRPC code) and the server message', async () => {
        const grpcCode = (code: number): number | undefined => (kind === 'grpc' ? code : undefined);
        let err = await rejection(c().infer('no_such_model', simpleInputs()));
        assert.equal(err.status, 404);
        assert.equal(err.grpcCode, grpcCode(GrpcStatus.NOT_FOUND));
        assert.equal(err.message, "Request for unknown model: 'no_such_model' is not found");

        err = await rejection(c().infer('simple', simpleInputs().slice(0, 1)));
        assert.equal(err.status, 400);
        assert.equal(err.grpcCode, grpcCode(GrpcStatus.INVALID_ARGUMENT));
        assert.match(err.message, /expected 2 inputs but got 1 inputs for model 'simple'/);

        const wrongType = [
          new InferInput('INPUT0', [1, 16], 'FP32').setData(new Float32Array(16)),
          simpleInputs()[1],
        ];
        err = await rejection(c().infer('simple', wrongType));
        assert.equal(err.status, 400);
        assert.match(err.message, /INPUT0/);

        err = await rejection(c().modelMetadata('no_such_model'));
        assert.equal(err.status, 404);
        // Refused before sending: argument errors are TypeError / RangeError.
        assert.throws(() => new InferInput('INPUT0', [1, 16], 'INT32').setData([1, 2]), RangeError);
        await assert.rejects(c().infer('simple', [new InferInput('INPUT0', [1, 16], 'INT32')]), TypeError);
      });

      it('an aborted signal cancels the call with its reason', async () => {
        await assert.rejects(
          c().infer('simple', simpleInputs(), { signal: AbortSignal.abort() }),
          (e: unknown) => e instanceof Error && e.name === 'AbortError',
        );
        const image = new InferInput('data_0', [3, 224, 224], 'FP32').setData(
          new Float32Array(3 * 224 * 224),
        );
        const controller = new AbortController();
        const call = c().infer('densenet_onnx', [image], { signal: controller.signal });
        setImmediate(() => controller.abort(new Error('gave up')));
        await assert.rejects(call, /gave up/);
        assert.equal(await c().isServerLive(), true);
      });

      it('system shared memory: register, infer from and into regions, status, unregister', async () => {
        const input = shm.create(Buffer.concat([Buffer.from(IN0.buffer), Buffer.from(IN1.buffer)]), kind);
        const output = shm.create(128, kind);
        await c().registerSystemSharedMemory(`in_${kind}`, `/${input}`, 128);
        await c().registerSystemSharedMemory(`out_${kind}`, `/${output}`, 128);
        const status = await c().systemSharedMemoryStatus(`in_${kind}`);
        assert.deepEqual(status, [{ name: `in_${kind}`, key: `/${input}`, offset: 0, byte_size: 128 }]);
        const r = await c().infer(
          'simple',
          [
            new InferInput('INPUT0', [1, 16], 'INT32').setSharedMemory(`in_${kind}`, 64),
            new InferInput('INPUT1', [1, 16], 'INT32').setSharedMemory(`in_${kind}`, 64, 64),
          ],
          {
            outputs: [
              new InferRequestedOutput('OUTPUT0').setSharedMemory(`out_${kind}`, 64),
              new InferRequestedOutput('OUTPUT1').setSharedMemory(`out_${kind}`, 64, 64),
            ],
          },
        );
        assert.equal(r.output('OUTPUT0')?.sharedMemory?.region, `out_${kind}`);
        assert.throws(() => r.asArray('OUTPUT0'), /in shared-memory region/);
        const written = shm.read(output);
        assert.deepEqual(Array.from(new Int32Array(written.buffer, written.byteOffset, 32)), [
          ...Array.from(IN0, (v) => v + 1),
          ...Array.from(IN0, (v) => v - 1),
        ]);
        await c().unregisterSystemSharedMemory(`in_${kind}`);
        await c().unregisterSystemSharedMemory(`out_${kind}`);
        const names = (await c().systemSharedMemoryStatus()).map((x) => x.name);
        assert.ok(!names.includes(`in_${kind}`) && !names.includes(`out_${kind}`));
      });

      it('log settings read and update', async () => {
        const settings = await c().logSettings();
        assert.equal(typeof settings.log_verbose_level, 'number');
        const updated = await c().updateLogSettings({ log_verbose_level: 1 });
        assert.equal(updated.log_verbose_level, 1);
        assert.equal((await c().updateLogSettings({ log_verbose_level: 0 })).log_verbose_level, 0);
      });
    });
  }

  it('both clients give identical answers', async () => {
    const both = async (fn: (c: InferenceClient) => Promise<unknown>): Promise<void> => {
      const settle = (p: Promise<unknown>): Promise<unknown> =>
        p.then(
          (v) => v,
          (e: unknown) => (e instanceof NereidClientError ? { status: e.status, message: e.message } : e),
        );
      assert.deepEqual(await settle(fn(grpc)), await settle(fn(http)));
    };
    await both((c) => c.serverMetadata());
    await both((c) => c.modelMetadata('densenet_onnx'));
    for (const m of ['simple', 'simple_string', 'densenet_onnx', 'id_int64'])
      await both((c) => c.modelConfig(m));
    await both((c) => c.repositoryIndex());
    await both((c) => c.logSettings());
    await both((c) => c.traceSettings());
    await both((c) => c.traceSettings('simple'));
    await both((c) => c.cudaSharedMemoryStatus());
    await both(async (c) => summary(await c.infer('simple', simpleInputs(3), { requestId: 'same' })));
    await both(async (c) =>
      summary(
        await c.infer('simple_string', [
          new InferInput('INPUT0', [1, 16], 'BYTES').setData(new Array<string>(16).fill('12')),
          new InferInput('INPUT1', [1, 16], 'BYTES').setData(new Array<string>(16).fill('5')),
        ]),
      ),
    );
    await both(async (c) => summary(await c.infer('no_such_model', simpleInputs())));
    await both(async (c) => summary(await c.infer('simple', simpleInputs().slice(1))));
    await both((c) => c.unloadModel('no_such_model'));
  });

  describe('GrpcClient.streamInfer', () => {
    it('streams responses, with in-band errors, until the server ends the stream', async () => {
      const stream = grpc.streamInfer();
      stream.send({ model: 'simple', inputs: simpleInputs(), requestId: 'a' });
      stream.send({ model: 'no_such_model', inputs: simpleInputs(), requestId: 'b' });
      stream.send({ model: 'simple', inputs: simpleInputs(2), requestId: 'c' });
      stream.end();
      assert.throws(() => stream.send({ model: 'simple', inputs: simpleInputs() }), /closed for sending/);
      const ids: string[] = [];
      const errors: string[] = [];
      for await (const item of stream) {
        if (item.error) {
          errors.push(item.error.message);
          continue;
        }
        ids.push(item.result.id);
        assert.equal(item.result.final, true);
        assert.deepEqual(item.result.asArray('OUTPUT0', 'INT32').slice(0, 3), [1, 2, 3]);
      }
      assert.deepEqual(ids.sort(), ['a', 'c']);
      assert.deepEqual(errors, ["Request for unknown model: 'no_such_model' is not found"]);
    });

    it('a decoupled model streams several responses; the empty final response on request', async () => {
      const stream = grpc.streamInfer();
      const square = (n: number): InferInput[] => [new InferInput('IN', [1], 'INT32').setData([n])];
      stream.send({ model: 'square_int32', inputs: square(3), requestId: 'three' });
      stream.send({
        model: 'square_int32',
        inputs: square(2),
        requestId: 'two',
        enableEmptyFinalResponse: true,
      });
      stream.end();
      const seen: [string, boolean, number[]][] = [];
      for await (const r of stream.results()) {
        seen.push([r.id, r.final, r.outputs.length > 0 ? r.asArray('OUT', 'INT32') : []]);
      }
      assert.deepEqual(
        seen.filter(([id]) => id === 'three'),
        [
          ['three', false, [3]],
          ['three', false, [3]],
          ['three', false, [3]],
        ],
      );
      assert.deepEqual(
        seen.filter(([id]) => id === 'two'),
        [
          ['two', false, [2]],
          ['two', false, [2]],
          ['two', true, []],
        ],
      );
      // Unary inference cannot serve a decoupled model, over either protocol.
      for (const client of [http, grpc]) {
        const err = await rejection(client.infer('square_int32', square(1)));
        assert.equal(err.status, 501);
        assert.match(err.message, /doesn't support models with decoupled transaction policy/);
      }
    });

    it('results() yields results and throws the first in-band error', async () => {
      const stream = grpc.streamInfer();
      stream.send({ model: 'simple', inputs: simpleInputs() });
      stream.send({ model: 'simple', inputs: simpleInputs().slice(1) });
      stream.end();
      const seen: InferResult[] = [];
      await assert.rejects(
        (async () => {
          for await (const r of stream.results()) seen.push(r);
        })(),
        /expected 2 inputs but got 1/,
      );
      assert.equal(seen.length, 1);
    });

    it('an abort signal or leaving the loop cancels the stream', async () => {
      const controller = new AbortController();
      const stream = grpc.streamInfer({ signal: controller.signal });
      setImmediate(() => controller.abort(new Error('stream stopped')));
      await assert.rejects(
        (async () => {
          for await (const _ of stream) assert.fail('no response expected');
        })(),
        /stream stopped/,
      );

      const open = grpc.streamInfer();
      for (let i = 0; i < 3; i++) open.send({ model: 'simple', inputs: simpleInputs() });
      let n = 0;
      for await (const item of open) {
        assert.ok(item.result);
        if (++n === 1) break;
      }
      assert.throws(() => open.send({ model: 'simple', inputs: simpleInputs() }), /closed/);
      assert.equal(await grpc.isServerLive(), true);
    });
  });

  it('HttpClient: compressed requests and responses read the same', async () => {
    const plain = summary(await http.infer('simple', simpleInputs(2)));
    for (const [req, res] of [
      ['gzip', 'deflate'],
      ['deflate', 'gzip'],
    ] as const) {
      const r = await http.infer('simple', simpleInputs(2), {
        requestCompression: req,
        responseCompression: res,
      });
      assert.deepEqual(summary(r), plain);
    }
  });

  it('a server that is not there fails with a NereidClientError without status', async () => {
    const nowhere = new HttpClient('127.0.0.1:1');
    try {
      const err = await rejection(nowhere.isServerLive());
      assert.equal(err.status, undefined);
      assert.match(err.message, /ECONNREFUSED/);
    } finally {
      nowhere.close();
    }
    const nowhereGrpc = new GrpcClient('127.0.0.1:1');
    try {
      const err = await rejection(nowhereGrpc.isServerLive());
      assert.equal(err.grpcCode, GrpcStatus.UNAVAILABLE);
    } finally {
      nowhereGrpc.close();
    }
  });
});
