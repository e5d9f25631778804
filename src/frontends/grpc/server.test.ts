import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Metadata, status as GrpcCode, type ServiceError } from '@grpc/grpc-js';
import { Logger } from '../../common/logger.js';
import { GrpcFakeApi } from './fake-api.testkit.js';
import { decodeGrpcMessage, frame } from './transport/framing.js';
import type { Plain } from './messages.js';
import { createGrpcFrontend, type GrpcFrontend } from './server.js';
import { TestClient, decodeMessage, encodeMessage } from './test-client.testkit.js';

const int32s = (...v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);

function addSub(id: string, a = 1, b = 2): object {
  return {
    model_name: 'add_sub',
    id,
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [16] },
    ],
    raw_input_contents: [int32s(...new Array<number>(16).fill(a)), int32s(...new Array<number>(16).fill(b))],
  };
}

function repeat(id: string, values: number[], delays?: number[], parameters: object = {}): object {
  const inputs: object[] = [{ name: 'IN', datatype: 'INT32', shape: [values.length] }];
  const raw = [int32s(...values)];
  if (delays) {
    inputs.push({ name: 'DELAY', datatype: 'INT32', shape: [delays.length] });
    raw.push(int32s(...delays));
  }
  return { model_name: 'repeat', id, inputs, raw_input_contents: raw, parameters };
}

async function rejectsWith(
  p: Promise<unknown>,
  code: number,
  details?: string | RegExp,
): Promise<ServiceError> {
  try {
    await p;
  } catch (e) {
    const err = e as ServiceError;
    assert.equal(err.code, code, `expected code ${code}, got ${err.code}: ${err.details}`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else if (details) assert.match(err.details, details);
    return err;
  }
  assert.fail('the call succeeded');
}

interface RawResult {
  httpStatus: number;
  grpcStatus: number | undefined;
  grpcMessage: string;
  data: Buffer;
}

/** A hand-made HTTP/2 request, for what a well-behaved gRPC client never sends. */
function rawCall(
  port: number,
  path: string,
  body: Buffer | undefined,
  headers: Record<string, string> = {},
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    let httpStatus = 0;
    let grpcStatus: number | undefined;
    let grpcMessage = '';
    const chunks: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) grpcStatus = Number(h['grpc-status']);
      if (typeof h['grpc-message'] === 'string') grpcMessage = decodeGrpcMessage(h['grpc-message']);
    };
    req.on('response', (h) => {
      httpStatus = Number(h[':status']);
      take(h);
    });
    req.on('trailers', take);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => {});
    req.on('close', () => {
      session.close();
      resolve({ httpStatus, grpcStatus, grpcMessage, data: Buffer.concat(chunks) });
    });
    if (body !== undefined) req.end(body);
    else req.end();
  });
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

const inferResponse = (m: Plain): Plain => m.infer_response as Plain;
const param = (m: Plain, key: string): unknown => {
  const p = (inferResponse(m).parameters as Record<string, Plain>)[key];
  return p?.[p.parameter_choice as string];
};

