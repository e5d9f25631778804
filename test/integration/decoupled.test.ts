// Decoupled (streaming) models end to end on a real server: Triton's repeat_int32 / square_int32 /
// custom_zero_1_float32 from the bundled examples on the built-in backends, HTTP generate and
// generate_stream (SSE), the in-process API's final flags and response statistics, and many concurrent
// gRPC ModelStreamInfer streams.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput } from '../../src/client/index.js';
import type { InferenceResponse, InferInput as CoreInput } from '../../src/core/types.js';
import {
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';
import { collect, postSse } from './sse.js';

const example = (model: string): string => readFileSync(path.join(EXAMPLES, model, 'config.pbtxt'), 'utf8');

function int32(name: string, values: number[]): CoreInput {
  const data = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => data.writeInt32LE(v, i * 4));
  return { name, datatype: 'INT32', shape: [values.length], data };
}

function uint32(name: string, values: number[]): CoreInput {
  const data = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => data.writeUInt32LE(v, i * 4));
  return { name, datatype: 'UINT32', shape: [values.length], data };
}

interface ResponseStat {
  success: { count: number };
  empty_response: { count: number };
  cancel: { count: number };
}
interface Stats {
  inference_stats: { success: { count: number }; fail: { count: number } };
  response_stats: Record<string, ResponseStat>;
}

