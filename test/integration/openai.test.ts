// The OpenAI-compatible API (/v1) as the real `openai` npm package sees it, on a real server with the
// bundled toy_llm: listing, completions and chat (streamed and not, compared with each other), stop
// sequences, errors, cancellation reaching the model, concurrent streams; then the port flags, the
// restricted-API category and the bound on what a slow SSE reader may hold.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { EXAMPLES, removeRepository, startServer, waitFor, type TestServer } from './harness.js';

const MODEL = 'toy_llm';
const HOSTILE = 'toy_llm_hostile_template';
const MESSAGES = [{ role: 'user' as const, content: 'What is machine learning?' }];

/** A repository with toy_llm and, under `hostile`, toy_llm again with a chat template that never ends well. */
function repoWithToyLlm(): string {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-openai-'));
  cpSync(path.join(EXAMPLES, MODEL), path.join(repo, MODEL), { recursive: true });
  const hostile = path.join(repo, HOSTILE);
  cpSync(path.join(EXAMPLES, MODEL), hostile, { recursive: true });
  const config = path.join(hostile, 'config.pbtxt');
  writeFileSync(config, readFileSync(config, 'utf8').replace(`name: "${MODEL}"`, `name: "${HOSTILE}"`));
  // Ten billion loop turns: would hold the event loop for hours if it rendered on the main thread.
  writeFileSync(
    path.join(hostile, 'chat_template.jinja'),
    '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
  );
  return repo;
}

async function cancelledCount(server: TestServer): Promise<number> {
  const port = server.running.metrics!.port;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = /^toy_llm_cancelled_requests_total\{model="toy_llm"\} (\S+)$/m.exec(text);
  return m === null ? 0 : Number(m[1]);
}

describe('OpenAI API with the openai npm client', () => {
  let repo: string;
  let server: TestServer;
  let client: OpenAI;

  before(async () => {
    repo = repoWithToyLlm();
    server = await startServer([`--model-repository=${repo}`]);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server.stop();
    removeRepository(repo);
  });

  it('lists and retrieves models; an unknown one is a NotFoundError', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes(MODEL));
    assert.equal((await client.models.retrieve(MODEL)).id, MODEL);
    await assert.rejects(client.models.retrieve('nope'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  it('streamed chat equals the non-streamed answer, role first, one finish_reason', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 64 });
    const content = whole.choices[0].message.content;
    assert.ok(content !== null && content !== '');
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: MESSAGES,
      max_tokens: 64,
      stream: true,
    });
    const pieces: string[] = [];
    const finishes: string[] = [];
    let role: string | undefined;
    for await (const chunk of stream) {
      role ??= chunk.choices[0]?.delta.role;
      const c = chunk.choices[0]?.delta.content;
      if (c) pieces.push(c);
      const f = chunk.choices[0]?.finish_reason;
      if (f) finishes.push(f);
    }
    assert.equal(role, 'assistant');
    assert.ok(pieces.length > 1);
    assert.equal(pieces.join(''), content);
    assert.deepEqual(finishes, [whole.choices[0].finish_reason]);
  });

  it('completions honour stop sequences, streamed and not', async () => {
    const prompt = 'Tell me about foxes';
    const full = (await client.completions.create({ model: MODEL, prompt, max_tokens: 64 })).choices[0].text;
    const stop = full.split(' ')[2]; // a word the answer does contain
    const expected = full.slice(0, full.indexOf(stop));
    const plain = await client.completions.create({ model: MODEL, prompt, max_tokens: 64, stop });
    assert.equal(plain.choices[0].text, expected);
    const stream = await client.completions.create({
      model: MODEL,
      prompt,
      max_tokens: 64,
      stop,
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.text ?? '';
    assert.equal(text, expected);
  });

  it('a chat template that runs away fails its request only', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: HOSTILE, messages: MESSAGES, max_tokens: 4 }),
      (e: unknown) =>
        e instanceof OpenAI.InternalServerError &&
        e.message.includes(`model '${HOSTILE}'`) &&
        e.message.includes('ran for more than 2000 ms and was stopped'),
    );
    const after = await client.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 4 });
    assert.ok(after.choices[0].message.content);
  });

  it('a bad request is a BadRequestError naming the parameter', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages: MESSAGES, temperature: 9 }),
      (e: unknown) =>
        e instanceof OpenAI.BadRequestError && (e.error as { param?: string }).param === 'temperature',
    );
    await assert.rejects(
      client.chat.completions.create({ model: 'nope', messages: MESSAGES }),
      (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
    );
  });

  it('aborting a stream mid-way cancels the model work', async () => {
    const before = await cancelledCount(server);
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      {
        model: MODEL,
        messages: MESSAGES,
        max_tokens: 100_000,
        stream: true,
        // toy_llm's own sampling parameters: keep going, one word per 20 ms
        ...({ ignore_eos: true, delay_ms: 20 } as object),
      },
      { signal: controller.signal },
    );
    let seen = 0;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) seen++;
        if (seen === 3) {
          controller.abort();
          // Chunks that arrived in the same read as the third are still yielded after the abort: stop here.
          break;
        }
      }
    } catch {
      // the client reports the abort (or just ends the iteration): either way the connection is gone
    }
    assert.equal(seen, 3);
    await waitFor(async () => (await cancelledCount(server)) >= before + 1, 60_000);
  });

  it('serves many concurrent streams, each the same as its non-streamed answer', async () => {
    const prompts = Array.from({ length: 24 }, (_, i) => `Question ${i}?`);
    await Promise.all(
      prompts.map(async (prompt) => {
        const whole = await client.completions.create({ model: MODEL, prompt, max_tokens: 20 });
        const stream = await client.completions.create({
          model: MODEL,
          prompt,
          max_tokens: 20,
          stream: true,
        });
        let text = '';
        for await (const c of stream) text += c.choices[0]?.text ?? '';
        assert.equal(text, whole.choices[0].text);
      }),
    );
  });

  it('a reader that stops reading is cut off at the buffer bound and its request cancelled', async () => {
    // A second server with a tiny bound; the client never reads, so the bound is reached once the
    // kernel's socket buffers are full, whatever the machine's speed.
    const small = await startServer([`--model-repository=${repo}`, '--openai-max-buffered-bytes=1024']);
    try {
      const before = await cancelledCount(small);
      const body = JSON.stringify({
        model: MODEL,
        prompt: 'go',
        max_tokens: 100_000_000,
        stream: true,
        ignore_eos: true,
      });
      const req = http.request(`${small.url}/v1/completions`, { method: 'POST' });
      req.on('response', (res) => res.pause()); // never read
      req.on('error', () => {});
      req.end(body);
      await waitFor(async () => (await cancelledCount(small)) >= before + 1, 120_000);
      req.destroy();
    } finally {
      await small.stop();
    }
  });
});

