// The gRPC endpoint against the real server (example repository plus identity models of every datatype),
// with @grpc/grpc-js as the client: every rpc, raw and typed tensor contents for every datatype, errors
// and their status codes, shared memory, many streams with many requests, cancellation mid-stream, a
// 300 MB tensor through identity_fp32, malformed frames; the server stays healthy after each.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import { ALL_DATATYPES, type DataType } from '../../src/common/datatype.js';
import { joinBytesElements, splitBytesElements } from '../../src/common/tensor.js';
import { ShmObjects } from '../../src/core/shm/shm.testkit.js';
import { frame } from '../../src/frontends/grpc/transport/framing.js';
import type { Plain } from '../../src/frontends/grpc/messages.js';
import { TestClient, encodeMessage } from '../../src/frontends/grpc/test-client.testkit.js';
import { packageVersion } from '../../src/compose/compose.js';
import {
  EXAMPLES,
  makeRepository,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';

const SERVED = ALL_DATATYPES.filter((d) => d !== 'BF16'); // onnxruntime-node has no bfloat16
// Prefixed: the example repository already has an identity_fp32, and names must be unique across repositories.
const identityOf = (d: DataType): string => `g_identity_${d.toLowerCase()}`;
const int32s = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
const int32sOf = (b: Uint8Array): number[] => {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length);
  return Array.from({ length: buf.length / 4 }, (_, i) => buf.readInt32LE(i * 4));
};
const IN0 = Array.from({ length: 16 }, (_, i) => i);
const IN1 = Array.from({ length: 16 }, () => 3);

const SLOW = `
name: "slow"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
`;

function simpleRequest(id: string, a = IN0, b = IN1, extra: object = {}): object {
  return {
    model_name: 'simple',
    id,
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32s(a), int32s(b)],
    ...extra,
  };
}

/** Typed contents for a datatype: the InferTensorContents field and the values it carries. */
function typedContents(d: DataType, n: number): { contents: object; raw: Buffer } {
  const ints = Array.from({ length: n }, (_, i) => i * 3 - 7);
  const uints = Array.from({ length: n }, (_, i) => i * 3 + 1);
  switch (d) {
    case 'BOOL': {
      const v = Array.from({ length: n }, (_, i) => i % 3 === 0);
      return { contents: { bool_contents: v }, raw: Buffer.from(v.map(Number)) };
    }
    case 'INT8':
      return { contents: { int_contents: ints }, raw: Buffer.from(new Int8Array(ints).buffer) };
    case 'INT16':
      return { contents: { int_contents: ints }, raw: Buffer.from(new Int16Array(ints).buffer) };
    case 'INT32':
      return { contents: { int_contents: ints }, raw: Buffer.from(new Int32Array(ints).buffer) };
    case 'INT64': {
      const v = ints.map((x) => BigInt(x) * 2n ** 40n);
      return { contents: { int64_contents: v.map(String) }, raw: Buffer.from(new BigInt64Array(v).buffer) };
    }
    case 'UINT8':
      return { contents: { uint_contents: uints }, raw: Buffer.from(new Uint8Array(uints).buffer) };
    case 'UINT16':
      return { contents: { uint_contents: uints }, raw: Buffer.from(new Uint16Array(uints).buffer) };
    case 'UINT32':
      return { contents: { uint_contents: uints }, raw: Buffer.from(new Uint32Array(uints).buffer) };
    case 'UINT64': {
      const v = uints.map((x) => BigInt(x) + 2n ** 63n);
      return { contents: { uint64_contents: v.map(String) }, raw: Buffer.from(new BigUint64Array(v).buffer) };
    }
    case 'FP32': {
      const v = ints.map((x) => x * 1.5);
      return { contents: { fp32_contents: v }, raw: Buffer.from(new Float32Array(v).buffer) };
    }
    case 'FP64': {
      const v = ints.map((x) => x / 3);
      return { contents: { fp64_contents: v }, raw: Buffer.from(new Float64Array(v).buffer) };
    }
    case 'BYTES': {
      const v = ints.map((x) => Buffer.from(`text ${x} é`));
      return { contents: { bytes_contents: v }, raw: joinBytesElements(v) };
    }
    default:
      throw new Error(`${d} has no typed contents`);
  }
}

