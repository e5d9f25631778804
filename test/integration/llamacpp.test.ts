// The llamacpp backend on a running server with the tiny GGUF model the test setup writes
// (scripts/setup-llm-models.sh): generate and generate_stream agree, seeds repeat, stop strings end the
// text, a step detokenizes a few tokens (not the whole text so far), concurrent streams over fewer
// sequences all finish with their own text, a cancelled stream gives its sequence back, the queue bound
// refuses, the real `openai` npm client chats; a corrupt or truncated GGUF, a bad model.json, a context
// too large to allocate, a prompt over the context and max_tokens over the limit are 4xx; 32 streams
// over 4 sequences are all answered in bounded memory.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { LlamaModel } from 'node-llama-cpp';
import OpenAI from 'openai';
import { CONTEXT_TOKENS, MAX_SPLIT } from '../../src/backends/llamacpp/token-text.js';
import { makeRepository, post, removeRepository, startServer, waitFor, type TestServer } from './harness.js';
import { LLAMACPP_CONFIG as CONFIG, TINY_GGUF as TINY } from './llamacpp-support.js';

interface Reply {
  model_name?: string;
  text_output?: string;
  num_output_tokens?: number;
  num_input_tokens?: number;
  finish_reason?: string;
  error?: string;
}

function sampling(s: Record<string, unknown>): string {
  return JSON.stringify(s);
}

/** Every `data:` event of a generate_stream answer, read until the end or until `stopAfter` events. */
async function readStream(
  url: string,
  body: unknown,
  options: { stopAfter?: number; signal?: AbortSignal } = {},
): Promise<{ status: number; events: Reply[] }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), signal: options.signal });
  const events: Reply[] = [];
  if (res.body === null) return { status: res.status, events };
  const decoder = new TextDecoder();
  // A reader, not for-await: leaving a for-await loop would cancel the body (and so the request).
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  let buffered = '';
  for (;;) {
    const chunk = (await reader.read()) as { done: boolean; value?: Uint8Array };
    if (chunk.done || chunk.value === undefined) break;
    buffered += decoder.decode(chunk.value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.split('\n').find((l) => l.startsWith('data: '));
      if (data !== undefined) events.push(JSON.parse(data.slice(6)) as Reply);
      // Stops reading but keeps the request open: the caller's signal ends it.
      if (options.stopAfter !== undefined && events.length >= options.stopAfter) {
        return { status: res.status, events };
      }
    }
  }
  return { status: res.status, events };
}

/**
 * Concurrent streams each got the text of their own prompt. llama.cpp's CPU kernels are not
 * batch-invariant: when sequences decode together, a near-tie between two tokens of this random-weight
 * model can break the other way than for the same prompt alone (measured: 2 of 640 greedy streams of 32
 * at once, on a loaded 2-core machine). So a few streams may differ from their prompt's text alone, but
 * none may carry another prompt's text (sequences mixed) and most must match exactly; a mixing or
 * sampling bug breaks most of them.
 */
function assertOwnTexts(
  texts: readonly string[],
  prompts: readonly string[],
  alone: ReadonlyMap<string, string>,
): void {
  const differing: string[] = [];
  texts.forEach((text, i) => {
    const own = alone.get(prompts[i])!;
    if (text === own) return;
    for (const [other, otherText] of alone) {
      assert.ok(
        other === prompts[i] || text !== otherText,
        `stream ${i} (${prompts[i]}) got the text of '${other}'`,
      );
    }
    differing.push(`stream ${i} (${prompts[i]}): ${JSON.stringify(text)}, alone ${JSON.stringify(own)}`);
  });
  assert.ok(
    differing.length <= texts.length / 4,
    `${differing.length} of ${texts.length} streams differ:\n${differing.join('\n')}`,
  );
}