describe('gRPC frontend over real sockets (fake api)', () => {
  const api = new GrpcFakeApi();
  const logs: string[] = [];
  let frontend: GrpcFrontend;
  let port: number;
  let client: TestClient;

  before(async () => {
    frontend = createGrpcFrontend(api, {
      address: '127.0.0.1',
      port: 0,
      log: new Logger({}, (l) => logs.push(l)),
      maxMessageSize: 1 << 20,
    });
    port = (await frontend.listen()).port;
    client = new TestClient(`127.0.0.1:${port}`);
  });

  after(async () => {
    client.close();
    await frontend.close();
  });

  async function healthy(): Promise<void> {
    assert.deepEqual(await client.call('ServerLive', {}), { live: true });
  }

  describe('health, metadata, config and statistics', () => {
    it('answers live, ready, model ready and the health check', async () => {
      assert.deepEqual(await client.call('ServerReady', {}), { ready: true });
      assert.deepEqual(await client.call('ModelReady', { name: 'add_sub' }), { ready: true });
      assert.deepEqual(await client.call('ModelReady', { name: 'add_sub', version: '7' }), { ready: false });
      assert.deepEqual(await client.call('ModelReady', { name: 'nope' }), { ready: false });
      assert.deepEqual(await client.call('Check', { service: '' }), { status: 'SERVING' });
      api.ready = false;
      try {
        assert.deepEqual(await client.call('ServerReady', {}), { ready: false });
        assert.deepEqual(await client.call('Check', {}), { status: 'NOT_SERVING' });
      } finally {
        api.ready = true;
      }
    });

    it('returns server and model metadata, NOT_FOUND for an unknown model', async () => {
      const s = await client.call('ServerMetadata', {});
      assert.equal(s.name, 'triton');
      assert.deepEqual(s.extensions, ['binary_tensor_data', 'statistics']);
      const m = await client.call('ModelMetadata', { name: 'identity' });
      assert.deepEqual(m, {
        name: 'identity',
        versions: ['1'],
        platform: 'fake',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['-1'] }],
        outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: ['-1'] }],
      });
      await rejectsWith(
        client.call('ModelMetadata', { name: 'nope' }),
        GrpcCode.NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
      );
    });

    it('encodes the model config from the config JSON', async () => {
      const r = await client.call('ModelConfig', { name: 'add_sub' });
      const config = r.config as Plain;
      assert.equal(config.name, 'add_sub');
      assert.equal(config.max_batch_size, 0);
      assert.deepEqual(
        (config.input as Plain[]).map((i) => [i.name, i.data_type, i.dims]),
        [
          ['INPUT0', 'TYPE_INT32', ['16']],
          ['INPUT1', 'TYPE_INT32', ['16']],
        ],
      );
    });

    it('returns statistics of one model or of all', async () => {
      const one = await client.call('ModelStatistics', { name: 'add_sub' });
      assert.deepEqual(
        (one.model_stats as Plain[]).map((s) => s.name),
        ['add_sub'],
      );
      const all = await client.call('ModelStatistics', {});
      assert.ok((all.model_stats as Plain[]).length > 5);
      const s = (all.model_stats as Plain[])[0];
      assert.deepEqual((s.inference_stats as Plain).success, { count: '0', ns: '0' });
    });
  });

  describe('repository, shared memory, trace and log rpcs', () => {
    it('lists the repository, with the ready filter', async () => {
      const all = (await client.call('RepositoryIndex', {})).models as Plain[];
      assert.deepEqual(
        all.find((m) => m.name === 'broken'),
        {
          name: 'broken',
          version: '',
          state: 'UNAVAILABLE',
          reason: 'failed to load',
        },
      );
      const ready = (await client.call('RepositoryIndex', { ready: true })).models as Plain[];
      assert.ok(ready.every((m) => m.state === 'READY'));
      await rejectsWith(
        client.call('RepositoryIndex', { repository_name: 'r' }),
        GrpcCode.UNIMPLEMENTED,
        "'repository_name' specification is not supported",
      );
    });

    it('loads with config and file overrides, unloads with unload_dependents', async () => {
      await client.call('RepositoryModelLoad', {
        model_name: 'm1',
        parameters: {
          config: { string_param: '{"backend":"onnxruntime"}' },
          'file:1/model.onnx': { bytes_param: Buffer.from([1, 2, 3]) },
        },
      });
      const load = api.loads.at(-1)!;
      assert.equal(load.name, 'm1');
      assert.equal(load.options?.config, '{"backend":"onnxruntime"}');
      assert.deepEqual([...(load.options?.files?.get('1/model.onnx') ?? [])], [1, 2, 3]);
      await client.call('RepositoryModelLoad', { model_name: 'm2' });
      assert.equal(api.loads.at(-1)!.options, undefined);
      await rejectsWith(
        client.call('RepositoryModelLoad', { model_name: 'm', parameters: { config: { bool_param: true } } }),
        GrpcCode.INVALID_ARGUMENT,
        "invalid value type for load parameter 'config', expected string_param.",
      );
      await rejectsWith(
        client.call('RepositoryModelLoad', {
          model_name: 'm',
          parameters: { 'file:1/a': { string_param: 'x' } },
        }),
        GrpcCode.INVALID_ARGUMENT,
        "invalid value type for load parameter 'file:1/a', expected bytes_param.",
      );
      await rejectsWith(
        client.call('RepositoryModelLoad', { model_name: 'm', parameters: { other: { string_param: 'x' } } }),
        GrpcCode.INVALID_ARGUMENT,
        "unrecognized load parameter 'other'.",
      );
      await rejectsWith(client.call('RepositoryModelLoad', { model_name: 'missing' }), GrpcCode.NOT_FOUND);
      await client.call('RepositoryModelUnload', {
        model_name: 'm1',
        parameters: { unload_dependents: { bool_param: true } },
      });
      assert.deepEqual(api.unloads.at(-1), { name: 'm1', options: { unloadDependents: true } });
      await rejectsWith(
        client.call('RepositoryModelUnload', {
          model_name: 'm1',
          parameters: { unload_dependents: { int64_param: '1' } },
        }),
        GrpcCode.INVALID_ARGUMENT,
        "invalid value type for 'unload_dependents' parameter, expected bool_param.",
      );
    });

    it('passes system and CUDA shared memory calls to the api', async () => {
      const status = await client.call('SystemSharedMemoryStatus', {});
      assert.deepEqual(status.regions, { r0: { name: 'r0', key: '/shm0', offset: '8', byte_size: '64' } });
      await client.call('SystemSharedMemoryRegister', {
        name: 'r1',
        key: '/k',
        offset: '16',
        byte_size: '4096',
      });
      await client.call('SystemSharedMemoryUnregister', {});
      await client.call('SystemSharedMemoryUnregister', { name: 'r1' });
      assert.deepEqual(api.shmCalls, [
        ['status', undefined],
        ['register', 'r1', '/k', 16, 4096],
        ['unregister', undefined],
        ['unregister', 'r1'],
      ]);
      api.shmCalls.length = 0;
      assert.deepEqual((await client.call('CudaSharedMemoryStatus', {})).regions, {});
      assert.deepEqual((await client.call('CudaSharedMemoryStatus', { name: 'c0' })).regions, {
        c0: { name: 'c0', device_id: '1', byte_size: '64' },
      });
      await rejectsWith(
        client.call('CudaSharedMemoryRegister', {
          name: 'c1',
          raw_handle: Buffer.alloc(64, 7),
          device_id: '2',
          byte_size: '128',
        }),
        GrpcCode.INVALID_ARGUMENT,
        "failed to register CUDA shared memory region: 'c1', GPUs not supported",
      );
      await client.call('CudaSharedMemoryUnregister', {});
      await client.call('CudaSharedMemoryUnregister', { name: 'c1' });
      assert.deepEqual(api.shmCalls, [
        ['cuda status', undefined],
        ['cuda status', 'c0'],
        ['cuda register', 'c1', Buffer.alloc(64, 7), 2, 128],
        ['cuda unregister', undefined],
        ['cuda unregister', 'c1'],
      ]);
    });

    it('reads and updates trace settings (an empty value list clears)', async () => {
      const r = await client.call('TraceSetting', {});
      assert.deepEqual(r.settings, { trace_level: { value: ['OFF'] }, trace_rate: { value: ['1000'] } });
      await client.call('TraceSetting', {
        model_name: 'add_sub',
        settings: {
          trace_level: { value: ['TIMESTAMPS'] },
          trace_rate: { value: ['5'] },
          trace_count: { value: [] },
        },
      });
      assert.deepEqual(api.lastTraceUpdate, {
        model: 'add_sub',
        update: { trace_level: ['TIMESTAMPS'], trace_rate: '5', trace_count: null },
      });
    });

    it("reads and updates log settings with Triton's type checks", async () => {
      const r = await client.call('LogSettings', { settings: { log_verbose_level: { uint32_param: 2 } } });
      const settings = r.settings as Record<string, Plain>;
      assert.equal(settings.log_verbose_level.uint32_param, 2);
      assert.equal(settings.log_format.string_param, 'default');
      assert.equal(settings.log_info.bool_param, true);
      await rejectsWith(
        client.call('LogSettings', { settings: { log_info: { string_param: 'yes' } } }),
        GrpcCode.INVALID_ARGUMENT,
        "expect boolean for 'log_info'",
      );
      await rejectsWith(
        client.call('LogSettings', { settings: { log_file: { string_param: '/tmp/x' } } }),
        GrpcCode.UNIMPLEMENTED,
        'log file location can not be updated through network protocol',
      );
    });
  });

  describe('ModelInfer', () => {
    it('infers, echoes the id and returns raw output contents', async () => {
      const r = await client.call('ModelInfer', addSub('id-1', 5, 2));
      assert.equal(r.id, 'id-1');
      assert.equal(r.model_name, 'add_sub');
      assert.deepEqual(
        (r.outputs as Plain[]).map((o) => [o.name, o.datatype, o.shape]),
        [
          ['OUTPUT0', 'INT32', ['16']],
          ['OUTPUT1', 'INT32', ['16']],
        ],
      );
      const [sum, diff] = r.raw_output_contents as Buffer[];
      assert.equal(Buffer.from(sum).readInt32LE(60), 7);
      assert.equal(Buffer.from(diff).readInt32LE(0), 3);
    });

    it('round-trips request parameters of every type (the fake echoes them back)', async () => {
      const r = await client.call('ModelInfer', {
        ...addSub('p'),
        parameters: {
          b: { bool_param: true },
          i: { int64_param: '-12' },
          s: { string_param: 'txt' },
          d: { double_param: 2.5 },
          u: { uint64_param: '18446744073709551615' },
        },
      });
      assert.deepEqual(r.parameters, {
        b: { bool_param: true, parameter_choice: 'bool_param' },
        i: { int64_param: '-12', parameter_choice: 'int64_param' },
        s: { string_param: 'txt', parameter_choice: 'string_param' },
        d: { double_param: 2.5, parameter_choice: 'double_param' },
        u: { uint64_param: '18446744073709551615', parameter_choice: 'uint64_param' },
      });
    });

    it('maps errors: decoupled models, unknown models, bad input, unexpected failures', async () => {
      await rejectsWith(
        client.call('ModelInfer', repeat('d', [1])),
        GrpcCode.UNIMPLEMENTED,
        "ModelInfer RPC doesn't support models with decoupled transaction policy",
      );
      await rejectsWith(
        client.call('ModelInfer', { model_name: 'nope' }),
        GrpcCode.NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
      );
      await rejectsWith(
        client.call('ModelInfer', { ...addSub('x'), raw_input_contents: [int32s(1)] }),
        GrpcCode.INVALID_ARGUMENT,
        "unable to find data for input tensor 'INPUT1' for model 'add_sub' in request.",
      );
      const before = logs.length;
      await rejectsWith(
        client.call('ModelInfer', { model_name: 'boom', id: 'b1' }),
        GrpcCode.INTERNAL,
        'internal error: kaboom',
      );
      assert.ok(logs.slice(before).some((l) => l.includes('[request id: b1]') && l.includes('kaboom')));
      await healthy();
    });

    it('aborts the request when the deadline passes or the client cancels', async () => {
      const waiting = api.waiting.length;
      await rejectsWith(
        client.call(
          'ModelInfer',
          {
            model_name: 'wait',
            inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
            raw_input_contents: [Buffer.alloc(4)],
          },
          new Metadata(),
          new Date(Date.now() + 200),
        ),
        GrpcCode.DEADLINE_EXCEEDED,
      );
      assert.equal(api.waiting.length, waiting + 1);
      await waitFor(() => api.waiting[waiting].aborted);

      const call = client.client.makeUnaryRequest<Buffer, Buffer>(
        '/inference.GRPCInferenceService/ModelInfer',
        (b) => b,
        (b) => b,
        encodeMessage('inference.ModelInferRequest', {
          model_name: 'wait',
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
          raw_input_contents: [Buffer.alloc(4)],
        }),
        () => {},
      );
      await waitFor(() => api.waiting.length === waiting + 2);
      call.cancel();
      await waitFor(() => api.waiting[waiting + 1].aborted);
      await healthy();
    });

    it('accepts gzip-compressed requests', async () => {
      const message = encodeMessage('inference.ModelInferRequest', addSub('gz', 1, 1));
      const compressed = gzipSync(message);
      const body = Buffer.concat([Buffer.from([1, 0, 0, 0, 0]), compressed]);
      body.writeUInt32BE(compressed.length, 1);
      const r = await rawCall(port, '/inference.GRPCInferenceService/ModelInfer', body, {
        'grpc-encoding': 'gzip',
      });
      assert.equal(r.grpcStatus, 0, r.grpcMessage);
      assert.equal(decodeMessage('inference.ModelInferResponse', r.data.subarray(5)).id, 'gz');
    });
  });

  describe('ModelStreamInfer', () => {
    it('answers many requests per stream, non-decoupled ones in request order', async () => {
      const stream = client.stream();
      const done = collect(stream);
      const sleeper = {
        model_name: 'sleep',
        id: 'slow',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
        raw_input_contents: [Buffer.alloc(4)],
      };
      stream.write(sleeper);
      for (let i = 0; i < 40; i++) stream.write(addSub(`r${i}`, i, 1));
      stream.end();
      const { messages, error } = await done;
      assert.equal(error, undefined);
      assert.deepEqual(
        messages.map((m) => inferResponse(m).id),
        ['slow', ...Array.from({ length: 40 }, (_, i) => `r${i}`)],
      );
      for (const m of messages) {
        assert.equal(m.error_message, '');
        assert.equal(param(m, 'triton_final_response'), true);
      }
      assert.equal(
        Buffer.from((inferResponse(messages[10]).raw_output_contents as Buffer[])[0]).readInt32LE(0),
        10,
      );
    });

    it('streams the responses of decoupled models, the empty final one only when asked', async () => {
      const stream = client.stream();
      const done = collect(stream);
      stream.write(repeat('plain', [7, 8, 9]));
      stream.write(
        repeat('with-final', [4], undefined, { triton_enable_empty_final_response: { bool_param: true } }),
      );
      stream.end();
      const { messages } = await done;
      const plain = messages.filter((m) => inferResponse(m).id === 'plain');
      assert.deepEqual(
        plain.map((m) => Buffer.from((inferResponse(m).raw_output_contents as Buffer[])[0]).readInt32LE(0)),
        [7, 8, 9],
      );
      assert.deepEqual(
        plain.map((m) => param(m, 'triton_final_response')),
        [false, false, false],
      );
      const withFinal = messages.filter((m) => inferResponse(m).id === 'with-final');
      assert.equal(withFinal.length, 2);
      const last = inferResponse(withFinal[1]);
      assert.deepEqual(last.outputs, []);
      assert.equal(last.model_name, 'repeat');
      assert.equal(param(withFinal[1], 'triton_final_response'), true);
    });

    it('sends errors in-band with the request id, and keeps serving the stream', async () => {
      const stream = client.stream();
      const done = collect(stream);
      stream.write({ model_name: 'nope', id: 'e1' });
      stream.write({ ...addSub('e2'), raw_input_contents: [] });
      stream.write(Buffer.from([0x0a, 0x7f])); // malformed protobuf
      stream.write(addSub('ok'));
      stream.end();
      const { messages, error } = await done;
      assert.equal(error, undefined);
      assert.deepEqual(
        messages.map((m) => [inferResponse(m).id, m.error_message]),
        [
          ['e1', "Request for unknown model: 'nope' is not found"],
          ['e2', "unable to find data for input tensor 'INPUT0' for model 'add_sub' in request."],
          ['', 'malformed protobuf message: length 127 exceeds the 0 bytes left'],
          ['ok', ''],
        ],
      );
    });

    it('ends the stream with a real status when the client sent triton_grpc_error: true', async () => {
      const metadata = new Metadata();
      metadata.set('triton_grpc_error', 'true');
      const stream = client.stream(metadata);
      const done = collect(stream);
      stream.write(addSub('fine'));
      stream.write({ model_name: 'nope', id: 'bad' });
      const { messages, error } = await done;
      assert.equal(error?.code, GrpcCode.NOT_FOUND);
      assert.equal(error?.details, "Request for unknown model: 'nope' is not found");
      assert.deepEqual(
        messages.map((m) => inferResponse(m).id),
        ['fine'],
      );
      stream.end();
      await healthy();
    });

    it('serves many concurrent streams', async () => {
      const runs = Array.from({ length: 16 }, async (_, s) => {
        const stream = client.stream();
        const done = collect(stream);
        for (let i = 0; i < 25; i++)
          stream.write(i % 5 === 0 ? repeat(`s${s}-${i}`, [i, i]) : addSub(`s${s}-${i}`, i, s));
        stream.end();
        const { messages, error } = await done;
        assert.equal(error, undefined);
        assert.equal(messages.length, 25 + 5); // repeat answers twice
        const sums = messages
          .filter(
            (m) =>
              !String(inferResponse(m).id).startsWith(`s${s}-0`) && inferResponse(m).model_name === 'add_sub',
          )
          .map((m) => Buffer.from((inferResponse(m).raw_output_contents as Buffer[])[0]).readInt32LE(0));
        assert.equal(sums.length, 20);
        for (const v of sums) assert.ok(v >= s);
      });
      await Promise.all(runs);
    });

    it('cancelling the stream aborts the requests still running', async () => {
      const before = api.repeatSignals.length;
      const stream = client.stream();
      stream.on('error', () => {});
      const got: Plain[] = [];
      stream.on('data', (m: Plain) => got.push(m));
      stream.write(repeat('long', [1, 2, 3], [0, 5000, 5000]));
      await waitFor(() => got.length === 1);
      stream.cancel();
      await waitFor(() => api.repeatSignals[before].aborted);
      await healthy();
    });
  });

  describe('malformed calls', () => {
    const INFER = '/inference.GRPCInferenceService/ModelInfer';

    it('refuses garbage protobuf with INVALID_ARGUMENT', async () => {
      const r = await rawCall(port, INFER, frame(Buffer.from([0x2a, 0x10, 1])));
      assert.equal(r.httpStatus, 200);
      assert.equal(r.grpcStatus, GrpcCode.INVALID_ARGUMENT);
      assert.match(r.grpcMessage, /^malformed protobuf message/);
      await healthy();
    });

    it('refuses oversized messages from their prefix, and truncated or missing messages', async () => {
      const huge = Buffer.from([0, 0x10, 0, 0, 0, 1, 2, 3]);
      const r1 = await rawCall(port, INFER, huge);
      assert.equal(r1.grpcStatus, GrpcCode.RESOURCE_EXHAUSTED);
      assert.equal(r1.grpcMessage, 'Received message larger than max (268435456 vs. 1048576)');
      const r2 = await rawCall(port, INFER, frame(Buffer.from('abcdef')).subarray(0, 8));
      assert.equal(r2.grpcStatus, GrpcCode.INTERNAL);
      const r3 = await rawCall(port, INFER, undefined);
      assert.equal(r3.grpcStatus, GrpcCode.UNIMPLEMENTED);
      const two = Buffer.concat([
        frame(encodeMessage('inference.ModelInferRequest', addSub('a'))),
        frame(Buffer.alloc(0)),
      ]);
      const r4 = await rawCall(port, INFER, two);
      assert.equal(r4.grpcStatus, GrpcCode.UNIMPLEMENTED);
      const r5 = await rawCall(port, INFER, Buffer.from([7, 0, 0, 0, 0]));
      assert.equal(r5.grpcStatus, GrpcCode.INTERNAL);
      await healthy();
    });

    it('survives clients that reset streams or drop the connection mid-message', async () => {
      for (const contentType of ['application/grpc', 'text/plain']) {
        const session = http2.connect(`http://127.0.0.1:${port}`);
        session.on('error', () => {});
        const req = session.request({ ':method': 'POST', ':path': INFER, 'content-type': contentType });
        req.on('error', () => {});
        req.write(Buffer.from([0, 0, 1, 0, 0, 1, 2]));
        req.close(http2.constants.NGHTTP2_CANCEL);
        await new Promise((r) => setTimeout(r, 20));
        session.destroy();
      }
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on('error', () => {});
      const req = session.request({ ':method': 'POST', ':path': INFER, 'content-type': 'application/grpc' });
      req.on('error', () => {});
      req.write(Buffer.concat([Buffer.from([0, 0, 0x0f, 0, 0]), Buffer.alloc(50_000)])); // 983040-byte message, cut short
      await new Promise((r) => setTimeout(r, 50));
      session.destroy();
      const stream = client.stream();
      stream.on('error', () => {});
      stream.write(Buffer.from([0, 0, 0]));
      stream.cancel();
      await healthy();
    });

    it('refuses unknown methods, encodings and content types', async () => {
      const r1 = await rawCall(port, '/inference.GRPCInferenceService/Nope', frame(Buffer.alloc(0)));
      assert.equal(r1.grpcStatus, GrpcCode.UNIMPLEMENTED);
      const r2 = await rawCall(port, INFER, frame(Buffer.alloc(0)), { 'grpc-encoding': 'snappy' });
      assert.equal(r2.grpcStatus, GrpcCode.UNIMPLEMENTED);
      const r3 = await rawCall(port, INFER, Buffer.alloc(3), { 'content-type': 'application/json' });
      assert.equal(r3.httpStatus, 415);
      const r4 = await rawCall(port, INFER, Buffer.from([1, 0, 0, 0, 2, 9, 9]), { 'grpc-encoding': 'gzip' });
      assert.equal(r4.grpcStatus, GrpcCode.INTERNAL);
      await healthy();
    });
  });
});

