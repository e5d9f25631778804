// What a llamacpp model's failures do to the rest of the server, triggered for real with the tiny GGUF
// (scripts/setup-llm-models.sh): a GGUF whose tensor data is corrupt past a sound header (every weight
// NaN) loads and generates without taking the server down; a generation cut off mid-stream (an unload
// that outlasts --model-unload-timeout-secs fails the model's open requests) ends that stream with an
// error naming the cause while the other models keep serving, and the model loads again afterwards.
// llama.cpp runs inside the server's process, so a native abort in it would end the process: docs/llm.md
// says so; nothing here can trigger one.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, startServer, type TestServer } from './harness.js';
import { LLAMACPP_CONFIG as CONFIG, TINY_GGUF as TINY } from './llamacpp-support.js';

interface Reply {
  text_output?: string;
  num_output_tokens?: number;
  error?: string;
}

describe('llamacpp failures stay with their model', () => {
  let repo: string;
  let server: TestServer;

  before(async () => {
    assert.ok(existsSync(TINY), `${TINY} is missing: scripts/setup-llm-models.sh writes it`);
    const gguf = readFileSync(TINY);
    // The header (metadata and tensor descriptions) is the first few KB; the second half is weights only.
    const nan = Buffer.from(gguf);
    nan.fill(0xff, gguf.length >> 1);
    const settings = (extra: Record<string, number>) =>
      JSON.stringify({ threads: 1, context_size: 2048, batch_size: 128, ...extra });
    repo = makeRepository({
      tiny: {
        config: CONFIG,
        files: { '1/model.gguf': gguf, '1/model.json': settings({ parallel_sequences: 2 }) },
      },
      nan: {
        config: CONFIG,
        files: { '1/model.gguf': nan, '1/model.json': settings({ parallel_sequences: 1 }) },
      },
      long: {
        config: CONFIG,
        files: { '1/model.gguf': gguf, '1/model.json': settings({ parallel_sequences: 1 }) },
      },
    });
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=tiny',
      '--load-model=nan',
      '--load-model=long',
      '--model-unload-timeout-secs=1',
    ]);
  });
  after(async () => {
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  const generate = async (model: string, maxTokens: number) => {
    const res = await post(`${server.url}/v2/models/${model}/generate`, {
      text_input: 'the quiet river',
      exclude_input_in_output: true,
      return_num_output_tokens: true,
      sampling_parameters: JSON.stringify({ temperature: 0, max_tokens: maxTokens }),
    });
    return { status: res.status, reply: res.json<Reply>() };
  };

  it('serves a GGUF with NaN weights past a sound header without harm to the server', async () => {
    // llama.cpp does not checksum tensor data: the load succeeds and every step picks a token from NaN
    // logits. The request is answered in full and the server and its other models go on.
    const bad = await generate('nan', 8);
    assert.equal(bad.status, 200, JSON.stringify(bad.reply));
    assert.equal(bad.reply.num_output_tokens, 8);
    const good = await generate('tiny', 8);
    assert.equal(good.status, 200);
    assert.notEqual(good.reply.text_output, bad.reply.text_output);
    assert.equal((await generate('nan', 4)).status, 200, 'the damaged model answers again');
  });

  it('ends a stream cut off mid-generation with an error naming why; other models keep serving', async () => {
    const abort = new AbortController();
    const res = await fetch(`${server.url}/v2/models/long/generate_stream`, {
      method: 'POST',
      signal: abort.signal,
      body: JSON.stringify({
        text_input: 'the light',
        stream: true,
        exclude_input_in_output: true,
        // Seconds of work: far longer than the unload timeout.
        sampling_parameters: JSON.stringify({ max_tokens: 2000, ignore_eos: true }),
      }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (done: (t: string) => boolean): Promise<void> => {
      while (!done(text)) {
        const chunk = (await reader.read()) as { done: boolean; value?: Uint8Array };
        if (chunk.done || chunk.value === undefined) return;
        text += decoder.decode(chunk.value, { stream: true });
      }
    };
    await readUntil((t) => t.includes('text_output'));
    const unload = await post(`${server.url}/v2/repository/models/long/unload`, {});
    assert.equal(unload.status, 200, unload.body.toString());
    await readUntil(() => false);
    const events = text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as Reply);
    const last = events.at(-1);
    assert.match(
      last?.error ?? '',
      /was unloaded and its requests did not finish within 1 s/,
      text.slice(-500),
    );
    const tokens = events.filter((e) => e.text_output !== undefined).length;
    assert.ok(tokens > 0 && tokens < 2000, `${tokens} pieces before the cut`);

    // The others never noticed; the model itself comes back on a load and generates again.
    assert.equal((await generate('tiny', 4)).status, 200);
    const gone = await generate('long', 4);
    assert.ok(gone.status === 400 || gone.status === 404 || gone.status === 503, `${gone.status}`);
    const load = await post(`${server.url}/v2/repository/models/long/load`, {});
    assert.equal(load.status, 200, load.body.toString());
    const again = await generate('long', 4);
    assert.equal(again.status, 200, JSON.stringify(again.reply));
    assert.equal(again.reply.num_output_tokens, 4);
    abort.abort();
  });
});