async function rejectsWith(p: Promise<unknown>, code: number, details?: string | RegExp): Promise<void> {
  try {
    await p;
  } catch (e) {
    const err = e as ServiceError;
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.details}`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else if (details) assert.match(err.details, details);
    return;
  }
  assert.fail('the call succeeded');
}

function collect(
  stream: ReturnType<TestClient['stream']>,
): Promise<{ messages: Plain[]; error?: ServiceError }> {
  const messages: Plain[] = [];
  return new Promise((resolve) => {
    stream.on('data', (m: Plain) => messages.push(m));
    stream.on('error', (error: ServiceError) => resolve({ messages, error }));
    stream.on('end', () => resolve({ messages }));
  });
}

/** Sends bytes no gRPC library would send; resolves with the grpc-status the server answered. */
function rawGrpc(
  port: number,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      ...headers,
    });
    let status = -1;
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']);
    };
    req.on('response', take);
    req.on('trailers', take);
    req.on('data', () => {});
    req.on('error', () => {});
    req.on('close', () => {
      session.close();
      resolve(status);
    });
    req.end(body);
  });
}

describe('gRPC against the real server', () => {
  let s: TestServer;
  let repo: string;
  let client: TestClient;
  let port: number;
  const shm = new ShmObjects();

  before(async () => {
    const models: Record<string, { config?: string; onnx: string }> = {
      slow: { config: SLOW, onnx: 'slow_fp32.onnx' },
      broken: { onnx: 'corrupt.onnx' },
    };
    for (const d of SERVED) models[identityOf(d)] = { onnx: `identity_${d.toLowerCase()}.onnx` };
    repo = makeRepository(models);
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--allow-client-shm=true',
      '--exit-on-error=false',
      '--strict-readiness=false',
      ...['simple', 'simple_int8', 'simple_string', 'identity_fp32', 'densenet_onnx', 'slow'].map(
        (m) => `--load-model=${m}`,
      ),
      ...SERVED.map((d) => `--load-model=${identityOf(d)}`),
    ]);
    assert.ok(s.running.grpc);
    port = s.running.grpc.port;
    assert.ok(s.logs.some((l) => l.includes(`Started GRPCInferenceService at 127.0.0.1:${port}`)));
    client = new TestClient(`127.0.0.1:${port}`);
  });

  after(async () => {
    client?.close();
    await s?.stop();
    removeRepository(repo);
    shm.cleanup();
  });

  /** Live, ready, and still computing. */
  async function healthy(): Promise<void> {
    assert.deepEqual(await client.call('ServerLive', {}), { live: true });
    assert.deepEqual(await client.call('ServerReady', {}), { ready: true });
    const r = await client.call('ModelInfer', simpleRequest('h'));
    assert.deepEqual(
      int32sOf((r.raw_output_contents as Buffer[])[0]),
      IN0.map((v) => v + 3),
    );
  }

  describe('health, metadata, config, statistics', () => {
    it('health rpcs and the standard health check', async () => {
      await healthy();
      assert.deepEqual(await client.call('ModelReady', { name: 'simple' }), { ready: true });
      assert.deepEqual(await client.call('ModelReady', { name: 'simple', version: '1' }), { ready: true });
      assert.deepEqual(await client.call('ModelReady', { name: 'add_sub_fp32' }), { ready: false });
      assert.deepEqual(await client.call('Check', {}), { status: 'SERVING' });
    });

    it('server and model metadata', async () => {
      const m = await client.call('ServerMetadata', {});
      assert.equal(m.version, packageVersion());
      assert.ok((m.extensions as string[]).includes('model_repository'));
      const md = await client.call('ModelMetadata', { name: 'simple' });
      assert.deepEqual(md, {
        name: 'simple',
        versions: ['1'],
        platform: 'onnxruntime_onnx',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: ['-1', '16'] },
          { name: 'INPUT1', datatype: 'INT32', shape: ['-1', '16'] },
        ],
        outputs: [
          { name: 'OUTPUT0', datatype: 'INT32', shape: ['-1', '16'] },
          { name: 'OUTPUT1', datatype: 'INT32', shape: ['-1', '16'] },
        ],
      });
    });

    it('the model config matches the HTTP config JSON', async () => {
      const json = (await request(`${s.url}/v2/models/densenet_onnx/config`)).json<Record<string, unknown>>();
      const config = (await client.call('ModelConfig', { name: 'densenet_onnx' })).config as Plain;
      assert.equal(config.name, json.name);
      assert.equal(config.platform, json.platform);
      assert.equal(config.max_batch_size, json.max_batch_size);
      const input = (config.input as Plain[])[0];
      assert.equal(input.format, 'FORMAT_NCHW');
      assert.deepEqual(input.dims, ['3', '224', '224']);
      assert.deepEqual((input.reshape as Plain).shape, ['1', '3', '224', '224']);
      assert.equal((config.output as Plain[])[0].label_filename, 'densenet_labels.txt');
      assert.deepEqual(
        (config.instance_group as Plain[]).map((g) => g.kind),
        (json.instance_group as { kind: string }[]).map((g) => g.kind),
      );
    });

    it('statistics count gRPC inferences', async () => {
      const count = async (): Promise<number> =>
        Number(
          ((await client.call('ModelStatistics', { name: 'simple' })).model_stats as Plain[])[0]
            .inference_count,
        );
      const before = await count();
      await client.call('ModelInfer', simpleRequest('st'));
      assert.equal(await count(), before + 1);
      const all = (await client.call('ModelStatistics', {})).model_stats as Plain[];
      assert.ok(all.some((m) => m.name === identityOf('INT8')));
    });
  });

  describe('model repository', () => {
    it('index, load and unload through gRPC', async () => {
      const index = (await client.call('RepositoryIndex', {})).models as Plain[];
      assert.equal(index.find((m) => m.name === 'simple')?.state, 'READY');
      assert.equal(index.find((m) => m.name === 'add_sub_fp32')?.state, ''); // never loaded: no state, as in Triton
      const ready = (await client.call('RepositoryIndex', { ready: true })).models as Plain[];
      assert.ok(ready.every((m) => m.state === 'READY'));

      await client.call('RepositoryModelLoad', { model_name: 'add_sub_fp32' });
      assert.deepEqual(await client.call('ModelReady', { name: 'add_sub_fp32' }), { ready: true });
      await client.call('RepositoryModelUnload', {
        model_name: 'add_sub_fp32',
        parameters: { unload_dependents: { bool_param: false } },
      });
      await waitFor(async () => !(await client.call('ModelReady', { name: 'add_sub_fp32' })).ready);

      // A config override loads the same files under a new configuration.
      const override = JSON.stringify({
        backend: 'onnxruntime',
        max_batch_size: 2,
        input: [
          { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] },
          { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [16] },
        ],
        output: [
          { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] },
          { name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [16] },
        ],
      });
      await client.call('RepositoryModelLoad', {
        model_name: 'add_sub_fp32',
        parameters: { config: { string_param: override } },
      });
      const cfg = (await client.call('ModelConfig', { name: 'add_sub_fp32' })).config as Plain;
      assert.equal(cfg.max_batch_size, 2);
      await client.call('RepositoryModelUnload', { model_name: 'add_sub_fp32' });

      await rejectsWith(
        client.call('RepositoryModelLoad', { model_name: 'no_such_model' }),
        Code.INTERNAL, // Triton's (NOT_FOUND with --load-error-status=client-error)
        /failed to poll from model repository/,
      );
      await healthy();
    });
  });

  describe('trace and log settings', () => {
    it('reads and updates them', async () => {
      const trace = (await client.call('TraceSetting', {})).settings as Record<string, Plain>;
      assert.deepEqual(trace.trace_level.value, ['OFF']);
      const updated = (
        await client.call('TraceSetting', {
          model_name: 'simple',
          settings: { trace_rate: { value: ['7'] } },
        })
      ).settings as Record<string, Plain>;
      assert.deepEqual(updated.trace_rate.value, ['7']);
      const cleared = (
        await client.call('TraceSetting', { model_name: 'simple', settings: { trace_rate: { value: [] } } })
      ).settings as Record<string, Plain>;
      assert.deepEqual(cleared.trace_rate.value, trace.trace_rate.value);
      await rejectsWith(
        client.call('TraceSetting', { settings: { trace_rate: { value: ['x'] } } }),
        Code.INVALID_ARGUMENT,
        "Unable to parse 'trace_rate', got: x",
      );

      const log = (await client.call('LogSettings', { settings: { log_verbose_level: { uint32_param: 1 } } }))
        .settings as Record<string, Plain>;
      assert.equal(log.log_verbose_level.uint32_param, 1);
      const back = (
        await client.call('LogSettings', { settings: { log_verbose_level: { uint32_param: 0 } } })
      ).settings as Record<string, Plain>;
      assert.equal(back.log_verbose_level.uint32_param, 0);
      await rejectsWith(
        client.call('LogSettings', { settings: { log_format: { string_param: 'fancy' } } }),
        Code.INVALID_ARGUMENT,
      );
    });
  });

  describe('ModelInfer', () => {
    it('simple with raw contents echoes the id; typed int_contents give the same answer', async () => {
      const raw = await client.call('ModelInfer', simpleRequest('g1'));
      assert.equal(raw.id, 'g1');
      assert.equal(raw.model_version, '1');
      const [sum, diff] = raw.raw_output_contents as Buffer[];
      assert.deepEqual(
        int32sOf(sum),
        IN0.map((v) => v + 3),
      );
      assert.deepEqual(
        int32sOf(diff),
        IN0.map((v) => v - 3),
      );
      const typed = await client.call('ModelInfer', {
        model_name: 'simple',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN0 } },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } },
        ],
        outputs: [{ name: 'OUTPUT1' }],
      });
      assert.deepEqual(
        (typed.outputs as Plain[]).map((o) => o.name),
        ['OUTPUT1'],
      );
      assert.deepEqual(
        int32sOf((typed.raw_output_contents as Buffer[])[0]),
        IN0.map((v) => v - 3),
      );
    });

    it('simple_int8 with int_contents and simple_string with bytes_contents', async () => {
      const a = Array.from({ length: 16 }, (_, i) => i * 8 - 60);
      const r = await client.call('ModelInfer', {
        model_name: 'simple_int8',
        inputs: [
          { name: 'INPUT0', datatype: 'INT8', shape: [1, 16], contents: { int_contents: a } },
          { name: 'INPUT1', datatype: 'INT8', shape: [1, 16], contents: { int_contents: a } },
        ],
      });
      const sum = Buffer.from((r.raw_output_contents as Buffer[])[0]);
      assert.deepEqual(
        [...new Int8Array(sum.buffer, sum.byteOffset, 16)],
        a.map((v) => ((2 * v + 128) & 0xff) - 128),
      );
      const s1 = await client.call('ModelInfer', {
        model_name: 'simple_string',
        inputs: [
          {
            name: 'INPUT0',
            datatype: 'BYTES',
            shape: [1, 16],
            contents: { bytes_contents: IN0.map((v) => Buffer.from(String(v))) },
          },
          {
            name: 'INPUT1',
            datatype: 'BYTES',
            shape: [1, 16],
            contents: { bytes_contents: IN1.map((v) => Buffer.from(String(v))) },
          },
        ],
      });
      const out = splitBytesElements(Buffer.from((s1.raw_output_contents as Buffer[])[0])).map((b) =>
        Number(b.toString()),
      );
      assert.deepEqual(
        out,
        IN0.map((v) => v + 3),
      );
    });

    for (const d of SERVED) {
      it(`${d}: raw contents${d === 'FP16' ? '' : ' and typed contents'} round-trip through an identity model`, async () => {
        const model = identityOf(d);
        const { raw } =
          d === 'FP16'
            ? { raw: Buffer.from(new Uint16Array([0x3c00, 0x4000, 0xc000, 0, 1, 0x7bff]).buffer) }
            : typedContents(d, 6);
        const r = await client.call('ModelInfer', {
          model_name: model,
          inputs: [{ name: 'INPUT0', datatype: d, shape: [2, 3] }],
          raw_input_contents: [raw],
        });
        const out = (r.outputs as Plain[])[0];
        assert.equal(out.datatype, d);
        assert.deepEqual(out.shape, ['2', '3']);
        assert.deepEqual(Buffer.from((r.raw_output_contents as Buffer[])[0]), raw);
        if (d === 'FP16') return;
        const { contents } = typedContents(d, 6);
        const t = await client.call('ModelInfer', {
          model_name: model,
          inputs: [{ name: 'INPUT0', datatype: d, shape: [2, 3], contents }],
        });
        assert.deepEqual(Buffer.from((t.raw_output_contents as Buffer[])[0]), raw, `${d} typed`);
      });
    }

    it('classification as an int64 output parameter', async () => {
      const image = Buffer.alloc(3 * 224 * 224 * 4);
      for (let i = 0; i < image.length / 4; i++) image.writeFloatLE(Math.sin(i), i * 4);
      const r = await client.call('ModelInfer', {
        model_name: 'densenet_onnx',
        inputs: [{ name: 'data_0', datatype: 'FP32', shape: [3, 224, 224] }],
        outputs: [{ name: 'fc6_1', parameters: { classification: { int64_param: '3' } } }],
        raw_input_contents: [image],
      });
      const out = (r.outputs as Plain[])[0];
      assert.equal(out.datatype, 'BYTES');
      assert.deepEqual(out.shape, ['3']);
      const entries = splitBytesElements(Buffer.from((r.raw_output_contents as Buffer[])[0])).map((b) =>
        b.toString(),
      );
      assert.equal(entries.length, 3);
      for (const e of entries) assert.match(e, /^-?[\d.e+-]+:\d+:.+$/);
    });

    it('error codes: unknown model, bad shape, version not ready, duplicate outputs', async () => {
      await rejectsWith(
        client.call('ModelInfer', { ...simpleRequest('x'), model_name: 'nope' }),
        Code.NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
      );
      await rejectsWith(
        client.call('ModelInfer', {
          model_name: 'simple',
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 15] },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 15] },
          ],
          raw_input_contents: [int32s(IN0.slice(1)), int32s(IN1.slice(1))],
        }),
        Code.INVALID_ARGUMENT,
        /^\[request id: <id_unknown>\] unexpected shape for input 'INPUT0' for model 'simple'/,
      );
      await rejectsWith(
        client.call('ModelInfer', {
          ...simpleRequest('x'),
          outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }],
        }),
        Code.INVALID_ARGUMENT,
        "output 'OUTPUT0' already exists in request",
      );
      await rejectsWith(
        client.call('ModelInfer', { ...simpleRequest('x'), model_version: '2' }),
        Code.NOT_FOUND,
      );
      // 'broken' (a corrupt model file) failed to load: its version exists but is not ready.
      await rejectsWith(
        client.call('RepositoryModelLoad', { model_name: 'broken' }),
        Code.INVALID_ARGUMENT,
        /load failed for model 'broken'/,
      );
      await rejectsWith(
        client.call('ModelInfer', { model_name: 'broken', model_version: '1' }),
        Code.UNAVAILABLE,
        "Request for unknown model: 'broken' version 1 is not at ready state",
      );
      await healthy();
    });

    it('a 300 MB tensor through identity_fp32', async () => {
      const n = (300 * 1024 * 1024) / 4;
      const data = Buffer.allocUnsafe(n * 4);
      for (let i = 0; i < n; i += 4096) data.writeFloatLE(i, i * 4);
      const r = await client.call('ModelInfer', {
        model_name: 'identity_fp32',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n] }],
        raw_input_contents: [data],
      });
      assert.deepEqual((r.outputs as Plain[])[0].shape, ['1', String(n)]);
      const out = (r.raw_output_contents as Buffer[])[0];
      assert.equal(out.length, data.length);
      assert.ok(Buffer.from(out.buffer, out.byteOffset, out.length).equals(data));
      await healthy();
    });
  });

  describe('system shared memory', () => {
    it('registers regions, infers from and into them, reports status and unregisters', async () => {
      const in0 = shm.create(int32s(IN0), 'g-in0');
      const in1 = shm.create(int32s(IN1), 'g-in1');
      const out0 = shm.create(64, 'g-out0');
      for (const [name, key] of [
        ['g_in0', in0],
        ['g_in1', in1],
        ['g_out0', out0],
      ]) {
        await client.call('SystemSharedMemoryRegister', {
          name,
          key: `/${key}`,
          offset: '0',
          byte_size: '64',
        });
      }
      const status = (await client.call('SystemSharedMemoryStatus', {})).regions as Record<string, Plain>;
      assert.deepEqual(status.g_in0, { name: 'g_in0', key: `/${in0}`, offset: '0', byte_size: '64' });
      const region = (name: string): object => ({
        shared_memory_region: { string_param: name },
        shared_memory_byte_size: { int64_param: '64' },
      });
      const r = await client.call('ModelInfer', {
        model_name: 'simple',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: region('g_in0') },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: region('g_in1') },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: region('g_out0') }, { name: 'OUTPUT1' }],
      });
      const [o0, o1] = r.outputs as Plain[];
      assert.equal((o0.parameters as Record<string, Plain>).shared_memory_region.string_param, 'g_out0');
      const raws = r.raw_output_contents as Buffer[];
      assert.equal(raws.length, 2);
      assert.equal(raws[0].length, 0);
      assert.deepEqual(
        int32sOf(raws[1]),
        IN0.map((v) => v - 3),
      );
      assert.equal(o1.name, 'OUTPUT1');
      assert.deepEqual(
        int32sOf(shm.read(out0)),
        IN0.map((v) => v + 3),
      );
      await client.call('SystemSharedMemoryUnregister', { name: 'g_in0' });
      await rejectsWith(
        client.call('ModelInfer', {
          model_name: 'simple',
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: region('g_in0') },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: region('g_in1') },
          ],
        }),
        Code.NOT_FOUND,
        "Unable to find shared memory region: 'g_in0'",
      );
      await client.call('SystemSharedMemoryUnregister', {});
      assert.deepEqual((await client.call('SystemSharedMemoryStatus', {})).regions, {});
      // CUDA shared memory, as Triton answers it without a GPU: no regions, unregister succeeds, register
      // is refused.
      assert.deepEqual((await client.call('CudaSharedMemoryStatus', {})).regions, {});
      await rejectsWith(
        client.call('CudaSharedMemoryStatus', { name: 'c' }),
        Code.NOT_FOUND,
        "Unable to find cuda shared memory region: 'c'",
      );
      await client.call('CudaSharedMemoryUnregister', {});
      await client.call('CudaSharedMemoryUnregister', { name: 'c' });
      await rejectsWith(
        client.call('CudaSharedMemoryRegister', { name: 'c', raw_handle: Buffer.alloc(64), byte_size: '4' }),
        Code.INVALID_ARGUMENT,
        "failed to register CUDA shared memory region: 'c', GPUs not supported",
      );
      await healthy();
    });
  });

  describe('ModelStreamInfer', () => {
    it('many concurrent streams with many requests each, answered in order', async () => {
      const streams = Array.from({ length: 12 }, async (_, sIdx) => {
        const stream = client.stream();
        const done = collect(stream);
        for (let i = 0; i < 30; i++)
          stream.write(
            simpleRequest(
              `${sIdx}-${i}`,
              IN0.map((v) => v + i),
              IN1,
            ),
          );
        stream.end();
        const { messages, error } = await done;
        assert.equal(error, undefined);
        assert.equal(messages.length, 30);
        messages.forEach((m, i) => {
          const r = m.infer_response as Plain;
          assert.equal(m.error_message, '');
          assert.equal(r.id, `${sIdx}-${i}`);
          assert.deepEqual(
            int32sOf((r.raw_output_contents as Buffer[])[0]),
            IN0.map((v) => v + i + 3),
          );
          const final = (r.parameters as Record<string, Plain>).triton_final_response;
          assert.equal(final.bool_param, true);
        });
      });
      await Promise.all(streams);
    });

    it('errors in-band by default, as a status with triton_grpc_error', async () => {
      const stream = client.stream();
      const done = collect(stream);
      stream.write({ ...simpleRequest('bad'), model_name: 'nope' });
      stream.write(simpleRequest('good'));
      stream.end();
      const { messages } = await done;
      assert.deepEqual(
        messages.map((m) => [(m.infer_response as Plain).id, m.error_message]),
        [
          ['bad', "Request for unknown model: 'nope' is not found"],
          ['good', ''],
        ],
      );
      const md = new Metadata();
      md.set('triton_grpc_error', 'true');
      const strict = client.stream(md);
      const strictDone = collect(strict);
      strict.write(simpleRequest('ok'));
      strict.write({
        ...simpleRequest('shape'),
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2] }],
      });
      const r = await strictDone;
      assert.equal(r.error?.code, Code.INVALID_ARGUMENT);
      strict.end();
      await healthy();
    });

    it('cancelling a stream mid-request leaves the server healthy', async () => {
      const stream = client.stream();
      stream.on('error', () => {});
      stream.on('data', () => {});
      for (let i = 0; i < 3; i++) {
        stream.write({
          model_name: 'slow',
          id: `slow-${i}`,
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }],
          raw_input_contents: [Buffer.alloc(64)],
        });
      }
      await new Promise((r) => setTimeout(r, 50));
      stream.cancel();
      await healthy();
    });
  });

  describe('malformed calls', () => {
    it('garbage, truncated and oversized frames get a status; the server stays healthy', async () => {
      const INFER = '/inference.GRPCInferenceService/ModelInfer';
      assert.equal(await rawGrpc(port, INFER, frame(Buffer.from([0x0a, 0x80]))), Code.INVALID_ARGUMENT);
      assert.equal(
        await rawGrpc(
          port,
          INFER,
          frame(encodeMessage('inference.ModelInferRequest', simpleRequest('t'))).subarray(0, 20),
        ),
        Code.INTERNAL,
      );
      assert.equal(await rawGrpc(port, INFER, Buffer.from([0, 0x80, 0, 0, 0])), Code.RESOURCE_EXHAUSTED);
      assert.equal(
        await rawGrpc(port, '/inference.GRPCInferenceService/Bogus', frame(Buffer.alloc(0))),
        Code.UNIMPLEMENTED,
      );
      assert.equal(
        await rawGrpc(port, '/inference.GRPCInferenceService/ServerLive', frame(Buffer.from([0xff]))),
        Code.INVALID_ARGUMENT,
      );
      await healthy();
    });
  });
});
