/**
 * An ONNX model with `execution_thread: "event_loop"` served over real HTTP: answers under concurrency with
 * dynamic batching, statistics, and a load that fails cleanly on a bad value while the server keeps serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  binaryBody,
  makeRepository,
  post,
  removeRepository,
  request,
  splitBinaryResponse,
  startServer,
  type TestServer,
} from './harness.js';

const config = (name: string, thread: string): string => `
name: "${name}"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
dynamic_batching { max_queue_delay_microseconds: 2000 }
parameters { key: "execution_thread" value: { string_value: "${thread}" } }
`;

interface Stats {
  model_stats: {
    inference_count: number;
    execution_count: number;
    inference_stats: { success: { count: number } };
  }[];
}

void describe('onnxruntime on the event loop, over HTTP', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    repo = makeRepository({
      inline_identity: { config: config('inline_identity', 'event_loop'), onnx: 'identity_fp32.onnx' },
      bad_thread: { config: config('bad_thread', 'gpu_please'), onnx: 'identity_fp32.onnx' },
    });
    server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit']);
    const load = await post(`${server.url}/v2/repository/models/inline_identity/load`, {});
    assert.equal(load.status, 200, load.body.toString());
  });

  after(async () => {
    await server.stop();
    removeRepository(repo);
  });

  it('answers 64 concurrent requests with their own values, batched', async () => {
    const one = async (i: number): Promise<void> => {
      const values = Float32Array.from({ length: 16 }, (_, k) => i * 100 + k);
      const { body, headers } = binaryBody(
        {
          inputs: [
            { name: 'INPUT0', datatype: 'FP32', shape: [1, 16], parameters: { binary_data_size: 64 } },
          ],
          outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
        },
        [Buffer.from(values.buffer)],
      );
      const res = await request(`${server.url}/v2/models/inline_identity/infer`, { body, headers });
      assert.equal(res.status, 200, res.body.toString());
      const out = splitBinaryResponse(res).blobs.get('OUTPUT0')!;
      assert.deepEqual(
        Array.from(new Float32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.length))),
        Array.from(values),
      );
    };
    await Promise.all(Array.from({ length: 64 }, (_, i) => one(i)));
    const stats = (await request(`${server.url}/v2/models/inline_identity/stats`)).json<Stats>();
    const s = stats.model_stats[0];
    assert.equal(s.inference_stats.success.count, 64);
    assert.equal(s.inference_count, 64);
    assert.ok(s.execution_count < 64, `batched: ${s.execution_count} executions for 64 requests`);
  });

  it('a bad execution_thread fails that load with 400 naming the key; the server keeps serving', async () => {
    const load = await post(`${server.url}/v2/repository/models/bad_thread/load`, {});
    assert.equal(load.status, 400);
    assert.match(load.body.toString(), /execution_thread/);
    const ready = await request(`${server.url}/v2/models/inline_identity/ready`);
    assert.equal(ready.status, 200);
  });
});