async function metric(server: TestServer, name: string, model: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.running.metrics!.port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{model="${model}",version="1"}`));
  return line === undefined ? NaN : Number(line.split(' ').pop());
}

describe('llamacpp backend on a running server', () => {
  let repo: string;
  let server: TestServer;
  const gguf = existsSync(TINY) ? readFileSync(TINY) : Buffer.alloc(0);

  before(async () => {
    assert.ok(
      gguf.length > 0,
      `${TINY} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)`,
    );
    const engine = (settings: Record<string, number>) => ({
      config: CONFIG,
      files: {
        '1/model.gguf': gguf,
        // One thread: the test machines are small and busy, and llama.cpp's threads wait on each other.
        '1/model.json': JSON.stringify({ threads: 1, batch_size: 128, ...settings }),
      },
    });
    repo = makeRepository({
      tiny: engine({ context_size: 256, parallel_sequences: 2 }),
      counted: engine({ context_size: 256, parallel_sequences: 1 }),
      one: engine({ context_size: 2048, parallel_sequences: 1, max_queue_size: 1 }),
      four: engine({ context_size: 256, parallel_sequences: 4 }),
      // A KV cache no machine has: 256 sequences of a million tokens.
      huge: {
        config: CONFIG,
        files: {
          '1/model.gguf': gguf,
          '1/model.json': JSON.stringify({ threads: 1, context_size: 1 << 20, parallel_sequences: 256 }),
        },
      },
      garbage: {
        config: CONFIG,
        files: { '1/model.gguf': Buffer.from('GGUF\x03\x00\x00\x00not a model at all') },
      },
      truncated: { config: CONFIG, files: { '1/model.gguf': gguf.subarray(0, gguf.length >> 1) } },
      typo: { config: CONFIG, files: { '1/model.gguf': gguf, '1/model.json': '{"context_sise": 256}' } },
    });
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=tiny',
      '--load-model=one',
      '--load-model=four',
    ]);
  });
  after(async () => {
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  const generate = async (model: string, prompt: string, s: Record<string, unknown>, extra = {}) => {
    const res = await post(`${server.url}/v2/models/${model}/generate`, {
      text_input: prompt,
      exclude_input_in_output: true,
      return_num_input_tokens: true,
      return_num_output_tokens: true,
      return_finish_reason: true,
      sampling_parameters: sampling(s),
      ...extra,
    });
    return { status: res.status, reply: res.json<Reply>() };
  };

  it('generates max_tokens tokens; generate_stream sends the same text piece by piece', async () => {
    const { status, reply } = await generate('tiny', 'the machine is', { temperature: 0, max_tokens: 24 });
    assert.equal(status, 200, JSON.stringify(reply));
    assert.equal(reply.num_output_tokens, 24);
    assert.ok(reply.num_input_tokens! > 1);
    assert.equal(reply.finish_reason, 'length');
    assert.ok(reply.text_output!.length >= 24, reply.text_output);

    const streamed = await readStream(`${server.url}/v2/models/tiny/generate_stream`, {
      text_input: 'the machine is',
      stream: true,
      exclude_input_in_output: true,
      return_num_output_tokens: true,
      sampling_parameters: sampling({ temperature: 0, max_tokens: 24 }),
    });
    assert.equal(streamed.status, 200);
    assert.ok(streamed.events.length > 1);
    assert.equal(streamed.events.map((e) => e.text_output ?? '').join(''), reply.text_output);
    assert.equal(
      streamed.events.reduce((n, e) => n + (e.num_output_tokens ?? 0), 0),
      24,
    );

    const echoed = await generate(
      'tiny',
      'the machine is',
      { temperature: 0, max_tokens: 24 },
      { exclude_input_in_output: false },
    );
    assert.equal(echoed.reply.text_output, 'the machine is' + reply.text_output);
  });

  it('repeats its text for the same seed and differs for another', async () => {
    const s = (seed: number) => ({ temperature: 3, seed, max_tokens: 16 });
    const a = await generate('tiny', 'a quiet river', s(7));
    const b = await generate('tiny', 'a quiet river', s(7));
    const c = await generate('tiny', 'a quiet river', s(8));
    assert.equal(a.status, 200);
    assert.equal(a.reply.text_output, b.reply.text_output);
    assert.notEqual(a.reply.text_output, c.reply.text_output);
  });

  it('ends the text before a stop string', async () => {
    const full = (await generate('tiny', 'blue stone', { temperature: 0, max_tokens: 30 })).reply
      .text_output!;
    const stop = full.slice(10, 13);
    const stopped = await generate('tiny', 'blue stone', { temperature: 0, max_tokens: 30, stop: [stop] });
    assert.equal(stopped.reply.text_output, full.slice(0, full.indexOf(stop)));
    assert.equal(stopped.reply.finish_reason, 'stop');
  });

  it('detokenizes a few tokens a step, not the whole text so far', async () => {
    // Every detokenization of a model loaded now, counted where node-llama-cpp does it (the server runs
    // in this process; a model binds its detokenize when it loads, so the spy goes in before the load).
    type Detokenize = (this: LlamaModel, ...args: Parameters<LlamaModel['detokenize']>) => string;
    const proto = LlamaModel.prototype;
    const original = Object.getOwnPropertyDescriptor(proto, 'detokenize')!.value as Detokenize;
    const calls: number[] = [];
    proto.detokenize = function (this: LlamaModel, ...args: Parameters<LlamaModel['detokenize']>) {
      calls.push(args[0].length);
      return original.apply(this, args);
    };
    try {
      const load = await post(`${server.url}/v2/repository/models/counted/load`, {});
      assert.equal(load.status, 200, load.body.toString());
    } finally {
      proto.detokenize = original;
    }
    const steps = 200;
    calls.length = 0;
    const streamed = await readStream(`${server.url}/v2/models/counted/generate_stream`, {
      text_input: 'the',
      stream: true,
      exclude_input_in_output: true,
      sampling_parameters: sampling({ temperature: 0, max_tokens: steps }),
    });
    const counted = [...calls];
    assert.equal(streamed.status, 200);
    const text = streamed.events.map((e) => e.text_output ?? '').join('');
    const whole = (await generate('counted', 'the', { temperature: 0, max_tokens: steps })).reply;
    assert.equal(text, whole.text_output);
    await post(`${server.url}/v2/repository/models/counted/unload`, {});
    // The whole text every step: the last call would read 200 tokens, all of them 20,100.
    assert.ok(counted.length >= steps, `${counted.length} calls`);
    const largest = Math.max(...counted);
    const total = counted.reduce((a, b) => a + b, 0);
    assert.ok(largest <= CONTEXT_TOKENS + MAX_SPLIT + 1, `a call detokenized ${largest} tokens`);
    assert.ok(
      total <= (4 * CONTEXT_TOKENS + 2 * MAX_SPLIT + 1) * steps,
      `${total} tokens detokenized for ${steps} generated`,
    );
  });

  it('answers 8 concurrent streams over 2 sequences, each with its own text', async () => {
    const prompts = Array.from(
      { length: 8 },
      (_, i) => `the ${['river', 'stone', 'light', 'model'][i % 4]} ${i}`,
    );
    const alone = new Map<string, string>();
    for (const p of prompts)
      alone.set(p, (await generate('tiny', p, { temperature: 0, max_tokens: 20 })).reply.text_output!);
    const together = await Promise.all(
      prompts.map((p) =>
        readStream(`${server.url}/v2/models/tiny/generate_stream`, {
          text_input: p,
          stream: true,
          exclude_input_in_output: true,
          return_num_output_tokens: true,
          sampling_parameters: sampling({ temperature: 0, max_tokens: 20 }),
        }),
      ),
    );
    together.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.equal(
        r.events.reduce((n, e) => n + (e.num_output_tokens ?? 0), 0),
        20,
        `stream ${i}`,
      );
    });
    assertOwnTexts(
      together.map((r) => r.events.map((e) => e.text_output ?? '').join('')),
      prompts,
      alone,
    );
    await waitFor(async () => (await metric(server, 'vllm:num_requests_running', 'tiny')) === 0);
  });

  it('answers 32 concurrent streams over 4 sequences: none lost, at most 4 running, memory bounded', async () => {
    const prompts = Array.from(
      { length: 32 },
      (_, i) => `the ${['blue', 'green', 'small', 'quiet'][i % 4]} stone ${i % 8}`,
    );
    const body = (p: string) => ({
      text_input: p,
      stream: true,
      exclude_input_in_output: true,
      return_num_output_tokens: true,
      return_finish_reason: true,
      sampling_parameters: sampling({ temperature: 0, max_tokens: 12 }),
    });
    const alone = new Map<string, string>();
    for (const p of new Set(prompts)) {
      alone.set(p, (await generate('four', p, { temperature: 0, max_tokens: 12 })).reply.text_output!);
    }
    const round = () =>
      Promise.all(prompts.map((p) => readStream(`${server.url}/v2/models/four/generate_stream`, body(p))));
    await round(); // warms the allocator: what is measured next is growth, not first use
    const rssBefore = process.memoryUsage().rss;
    let peakRunning = 0;
    let sampling32 = true;
    const sampler = (async () => {
      while (sampling32) {
        peakRunning = Math.max(peakRunning, await metric(server, 'vllm:num_requests_running', 'four'));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const streams = await round();
    sampling32 = false;
    await sampler;
    const grownMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    streams.forEach((r, i) => {
      assert.equal(r.status, 200, `stream ${i}`);
      assert.equal(
        r.events.reduce((n, e) => n + (e.num_output_tokens ?? 0), 0),
        12,
        `stream ${i}`,
      );
      assert.equal(r.events.at(-1)?.finish_reason, 'length', `stream ${i} ended`);
    });
    assertOwnTexts(
      streams.map((r) => r.events.map((e) => e.text_output ?? '').join('')),
      prompts,
      alone,
    );
    assert.ok(peakRunning <= 4, `${peakRunning} requests held a sequence at once`);
    // The context (4 sequences) is allocated at load; 28 waiting requests cost only their queue entries.
    assert.ok(grownMb < 64, `RSS grew by ${grownMb.toFixed(1)} MB over 32 streams`);
    await waitFor(async () => (await metric(server, 'vllm:num_requests_running', 'four')) === 0);
    assert.equal(await metric(server, 'vllm:num_requests_waiting', 'four'), 0);
  });

  it('gives a cancelled stream its sequence back; past the queue bound a request is refused', async () => {
    const long = { text_input: 'the light', stream: true, exclude_input_in_output: true };
    const before = await metric(server, 'vllm:generation_tokens_total', 'one');
    const abort = new AbortController();
    // Holds the model's one sequence: 2000 tokens would take seconds.
    const first = await readStream(
      `${server.url}/v2/models/one/generate_stream`,
      { ...long, sampling_parameters: sampling({ max_tokens: 2000, ignore_eos: true }) },
      { stopAfter: 1, signal: abort.signal },
    );
    assert.equal(first.events.length, 1);
    // The next request waits for the sequence; a third finds the queue (max_queue_size 1) full.
    const waiting = generate('one', 'the stone', { temperature: 0, max_tokens: 5 });
    await waitFor(async () => (await metric(server, 'vllm:num_requests_waiting', 'one')) === 1);
    const refused = await generate('one', 'the river', { max_tokens: 5 });
    assert.equal(refused.status, 503);
    assert.match(refused.reply.error!, /Exceeds maximum queue size/);
    abort.abort();
    const second = await waiting;
    assert.equal(second.status, 200, JSON.stringify(second.reply));
    assert.equal(second.reply.num_output_tokens, 5);
    await waitFor(async () => (await metric(server, 'vllm:num_requests_running', 'one')) === 0);
    // The cancelled request stopped early: far fewer than its 2000 tokens were generated.
    const generated = (await metric(server, 'vllm:generation_tokens_total', 'one')) - before;
    assert.ok(generated < 2000, `${generated} tokens generated`);
  });

  it('refuses a prompt over the context, max_tokens over the limit and bad sampling parameters with 400', async () => {
    const over = await generate('tiny', 'x'.repeat(400), { max_tokens: 1 });
    assert.equal(over.status, 400);
    assert.match(over.reply.error!, /over this model's context of 256 tokens/);
    const tooMany = await generate('tiny', 'the model', { max_tokens: 1000 });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.reply.error!, /max_tokens 1000 is over the limit/);
    const bad = await generate('tiny', 'the model', { n: 3 });
    assert.equal(bad.status, 400);
    assert.match(bad.reply.error!, /'n'/);
    // The server still serves.
    assert.equal((await generate('tiny', 'the model', { max_tokens: 2 })).status, 200);
  });

  it('fails to load a corrupt or truncated GGUF and a model.json with a typo, with 400 and the reason', async () => {
    for (const [model, reason] of [
      ['garbage', /not a GGUF model llama.cpp can load/],
      ['truncated', /not a GGUF model llama.cpp can load/],
      ['typo', /unknown key 'context_sise'/],
      ['huge', /context_size 1048576 x parallel_sequences 256 needs a KV cache of about 64\.0 GiB/],
    ] as const) {
      const res = await post(`${server.url}/v2/repository/models/${model}/load`, {});
      assert.equal(res.status, 400, `${model}: ${res.body.toString()}`);
      assert.match(res.json<{ error: string }>().error, reason);
    }
    assert.equal((await generate('tiny', 'the model', { max_tokens: 2 })).status, 200);
  });

  it('chats through /v1 with the real openai client, streamed and not, with usage', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'What is a model?' }];
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 12,
      temperature: 0,
    });
    const content = chat.choices[0].message.content ?? '';
    assert.ok(content.length > 0);
    assert.ok(!content.includes('What is a model?'), 'the prompt is not echoed');
    assert.equal(chat.usage?.completion_tokens, 12);
    assert.equal(chat.choices[0].finish_reason, 'length');
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 12,
      temperature: 0,
      stream: true,
    });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(streamed, content);
    const completion = await client.completions.create({
      model: 'tiny',
      prompt: 'the river',
      max_tokens: 6,
      temperature: 0,
      seed: 3,
    });
    assert.equal(completion.usage?.completion_tokens, 6);
  });
});