describe('OpenAI API placement and restriction flags', () => {
  let repo: string;
  before(() => {
    repo = repoWithToyLlm();
  });
  after(() => removeRepository(repo));

  it('--openai-port serves /v1 on its own port and not on the HTTP port', async () => {
    const server = await startServer([`--model-repository=${repo}`, '--openai-port=0']);
    try {
      const own = server.running.openai!;
      const res = await fetch(`http://127.0.0.1:${own.port}/v1/models`);
      assert.equal(res.status, 200);
      const onHttp = await fetch(`${server.url}/v1/models`);
      assert.equal(onHttp.status, 404);
      assert.ok(server.logs.some((l) => l.includes('Started OpenAI-compatible service')));
    } finally {
      await server.stop();
    }
  });

  it('--allow-openai=false switches it off', async () => {
    const server = await startServer([`--model-repository=${repo}`, '--allow-openai=false']);
    try {
      assert.equal((await fetch(`${server.url}/v1/models`)).status, 404);
      assert.equal(server.running.openai, undefined);
    } finally {
      await server.stop();
    }
  });

  it("the restricted-API category 'openai' needs its header; other categories stay open", async () => {
    const server = await startServer([
      `--model-repository=${repo}`,
      '--http-restricted-api=openai:api-key=s3cret',
    ]);
    try {
      const refused = await fetch(`${server.url}/v1/models`);
      assert.equal(refused.status, 403);
      const body = (await refused.json()) as { error: { message: string } };
      assert.match(body.error.message, /expecting header 'api-key'/);
      const ok = await fetch(`${server.url}/v1/models`, { headers: { 'api-key': 's3cret' } });
      assert.equal(ok.status, 200);
      assert.equal((await fetch(`${server.url}/v2/health/ready`)).status, 200);
    } finally {
      await server.stop();
    }
  });
});