describe('decoupled models', () => {
  let s: TestServer;
  let repo: string;

  before(async () => {
    repo = makeRepository({
      repeat_int32: { config: example('repeat_int32') },
      square_int32: { config: example('square_int32') },
      custom_zero_1_float32: { config: example('custom_zero_1_float32') },
      simple: {
        config: example('simple'),
        files: { '1/model.onnx': readFileSync(path.join(EXAMPLES, 'simple/1/model.onnx')) },
      },
    });
    s = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  const stats = async (model: string): Promise<Stats> =>
    (await request(`${s.url}/v2/models/${model}/stats`)).json<{ model_stats: Stats[] }>().model_stats[0];

  describe('HTTP generate_stream', () => {
    it('streams repeat_int32 responses as they are made, spaced by DELAY, IDX counting up', async () => {
      const start = performance.now();
      const res = await postSse(`${s.url}/v2/models/repeat_int32/generate_stream`, {
        IN: [7, 8, 9],
        DELAY: [150, 1000, 150],
        WAIT: 0,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const events = await collect(res);
      assert.deepEqual(
        events.map((e) => [e.data.OUT, e.data.IDX, e.data.model_name, e.data.model_version]),
        [
          [7, 0, 'repeat_int32', '1'],
          [8, 1, 'repeat_int32', '1'],
          [9, 2, 'repeat_int32', '1'],
        ],
      );
      // Each event left when its response was made, not all at the end: the first one cannot come before its
      // 150 ms delay, and only a client stalled for most of a second could see the 1 s gap after it shrink
      // to half (had the server held the events back, the gap would be about zero).
      assert.ok(events[0].at - start >= 120, `first event after ${events[0].at - start} ms`);
      assert.ok(events[1].at - events[0].at >= 500, 'second event spaced from the first');
    });

    it('square_int32: no event for 0, n events of OUT = n otherwise', async () => {
      const zero = await postSse(`${s.url}/v2/models/square_int32/generate_stream`, { IN: 0 });
      assert.equal(zero.status, 200);
      assert.deepEqual(await collect(zero), []);
      const four = await collect(await postSse(`${s.url}/v2/models/square_int32/generate_stream`, { IN: 4 }));
      assert.deepEqual(
        four.map((e) => e.data.OUT),
        [4, 4, 4, 4],
      );
    });

    it('works for a non-decoupled model: one event', async () => {
      const ones = new Array<number>(16).fill(1);
      const counting = Array.from({ length: 16 }, (_, i) => i);
      const events = await collect(
        await postSse(`${s.url}/v2/models/simple/generate_stream`, { INPUT0: counting, INPUT1: ones }),
      );
      assert.equal(events.length, 1);
      assert.deepEqual(
        events[0].data.OUTPUT0,
        counting.map((v) => v + 1),
      );
    });

    it('refuses a bad request with a plain JSON error before streaming', async () => {
      const res = await postSse(`${s.url}/v2/models/repeat_int32/generate_stream`, { IN: [1] });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.match(
        (JSON.parse(await res.text()) as { error: string }).error,
        /expected 3 inputs but got 1 inputs for model 'repeat_int32'/,
      );
    });

    it('reports a failure after acceptance as an error event under the failure status', async () => {
      // IN and DELAY of different lengths pass the core's checks; the repeat backend refuses them.
      const res = await postSse(`${s.url}/v2/models/repeat_int32/generate_stream`, {
        IN: [1, 2],
        DELAY: [1],
        WAIT: 0,
      });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const events = await collect(res);
      assert.deepEqual(
        events.map((e) => e.data),
        [{ error: 'expected IN and DELAY shape to match, got [2] and [1]' }],
      );
    });
  });

  describe('HTTP generate', () => {
    it('answers a non-decoupled model with one JSON object, keys sorted, id echoed', async () => {
      const counting = Array.from({ length: 16 }, (_, i) => i);
      const res = await post(`${s.url}/v2/models/simple/generate`, {
        id: 'gen-1',
        INPUT0: counting,
        INPUT1: new Array<number>(16).fill(2),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
      const body = res.json<Record<string, unknown>>();
      assert.deepEqual(Object.keys(body), ['OUTPUT0', 'OUTPUT1', 'id', 'model_name', 'model_version']);
      assert.equal(body.id, 'gen-1');
      assert.deepEqual(
        body.OUTPUT1,
        counting.map((v) => v - 2),
      );
    });

    it('accepts a decoupled model that makes exactly one response', async () => {
      const res = await post(`${s.url}/v2/models/square_int32/generate`, { IN: 1 });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json(), { OUT: 1, model_name: 'square_int32', model_version: '1' });
    });

    it('fails a decoupled model that makes zero or several responses, as Triton does', async () => {
      for (const n of [0, 3]) {
        const res = await post(`${s.url}/v2/models/square_int32/generate`, { IN: n });
        assert.equal(res.status, 500, `IN=${n}`);
        assert.match(
          res.json<{ error: string }>().error,
          /generate expects model to produce exactly 1 response/,
        );
      }
    });

    it('passes keys that are not inputs, and the parameters object, as request parameters', async () => {
      const res = await post(`${s.url}/v2/models/custom_zero_1_float32/generate`, {
        INPUT0: 0.5,
        parameters: { temperature: 0.25, stream: false },
        note: 'x',
      });
      assert.equal(res.status, 200);
      // identity answers with Triton's example response parameters beside its output
      assert.deepEqual(res.json(), {
        OUTPUT0: 0.5,
        model_name: 'custom_zero_1_float32',
        model_version: '1',
        param0: 'an example string parameter',
        param1: 42,
        param2: false,
      });
      const bad = await post(`${s.url}/v2/models/custom_zero_1_float32/generate`, {
        INPUT0: 0.5,
        parameters: { nested: { twice: 1 } },
      });
      assert.equal(bad.status, 400);
      assert.equal(
        bad.json<{ error: string }>().error,
        "Converting keyword: 'parameters': parameter 'nested' has invalid type. It should be either 'int', 'bool', or 'string'.",
      );
    });

    it("words bad input as Triton's JSON reader does", async () => {
      const cases: [string, RegExp][] = [
        ['{"IN": "3"}', /attempt to access JSON non-signed-integer as signed-integer/],
        ['{"IN": 1, "IN": 2}', /input 'IN' already exists in request/],
        ['{"IN": 1, "parameters": 1}', /Expected JSON object for keyword: 'parameters'/],
        ['{}', /expected 1 inputs but got 0 inputs/],
      ];
      for (const [body, message] of cases) {
        for (const route of ['generate', 'generate_stream']) {
          const res = await post(`${s.url}/v2/models/square_int32/${route}`, body);
          assert.equal(res.status, 400, `${route} ${body}`);
          assert.equal(res.headers.get('content-type'), 'application/json');
          assert.match(res.json<{ error: string }>().error, message, `${route} ${body}`);
        }
      }
    });

    it('leaves /infer to non-decoupled models', async () => {
      const res = await post(`${s.url}/v2/models/square_int32/infer`, {
        inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [1] }],
      });
      assert.equal(res.status, 501);
      assert.equal(
        res.json<{ error: string }>().error,
        "HTTP end point doesn't support models with decoupled transaction policy",
      );
      const identity = await post(`${s.url}/v2/models/custom_zero_1_float32/infer`, {
        inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [2.5] }],
      });
      assert.equal(identity.status, 200);
      const body = identity.json<{ outputs: { data: number[] }[]; parameters: Record<string, unknown> }>();
      assert.deepEqual(body.outputs[0].data, [2.5]);
      assert.equal(body.parameters.param1, 42);
    });
  });

  describe('the in-process API', () => {
    it('streams every response with its final flag, then counts them in response_stats', async () => {
      const before = await stats('repeat_int32');
      const got: InferenceResponse[] = [];
      for await (const r of s.running.server.infer({
        modelName: 'repeat_int32',
        inputs: [int32('IN', [5, 6]), uint32('DELAY', [0, 0]), uint32('WAIT', [0])],
      })) {
        got.push(r);
      }
      assert.deepEqual(
        got.map((r) => [r.final, r.outputs.map((o) => o.name)]),
        [
          [false, ['OUT', 'IDX']],
          [false, ['OUT', 'IDX']],
          [true, []],
        ],
      );
      assert.equal(got[1].outputs[0].data.readInt32LE(0), 6);
      const after = await stats('repeat_int32');
      assert.equal(after.inference_stats.success.count, before.inference_stats.success.count + 1);
      const success = (st: Stats, i: number): number => st.response_stats[String(i)]?.success.count ?? 0;
      assert.equal(success(after, 0), success(before, 0) + 1);
      assert.equal(success(after, 1), success(before, 1) + 1);
    });

    it('inferOnce refuses a decoupled model', async () => {
      await assert.rejects(
        s.running.server.inferOnce({ modelName: 'square_int32', inputs: [int32('IN', [1])] }),
        { code: 'UNSUPPORTED', message: /decoupled transaction policy/ },
      );
    });
  });

  describe('gRPC ModelStreamInfer', () => {
    it('serves many concurrent streams, each getting all of its own responses', async () => {
      const client = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
      try {
        const streams = 20;
        const perStream = 3;
        const results = await Promise.all(
          Array.from({ length: streams }, async (_, k) => {
            const stream = client.streamInfer();
            for (let j = 0; j < perStream; j++) {
              const n = 1 + ((k + j) % 4);
              stream.send({
                model: 'repeat_int32',
                requestId: `${k}-${j}`,
                inputs: [
                  new InferInput('IN', [n], 'INT32').setData(
                    Array.from({ length: n }, (_, i) => k * 100 + i),
                  ),
                  new InferInput('DELAY', [n], 'UINT32').setData(new Array<number>(n).fill(5)),
                  new InferInput('WAIT', [1], 'UINT32').setData([0]),
                ],
              });
            }
            stream.end();
            const seen = new Map<string, number[]>();
            for await (const r of stream.results()) {
              const list = seen.get(r.id) ?? [];
              list.push(Number(r.asArray('IDX', 'UINT32')[0]));
              assert.equal(r.asArray('OUT', 'INT32')[0], k * 100 + Number(r.asArray('IDX', 'UINT32')[0]));
              seen.set(r.id, list);
            }
            return { k, seen };
          }),
        );
        for (const { k, seen } of results) {
          for (let j = 0; j < perStream; j++) {
            const n = 1 + ((k + j) % 4);
            assert.deepEqual(
              seen.get(`${k}-${j}`),
              Array.from({ length: n }, (_, i) => i),
              `stream ${k} request ${j}`,
            );
          }
        }
      } finally {
        client.close();
      }
    });
  });
});