describe('gRPC frontend close()', () => {
  it('ends idle inference streams, refuses new calls and resolves', async () => {
    const api = new GrpcFakeApi();
    const frontend = createGrpcFrontend(api, {
      address: '127.0.0.1',
      port: 0,
      log: new Logger({}, () => {}),
    });
    const { port } = await frontend.listen();
    const client = new TestClient(`127.0.0.1:${port}`);
    try {
      const stream = client.stream();
      const done = collect(stream);
      let received = 0;
      stream.on('data', () => received++);
      stream.write(addSub('before-close'));
      await waitFor(() => received === 1);
      const closed = frontend.close();
      const { messages, error } = await done;
      assert.deepEqual(
        messages.map((m) => inferResponse(m).id),
        ['before-close'],
      );
      assert.equal(error?.code, GrpcCode.UNAVAILABLE);
      assert.equal(error?.details, 'GRPC server is shutting down and has stopped accepting new requests.');
      await closed;
    } finally {
      client.close();
    }
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not met in time');
}

describe('gRPC inference releases every model handle it takes', () => {
  it('unary and streaming, answered, refused and failed', async () => {
    const fake = new GrpcFakeApi();
    const fe = createGrpcFrontend(fake, { address: '127.0.0.1', port: 0, log: new Logger({}, () => {}) });
    const c = new TestClient(`127.0.0.1:${(await fe.listen()).port}`);
    try {
      await c.call('ModelInfer', addSub('ok'));
      await rejectsWith(c.call('ModelInfer', repeat('decoupled', [1])), GrpcCode.UNIMPLEMENTED);
      await rejectsWith(c.call('ModelInfer', { ...addSub('nope'), model_name: 'nope' }), GrpcCode.NOT_FOUND);
      const stream = c.stream();
      const done = collect(stream);
      stream.write(addSub('s1'));
      stream.write(repeat('s2', [4, 5]));
      stream.write({ ...addSub('s3'), model_name: 'nope' });
      stream.write({ ...addSub('s4'), inputs: [] });
      stream.end();
      const { messages, error } = await done;
      assert.equal(error, undefined);
      assert.equal(messages.filter((m) => m.error_message !== '').length, 2, 'the unknown and the refused');
      assert.equal(fake.resolved, 5, 'one lookup per request that named a known model');
      assert.equal(fake.released, fake.resolved);
    } finally {
      c.close();
      await fe.close();
    }
  });
});
