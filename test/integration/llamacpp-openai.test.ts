// The OpenAI API on a real GGUF model through the real `openai` npm client (docs/openai.md): JSON schema
// output that parses and validates, log probs present and <= 0 (streamed the same as not), a tool call
// round trip, chat through the GGUF's own chat template (read by the llamacpp backend), embeddings of a
// GGUF embedding model (right width, the same vector for the same text), and 400s for what the bundled
// toy_llm cannot honour. Models: the tiny GGUFs of scripts/setup-llm-models.sh.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { makeRepository, removeRepository, ROOT, startServer, type TestServer } from './harness.js';

const MODELS = path.join(ROOT, '.cache/llm-models/current');
const SETTINGS = JSON.stringify({ context_size: 1536, parallel_sequences: 2, threads: 1, batch_size: 128 });
const EMBED_CONFIG = `backend: "llamacpp"
max_batch_size: 0
input [{ name: "text_input" data_type: TYPE_STRING dims: [1] }]
output [{ name: "embedding" data_type: TYPE_FP32 dims: [-1] }, { name: "num_input_tokens" data_type: TYPE_UINT32 dims: [1] }]
`;
const SCHEMA = {
  type: 'object',
  properties: { colour: { enum: ['blue', 'green'] }, ok: { type: 'boolean' } },
  required: ['colour', 'ok'],
};
const TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] },
  },
};
const ASK = [{ role: 'user' as const, content: 'What time is it?' }];

describe('OpenAI API on a llamacpp model with the openai npm client', () => {
  let repo: string;
  let server: TestServer;
  let client: OpenAI;

  before(async () => {
    const file = (name: string): Buffer => {
      const p = path.join(MODELS, name);
      assert.ok(existsSync(p), `${p} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)`);
      return readFileSync(p);
    };
    const model = (gguf: string, config = 'backend: "llamacpp"\n') => ({
      config,
      files: { '1/model.gguf': file(gguf), '1/model.json': SETTINGS },
    });
    const chat = model('tiny-llama-chat.gguf');
    repo = makeRepository({
      tiny: model('tiny-llama.gguf'),
      tiny_chat: chat,
      tiny_embed: model('tiny-embed.gguf', EMBED_CONFIG),
      // The same GGUF under another file name, and with a template file of the folder's own.
      tiny_chat_named: {
        config: 'backend: "llamacpp"\ndefault_model_filename: "chat.gguf"\n',
        files: { '1/chat.gguf': chat.files['1/model.gguf'], '1/model.json': SETTINGS },
      },
      tiny_chat_file: {
        ...chat,
        files: { ...chat.files, 'chat_template.jinja': 'X:{{ messages[0].content }}' },
      },
    });
    server = await startServer([`--model-repository=${repo}`]);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it('answers JSON that parses and matches the schema', async () => {
    const r = await client.chat.completions.create({
      model: 'tiny',
      messages: ASK,
      max_tokens: 60,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'thing', schema: SCHEMA } },
    });
    const doc = JSON.parse(r.choices[0].message.content ?? '') as { colour: string; ok: unknown };
    assert.deepEqual(Object.keys(doc).sort(), ['colour', 'ok']);
    assert.ok(['blue', 'green'].includes(doc.colour));
    assert.equal(typeof doc.ok, 'boolean');
    assert.equal(r.choices[0].finish_reason, 'stop');
  });

  it('gives log probs <= 0 for every token, the same streamed', async () => {
    const body = {
      model: 'tiny',
      messages: ASK,
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
    };
    const r = await client.chat.completions.create(body);
    const content = r.choices[0].logprobs?.content ?? [];
    assert.equal(content.length, 6);
    assert.ok(content.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2));
    assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
    const streamed: number[] = [];
    for await (const c of await client.chat.completions.create({ ...body, stream: true })) {
      for (const t of c.choices[0]?.logprobs?.content ?? []) streamed.push(t.logprob);
    }
    assert.deepEqual(
      streamed.map((v) => v.toFixed(4)),
      content.map((t) => t.logprob.toFixed(4)),
    );
  });

  it("chats through the chat template in the GGUF's metadata; a template file in the folder wins", async () => {
    const greedy = { max_tokens: 6, temperature: 0 } as const;
    const prompted = async (model: string, prompt: string) => {
      const r = await client.completions.create({ model, prompt, ...greedy });
      return { text: r.choices[0].text, tokens: r.usage?.prompt_tokens };
    };
    const chatted = async (model: string) => {
      const r = await client.chat.completions.create({ model, messages: ASK, ...greedy });
      return { text: r.choices[0].message.content, tokens: r.usage?.prompt_tokens };
    };
    // scripts/setup-llm-models.sh's template, with the GGUF's BOS text.
    const byHand = await prompted('tiny_chat', '<s><|user|>What time is it?\n<|assistant|>');
    const fallback = await prompted('tiny_chat', 'user: What time is it?\nassistant:');
    assert.notEqual(byHand.tokens, fallback.tokens);
    assert.deepEqual(await chatted('tiny_chat'), byHand);
    assert.deepEqual(await chatted('tiny_chat_named'), byHand);
    assert.deepEqual(await chatted('tiny_chat_file'), await prompted('tiny_chat_file', 'X:What time is it?'));
    // The GGUF without a template chats through the fallback.
    assert.deepEqual(await chatted('tiny'), await prompted('tiny', 'user: What time is it?\nassistant:'));
  });

  it('calls a named tool and takes its result back through the chat template', async () => {
    const first = await client.chat.completions.create({
      model: 'tiny_chat',
      messages: ASK,
      tools: [TOOL],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      max_tokens: 120,
      temperature: 0,
    });
    const call = first.choices[0].message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.ok(['UTC', 'CET'].includes((JSON.parse(call.function.arguments) as { zone: string }).zone));
    const history = (result: string): OpenAI.ChatCompletionMessageParam[] => [
      ...ASK,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: result },
    ];
    const short = await client.chat.completions.create({
      model: 'tiny_chat',
      messages: history('9'),
      max_tokens: 2,
    });
    const long = await client.chat.completions.create({
      model: 'tiny_chat',
      messages: history('nine o clock'),
      max_tokens: 2,
    });
    // The tool's result is in the prompt: 11 more characters, each a token of the tiny vocabulary or a word.
    assert.ok(short.usage !== undefined && long.usage !== undefined);
    assert.ok(long.usage.prompt_tokens > short.usage.prompt_tokens);
  });

  it('embeds with a GGUF embedding model: its width, the same vector for the same text', async () => {
    const r = await client.embeddings.create({
      model: 'tiny_embed',
      input: ['the river', 'a stone', 'the river'],
    });
    assert.deepEqual(
      r.data.map((d) => d.embedding.length),
      [64, 64, 64],
    );
    assert.deepEqual(r.data[0].embedding, r.data[2].embedding);
    assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
  });

  it('refuses logprobs from an embedding model and tools on completions with 400', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'tiny_embed', messages: ASK, logprobs: true }),
      (e: unknown) => e instanceof OpenAI.BadRequestError,
    );
    await assert.rejects(
      client.completions.create({ model: 'tiny', prompt: 'a', tools: [TOOL] } as never),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /chat option/.test(e.message),
    );
  });
});
