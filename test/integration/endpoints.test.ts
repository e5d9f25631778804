// Every HTTP endpoint of the core server against the bundled example repository, over real sockets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  binaryBody,
  EXAMPLES,
  post,
  request,
  splitBinaryResponse,
  startServer,
  type TestServer,
} from './harness.js';

interface InferJson {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: { name: string; datatype: string; shape: number[]; data: (number | string)[] }[];
}

describe('HTTP endpoints on the example repository', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=*',
    ]);
  });
  after(async () => {
    await s.stop();
  });

  it('answers health, server metadata and readiness', async () => {
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    const ready = await request(`${s.url}/v2/health/ready`);
    assert.equal(ready.status, 200);
    assert.equal(ready.body.length, 0);
    const metaReply = await request(`${s.url}/v2`);
    const meta = metaReply.json<{ name: string; extensions: string[] }>();
    // Triton's default --id, which Triton's examples expect; the Server header says it is Nereid.
    assert.equal(meta.name, 'triton');
    assert.match(metaReply.headers.get('server') ?? '', /^nereid\/\d+\.\d+\.\d+/);
    assert.ok(meta.extensions.includes('binary_tensor_data'));
    assert.ok(meta.extensions.includes('model_repository'));
  });

  it('serves model metadata, readiness and config for every bundled model', async () => {
    for (const name of [
      'simple',
      'simple_int8',
      'simple_string',
      'densenet_onnx',
      'densenet_batched',
      'identity_fp32',
      'add_sub_fp32',
    ]) {
      const md = await request(`${s.url}/v2/models/${name}`);
      assert.equal(md.status, 200, name);
      assert.equal(md.json<{ name: string }>().name, name);
      assert.equal((await request(`${s.url}/v2/models/${name}/ready`)).status, 200, name);
      assert.equal((await request(`${s.url}/v2/models/${name}/versions/1/ready`)).status, 200, name);
      const cfg = (await request(`${s.url}/v2/models/${name}/config`)).json<{
        name: string;
        backend: string;
      }>();
      assert.equal(cfg.name, name);
      assert.equal(cfg.backend, 'onnxruntime');
    }
    const dn = (await request(`${s.url}/v2/models/densenet_onnx`)).json<{
      platform: string;
      inputs: { name: string; shape: number[] }[];
      outputs: { name: string; shape: number[] }[];
    }>();
    assert.equal(dn.platform, 'onnxruntime_onnx');
    assert.deepEqual(dn.inputs[0], { name: 'data_0', datatype: 'FP32', shape: [3, 224, 224] });
    assert.deepEqual(dn.outputs[0], { name: 'fc6_1', datatype: 'FP32', shape: [1000] });
  });

  it('runs simple with JSON tensors and echoes the request id', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const b = Array.from({ length: 16 }, () => 3);
    const res = await post(`${s.url}/v2/models/simple/infer`, {
      id: 'req-7',
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: a },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: b },
      ],
    });
    assert.equal(res.status, 200);
    const out = res.json<InferJson>();
    assert.equal(out.id, 'req-7');
    assert.equal(out.model_version, '1');
    assert.deepEqual(
      out.outputs.find((o) => o.name === 'OUTPUT0')?.data,
      a.map((x) => x + 3),
    );
    assert.deepEqual(
      out.outputs.find((o) => o.name === 'OUTPUT1')?.data,
      a.map((x) => x - 3),
    );
  });

  it('runs simple with binary tensors in and out, batch 4, one requested output', async () => {
    const a = new Int32Array(64).map((_, i) => i * 7);
    const b = new Int32Array(64).map((_, i) => 1000 - i);
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', shape: [4, 16], datatype: 'INT32', parameters: { binary_data_size: 256 } },
          { name: 'INPUT1', shape: [4, 16], datatype: 'INT32', parameters: { binary_data_size: 256 } },
        ],
        outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }],
      },
      [Buffer.from(a.buffer), Buffer.from(b.buffer)],
    );
    const res = await request(`${s.url}/v2/models/simple/infer`, { method: 'POST', body, headers });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const { header, blobs } = splitBinaryResponse(res);
    assert.deepEqual(
      header.outputs.map((o) => o.name),
      ['OUTPUT1'],
    );
    assert.deepEqual(header.outputs[0].shape, [4, 16]);
    const blob = blobs.get('OUTPUT1')!;
    const diff = new Int32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.length));
    assert.deepEqual(
      [...diff],
      [...a].map((x, i) => x - b[i]),
    );
  });

  it('runs simple_string on decimal strings and simple_int8', async () => {
    const nums = Array.from({ length: 16 }, (_, i) => String(i + 10));
    const ones = Array.from({ length: 16 }, () => '1');
    const res = await post(`${s.url}/v2/models/simple_string/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', data: nums },
        { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', data: ones },
      ],
    });
    assert.equal(res.status, 200, res.body.toString());
    const out = res.json<InferJson>();
    assert.deepEqual(
      out.outputs.find((o) => o.name === 'OUTPUT0')?.data,
      nums.map((n) => String(Number(n) + 1)),
    );
    assert.deepEqual(
      out.outputs.find((o) => o.name === 'OUTPUT1')?.data,
      nums.map((n) => String(Number(n) - 1)),
    );

    const i8 = await post(`${s.url}/v2/models/simple_int8/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT8', data: Array(16).fill(100) },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT8', data: Array(16).fill(-20) },
      ],
    });
    assert.equal(i8.status, 200);
    assert.deepEqual(
      i8.json<InferJson>().outputs.find((o) => o.name === 'OUTPUT0')?.data,
      Array(16).fill(80),
    );
  });

  it('classifies with densenet_onnx: top 3 as value:index:label, labels from the file', async () => {
    const pixels = Buffer.alloc(3 * 224 * 224 * 4);
    for (let i = 0; i < pixels.length / 4; i++) pixels.writeFloatLE(((i * 37) % 255) / 255, i * 4);
    const { body, headers } = binaryBody(
      {
        inputs: [
          {
            name: 'data_0',
            shape: [3, 224, 224],
            datatype: 'FP32',
            parameters: { binary_data_size: pixels.length },
          },
        ],
        outputs: [{ name: 'fc6_1', parameters: { classification: 3 } }],
      },
      [pixels],
    );
    const res = await request(`${s.url}/v2/models/densenet_onnx/infer`, { method: 'POST', body, headers });
    assert.equal(res.status, 200, res.body.toString());
    const out = res.json<InferJson>();
    assert.deepEqual(out.outputs[0].shape, [3]);
    assert.equal(out.outputs[0].datatype, 'BYTES');
    const entries = out.outputs[0].data as string[];
    const scores = entries.map((e) => Number(e.split(':')[0]));
    assert.ok(scores[0] >= scores[1] && scores[1] >= scores[2], entries.join(', '));
    for (const e of entries) assert.match(e, /^-?\d+\.\d{6}:\d+:.+$/);
  });

  it('reports statistics per model and version that count what ran', async () => {
    const before = (await request(`${s.url}/v2/models/identity_fp32/stats`)).json<{
      model_stats: { inference_count: number; execution_count: number }[];
    }>();
    const count0 = before.model_stats[0]?.inference_count ?? 0;
    for (let i = 0; i < 3; i++) {
      const r = await post(`${s.url}/v2/models/identity_fp32/infer`, {
        inputs: [{ name: 'INPUT0', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }],
      });
      assert.equal(r.status, 200);
    }
    const stats = (await request(`${s.url}/v2/models/identity_fp32/versions/1/stats`)).json<{
      model_stats: {
        name: string;
        version: string;
        inference_count: number;
        execution_count: number;
        inference_stats: { success: { count: number; ns: number } };
        batch_stats: { batch_size: number }[];
      }[];
    }>();
    const m = stats.model_stats[0];
    assert.equal(m.name, 'identity_fp32');
    assert.equal(m.version, '1');
    assert.equal(m.inference_count - count0, 6);
    assert.ok(m.inference_stats.success.count >= 3);
    assert.ok(m.inference_stats.success.ns > 0);
    assert.ok(m.batch_stats.some((b) => b.batch_size === 2));
    const all = (await request(`${s.url}/v2/models/stats`)).json<{ model_stats: { name: string }[] }>();
    assert.ok(all.model_stats.length >= 7);
  });

  it('lists, unloads and reloads models through the repository extension', async () => {
    const index = (await post(`${s.url}/v2/repository/index`, {})).json<{ name: string; state: string }[]>();
    assert.ok(index.some((e) => e.name === 'simple' && e.state === 'READY'));
    assert.equal((await post(`${s.url}/v2/repository/models/simple_int8/unload`, {})).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple_int8/ready`)).status, 400);
    const after = (await post(`${s.url}/v2/repository/index`, {})).json<
      { name: string; state: string; reason: string }[]
    >();
    const entry = after.find((e) => e.name === 'simple_int8');
    assert.equal(entry?.state, 'UNAVAILABLE');
    assert.equal(entry?.reason, 'unloaded');
    const readyOnly = (await post(`${s.url}/v2/repository/index`, { ready: true })).json<
      { name: string }[]
    >();
    assert.ok(!readyOnly.some((e) => e.name === 'simple_int8'));
    assert.equal((await post(`${s.url}/v2/repository/models/simple_int8/load`, '')).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple_int8/ready`)).status, 200);
  });

  it('loads with a config override', async () => {
    const config = JSON.stringify({
      name: 'identity_fp32',
      backend: 'onnxruntime',
      max_batch_size: 4,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    });
    const res = await post(`${s.url}/v2/repository/models/identity_fp32/load`, { parameters: { config } });
    assert.equal(res.status, 200, res.body.toString());
    const cfg = (await request(`${s.url}/v2/models/identity_fp32/config`)).json<{ max_batch_size: number }>();
    assert.equal(cfg.max_batch_size, 4);
  });

  it('reads and changes log settings at run time, validating before changing anything', async () => {
    const now = (await request(`${s.url}/v2/logging`)).json<{
      log_verbose_level: number;
      log_info: boolean;
    }>();
    assert.equal(now.log_verbose_level, 0);
    const changed = await post(`${s.url}/v2/logging`, { log_verbose_level: 2, log_format: 'ISO8601' });
    assert.equal(changed.status, 200);
    assert.equal(changed.json<{ log_verbose_level: number }>().log_verbose_level, 2);
    const bad = await post(`${s.url}/v2/logging`, { log_verbose_level: 1, log_info: 'yes' });
    assert.equal(bad.status, 400);
    const after = (await request(`${s.url}/v2/logging`)).json<{
      log_verbose_level: number;
      log_format: string;
    }>();
    assert.equal(after.log_verbose_level, 2);
    assert.equal(after.log_format, 'ISO8601');
    await post(`${s.url}/v2/logging`, { log_verbose_level: 0, log_format: 'default' });
  });

  it('keeps global and per-model trace settings, with null restoring the global value', async () => {
    const global = (await request(`${s.url}/v2/trace/setting`)).json<Record<string, unknown>>();
    assert.deepEqual(global.trace_level, ['OFF']);
    assert.equal(global.trace_rate, '1000');
    // Turning a level on needs a trace file in triton mode, as in Triton ("trace file name is not given").
    const noFile = await post(`${s.url}/v2/models/simple/trace/setting`, { trace_level: ['TIMESTAMPS'] });
    assert.equal(noFile.status, 400);
    assert.match(noFile.json<{ error: string }>().error, /trace file name is not given/);
    const m = await post(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: '5' });
    assert.equal(m.status, 200, m.body.toString());
    assert.equal(m.json<Record<string, unknown>>().trace_rate, '5');
    assert.equal(
      (await request(`${s.url}/v2/trace/setting`)).json<Record<string, unknown>>().trace_rate,
      '1000',
    );
    const cleared = await post(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: null });
    assert.equal(cleared.json<Record<string, unknown>>().trace_rate, '1000');
    assert.equal((await post(`${s.url}/v2/trace/setting`, { trace_level: ['LOUD'] })).status, 400);
    // Integers are their decimal text; a number that text cannot hold exactly is refused, not rounded
    // (found by schemathesis: 9007199254740993 was stored as "9007199254740992", 1.5 as a file name "1.5").
    const rate = await post(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: 7 });
    assert.equal(rate.json<Record<string, unknown>>().trace_rate, '7');
    for (const body of ['{"trace_rate": 9007199254740993}', '{"trace_file": 1.5}', '{"trace_count": 1e21}']) {
      const r = await request(`${s.url}/v2/trace/setting`, { method: 'POST', body });
      assert.equal(r.status, 400, body);
      assert.match(
        r.json<{ error: string }>().error,
        /must be a string, a list of strings, an integer or null/,
      );
    }
    assert.equal(
      (await request(`${s.url}/v2/trace/setting`)).json<Record<string, unknown>>().trace_rate,
      '1000',
    );
    await post(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: null });
    assert.equal((await request(`${s.url}/v2/models/nope/trace/setting`)).status, 404);
  });

  it('answers CUDA shared memory status as Triton without a GPU: no regions', async () => {
    const r = await request(`${s.url}/v2/cudasharedmemory/status`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json(), []);
  });
});
