// Prompt-prefix reuse of the llamacpp backend on a running server with the tests' tiny GGUF model: a
// request given a free sequence keeps the tokens that sequence already holds of its prompt and evaluates
// only the rest. Counted by vLLM's prefix cache counters (tokens): the same long prompt twice reuses all
// of it but its last token the second time; at temperature 0 every text is the one a model without reuse
// (enable_prefix_caching false) gives; two prompts interleaved, one after the other and at once, each find
// their own sequence and give their own text; a cancelled stream gives its sequence back with its tokens;
// a sliding-window model reuses a prefix only while its cache still holds the window the next token needs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, startServer, waitFor, type TestServer } from './harness.js';
import {
  LLAMACPP_CONFIG as CONFIG,
  TINY_GGUF as TINY,
  TINY_SWA_GGUF as TINY_SWA,
} from './llamacpp-support.js';

interface Reply {
  text_output?: string;
  num_input_tokens?: number;
  num_output_tokens?: number;
  error?: string;
}

/** A prompt of `words` words after `first` (about 6 tokens a word for the tiny model). */
function longPrompt(first: string, words: number): string {
  const vocab = ['river', 'stone', 'light', 'model', 'quiet', 'machine', 'blue', 'green', 'small', 'the'];
  const out = [first];
  for (let i = 0; i < words; i++) out.push(vocab[(i * 7 + first.length) % vocab.length]);
  return out.join(' ');
}

