// The llamacpp backend's TensorRT-LLM interface (tensorrt_llm model: input_ids ... -> output_ids) on a
// running server with the tiny GGUF (scripts/setup-llm-models.sh): greedy generation repeats, output_ids
// holds the prompt then request_output_len tokens, stop words end it, log probs are real, inputs the CPU
// engine cannot honour (LoRA, beam search) are 400s, and the vLLM-named latency histograms move.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, startServer, type TestServer } from './harness.js';
import { TINY_GGUF as TINY } from './llamacpp-support.js';

const CONFIG = `backend: "llamacpp"
max_batch_size: 0
input [
  { name: "input_ids" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "input_lengths" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "request_output_len" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "end_id" data_type: TYPE_INT32 dims: [ 1 ] optional: true },
  { name: "stop_words_list" data_type: TYPE_INT32 dims: [ 2, -1 ] optional: true },
  { name: "return_log_probs" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "beam_width" data_type: TYPE_INT32 dims: [ 1 ] optional: true },
  { name: "lora_task_id" data_type: TYPE_UINT64 dims: [ 1 ] optional: true }
]
output [
  { name: "output_ids" data_type: TYPE_INT32 dims: [ -1, -1 ] },
  { name: "sequence_length" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "cum_log_probs" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "output_log_probs" data_type: TYPE_FP32 dims: [ -1, -1 ] }
]
`;

interface Out {
  name: string;
  shape: number[];
  data: number[];
}

describe('llamacpp TensorRT-LLM interface', () => {
  let repo: string;
  let server: TestServer;
  before(async () => {
    assert.ok(existsSync(TINY), `${TINY} is missing: scripts/setup-llm-models.sh writes it`);
    repo = makeRepository({
      trt: {
        config: CONFIG,
        files: {
          '1/model.gguf': readFileSync(TINY),
          '1/model.json': JSON.stringify({ threads: 1, context_size: 256, parallel_sequences: 2 }),
        },
      },
    });
    server = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  const ids = [1, 300, 301, 302, 303];
  const infer = async (extra: Record<string, { datatype: string; shape: number[]; data: unknown[] }>) => {
    const inputs = {
      input_ids: { datatype: 'INT32', shape: [ids.length], data: ids },
      input_lengths: { datatype: 'INT32', shape: [1], data: [ids.length] },
      request_output_len: { datatype: 'INT32', shape: [1], data: [12] },
      ...extra,
    };
    const res = await post(`${server.url}/v2/models/trt/infer`, {
      inputs: Object.entries(inputs).map(([name, t]) => ({ name, ...t })),
    });
    const body = res.json<{ outputs?: Out[]; error?: string }>();
    const out = (name: string) => body.outputs?.find((o) => o.name === name);
    return { status: res.status, body, out };
  };

  it('answers output_ids = prompt + request_output_len greedy tokens, the same each time', async () => {
    const a = await infer({});
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const outIds = a.out('output_ids')!;
    assert.deepEqual(outIds.shape, [1, ids.length + 12]);
    assert.deepEqual(outIds.data.slice(0, ids.length), ids);
    assert.deepEqual(a.out('sequence_length')!.data, [ids.length + 12]);
    const b = await infer({});
    assert.deepEqual(b.out('output_ids')!.data, outIds.data);
  });

  it('ends after a stop word (kept) and reports real log probs when asked', async () => {
    const full = (await infer({})).out('output_ids')!.data.slice(ids.length);
    const word = [full[3]];
    const stopped = await infer({
      stop_words_list: { datatype: 'INT32', shape: [2, 1], data: [word[0], 1] },
      return_log_probs: { datatype: 'BOOL', shape: [1], data: [true] },
    });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    const gen = stopped.out('output_ids')!.data.slice(ids.length);
    assert.deepEqual(gen, full.slice(0, full.indexOf(word[0]) + 1));
    const lp = stopped.out('output_log_probs')!.data;
    assert.equal(lp.length, gen.length);
    assert.ok(
      lp.every((v) => v <= 0 && v > -50),
      JSON.stringify(lp),
    );
    assert.ok(lp.some((v) => v < 0));
    const cum = stopped.out('cum_log_probs')!.data[0];
    assert.ok(Math.abs(cum - lp.reduce((x, y) => x + y, 0)) < 1e-3);
  });

  it('refuses LoRA, beam search and ids outside the vocabulary with 400 and keeps serving', async () => {
    const lora = await infer({ lora_task_id: { datatype: 'UINT64', shape: [1], data: [7] } });
    assert.equal(lora.status, 400);
    assert.match(lora.body.error!, /LoRA/);
    const beam = await infer({ beam_width: { datatype: 'INT32', shape: [1], data: [4] } });
    assert.equal(beam.status, 400);
    assert.match(beam.body.error!, /beam_width/);
    const neutral = await infer({ beam_width: { datatype: 'INT32', shape: [1], data: [1] } });
    assert.equal(neutral.status, 200, JSON.stringify(neutral.body));
    const res = await post(`${server.url}/v2/models/trt/infer`, {
      inputs: [
        { name: 'input_ids', datatype: 'INT32', shape: [2], data: [1, 99999] },
        { name: 'input_lengths', datatype: 'INT32', shape: [1], data: [2] },
        { name: 'request_output_len', datatype: 'INT32', shape: [1], data: [2] },
      ],
    });
    assert.equal(res.status, 400);
    assert.match(res.json<{ error: string }>().error, /vocabulary/);
  });

  it('moves the time-to-first-token, time-per-output-token and token metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${server.running.metrics!.port}/metrics`)).text();
    const value = (name: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{model="trt",version="1"}`));
      return line === undefined ? NaN : Number(line.split(' ').pop());
    };
    assert.ok(value('vllm:time_to_first_token_seconds_count') >= 4, text);
    assert.ok(value('vllm:time_per_output_token_seconds_count') >= 11 * 4);
    assert.ok(value('vllm:generation_tokens_total') >= 12 * 3);
    assert.ok(value('vllm:e2e_request_latency_seconds_count') >= 4);
  });
});