describe('llamacpp prompt-prefix reuse on a running server', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    assert.ok(
      existsSync(TINY),
      `${TINY} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)`,
    );
    assert.ok(existsSync(TINY_SWA), `${TINY_SWA} is missing: scripts/setup-llm-models.sh writes it`);
    const gguf = readFileSync(TINY);
    const engine = (settings: Record<string, number | boolean>, model = gguf) => ({
      config: CONFIG,
      files: {
        '1/model.gguf': model,
        '1/model.json': JSON.stringify({ threads: 1, batch_size: 128, context_size: 1024, ...settings }),
      },
    });
    repo = makeRepository({
      cached: engine({ parallel_sequences: 2 }),
      uncached: engine({ parallel_sequences: 2, enable_prefix_caching: false }),
      single: engine({ parallel_sequences: 1 }),
      // A batch of 32 keeps the sliding-window cache small (llama.cpp sizes it from the window and the
      // batch: 256 cells here), so a long prompt pushes its first tokens out of it.
      swa: engine({ parallel_sequences: 1, batch_size: 32 }, readFileSync(TINY_SWA)),
      swa_uncached: engine(
        { parallel_sequences: 1, batch_size: 32, enable_prefix_caching: false },
        readFileSync(TINY_SWA),
      ),
    });
    server = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  /** A counter of `model`, read from the model's own families (the /metrics port caches its scrapes). */
  const metric = async (name: string, model: string): Promise<number> => {
    const models = await server.running.server.customMetrics();
    const family = models.find((m) => m.model === model)?.families.find((f) => f.name === name);
    assert.ok(family !== undefined, `${name} for ${model} is not defined`);
    return family.metrics[0].value;
  };
  const counters = async (model: string) => ({
    queries: await metric('vllm:prefix_cache_queries_total', model),
    hits: await metric('vllm:prefix_cache_hits_total', model),
  });

  const generate = async (model: string, prompt: string, maxTokens = 24) => {
    const res = await post(`${server.url}/v2/models/${model}/generate`, {
      text_input: prompt,
      exclude_input_in_output: true,
      return_num_input_tokens: true,
      sampling_parameters: JSON.stringify({ temperature: 0, max_tokens: maxTokens, ignore_eos: true }),
    });
    const reply = res.json<Reply>();
    assert.equal(res.status, 200, JSON.stringify(reply));
    return { text: reply.text_output!, promptTokens: reply.num_input_tokens! };
  };

  /** Runs `call` and returns what it gave and how the model's prefix cache counters moved. */
  const counted = async <T>(model: string, call: () => Promise<T>) => {
    const before = await counters(model);
    const result = await call();
    const after = await counters(model);
    return { result, queries: after.queries - before.queries, hits: after.hits - before.hits };
  };

  it('evaluates only the last token of a repeated long prompt, with the same text as without reuse', async () => {
    const prompt = longPrompt('once', 60);
    const first = await counted('cached', () => generate('cached', prompt));
    const n = first.result.promptTokens;
    assert.ok(n > 200, `the prompt has ${n} tokens`);
    assert.equal(first.queries, n);
    assert.equal(first.hits, 0, 'nothing is cached before the first request');

    const second = await counted('cached', () => generate('cached', prompt));
    assert.equal(second.queries, n);
    assert.equal(second.hits, n - 1, 'the second request reuses all of its prompt but the last token');
    assert.equal(second.result.text, first.result.text);

    const plain = await counted('uncached', () => generate('uncached', prompt));
    assert.equal(plain.hits, 0);
    const again = await counted('uncached', () => generate('uncached', prompt));
    assert.equal(again.hits, 0, 'enable_prefix_caching false reuses nothing');
    assert.equal(plain.result.text, first.result.text);
    assert.equal(again.result.text, first.result.text);

    // A longer prompt starting with the first one (a conversation's next turn) reuses the shared part.
    const longer = `${prompt} and then the quiet machine`;
    const extended = await counted('cached', () => generate('cached', longer));
    assert.ok(extended.hits >= n - 2, `${extended.hits} of ${n} shared tokens reused`);
    assert.ok(extended.hits < extended.result.promptTokens);
    assert.equal(extended.result.text, (await generate('uncached', longer)).text);

    // The /metrics port exports them under vLLM's names (its scrapes are cached for a moment).
    const hits = await metric('vllm:prefix_cache_hits_total', 'cached');
    await waitFor(async () => {
      const text = await (await fetch(`http://127.0.0.1:${server.running.metrics!.port}/metrics`)).text();
      const line = (name: string) =>
        text.split('\n').find((l) => l.startsWith(`${name}{model="cached",version="1"}`));
      return (
        line('vllm:prefix_cache_hits_total') ===
          `vllm:prefix_cache_hits_total{model="cached",version="1"} ${hits}` &&
        line('vllm:prefix_cache_queries_total') !== undefined
      );
    });
  });

  it('gives two different prompts interleaved their own sequences and texts', async () => {
    const a = longPrompt('alpha', 40);
    const b = longPrompt('bravo', 44);
    const expected = { a: (await generate('uncached', a)).text, b: (await generate('uncached', b)).text };
    assert.notEqual(expected.a, expected.b);
    // Fills the two sequences with a and b.
    const na = (await generate('cached', a)).promptTokens;
    const nb = (await generate('cached', b)).promptTokens;

    // One after the other, alternating: each finds the sequence that holds its prompt.
    for (const [prompt, n, text] of [
      [a, na, expected.a],
      [b, nb, expected.b],
      [a, na, expected.a],
      [b, nb, expected.b],
    ] as const) {
      const r = await counted('cached', () => generate('cached', prompt));
      assert.equal(r.hits, n - 1, `${prompt.slice(0, 5)} reused its own sequence`);
      assert.equal(r.result.text, text);
    }

    // At once, streamed and not: both sequences in use by one request each, every text its own.
    const together = await counted('cached', () =>
      Promise.all([
        generate('cached', a),
        generate('cached', b),
        generate('cached', a),
        generate('cached', b),
      ]),
    );
    assert.deepEqual(
      together.result.map((r) => r.text),
      [expected.a, expected.b, expected.a, expected.b],
    );
    assert.equal(together.queries, 2 * (na + nb));
    await waitFor(async () => (await metric('vllm:num_requests_running', 'cached')) === 0);
  });

  it('gives a cancelled stream its sequence back, and a later request the right text', async () => {
    const prompt = longPrompt('cancel', 30);
    const expected = (await generate('uncached', prompt, 16)).text;
    const abort = new AbortController();
    const res = await fetch(`${server.url}/v2/models/single/generate_stream`, {
      method: 'POST',
      body: JSON.stringify({
        text_input: prompt,
        stream: true,
        exclude_input_in_output: true,
        sampling_parameters: JSON.stringify({ temperature: 0, max_tokens: 800, ignore_eos: true }),
      }),
      signal: abort.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    await reader.read(); // the first piece: the request holds the model's one sequence
    abort.abort();
    await waitFor(async () => (await metric('vllm:num_requests_running', 'single')) === 0);
    // The cancelled request's tokens stayed: the same prompt reuses them and gives the usual text.
    const after = await counted('single', () => generate('single', prompt, 16));
    assert.equal(after.hits, after.result.promptTokens - 1);
    assert.equal(after.result.text, expected);
    // Another prompt on the same (only) sequence: only the few tokens both start with (BOS) stay, the rest
    // is erased, and the text is its own.
    const other = longPrompt('zulu', 25);
    const otherText = await counted('single', () => generate('single', other, 16));
    assert.ok(otherText.hits <= 3, `${otherText.hits} tokens reused from an unrelated prompt`);
    assert.equal(otherText.result.text, (await generate('uncached', other, 16)).text);
  });

  it("reuses a sliding-window model's prefix while its window is still cached, and starts over when not", async () => {
    const prompt = longPrompt('window', 120);
    const expected = (await generate('swa_uncached', prompt)).text;
    const first = await counted('swa', () => generate('swa', prompt));
    const n = first.result.promptTokens;
    assert.ok(n > 600, `the prompt has ${n} tokens, more than the 256 cells the window's cache keeps`);
    assert.equal(first.hits, 0);
    assert.equal(first.result.text, expected);

    // The same prompt again: its last tokens' window is still in the cache, so all but the last is reused.
    const again = await counted('swa', () => generate('swa', prompt));
    assert.equal(again.hits, n - 1, 'the repeated prompt reuses the cached sequence');
    assert.equal(again.result.text, expected);

    // A prompt sharing only the first ~200 tokens: the cache no longer holds the positions before where it
    // parts (the window's cells moved on), so the sequence starts over: nothing reused, its own text. A
    // llama model without a window would reuse the shared part here.
    const early = `${longPrompt('window', 30)} green river of stone and the machine`;
    const parted = await counted('swa', () => generate('swa', early));
    assert.ok(parted.result.promptTokens > 100);
    assert.equal(parted.hits, 0, 'a prefix whose window left the cache is not reused');
    assert.equal(parted.result.text, (await generate('swa_uncached', early)).text);
    const control = await counted('cached', async () => {
      await generate('cached', prompt);
      return generate('cached', early);
    });
    assert.ok(control.hits >= 100, `the llama model reuses the shared ${control.hits} tokens`);
  });
});
