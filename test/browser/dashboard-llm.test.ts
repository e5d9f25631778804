// The dashboard's LLM columns in a real headless browser (Debian's chromium through playwright-core)
// against a real server process (docs/dashboard.md): a llamacpp model on the tiny GGUF of
// scripts/setup-llm-models.sh and the bundled toy_llm, both streaming through generate_stream, show
// tokens/s and the p50/p99 time to first token (vLLM's vllm:generation_tokens_total and
// vllm:time_to_first_token_seconds, which both export); a model that is not an LLM shows '–' in those
// columns. The TTFT the page shows is checked against the histogram the server exports, read the way
// Prometheus's histogram_quantile() reads it; nothing asserts on how long anything took.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { EXAMPLES, makeRepository, removeRepository, request } from '../integration/harness.js';
import { LLAMACPP_CONFIG, TINY_GGUF } from '../integration/llamacpp-support.js';
import { spawnServer, type SpawnedServer } from '../integration/spawned-server.js';
import { openDashboard, setupBrowser } from './browser.testkit.js';

const setup = setupBrowser();
const WAIT = { timeout: 120_000 };
const LLMS = ['tiny_llama', 'toy_llm'];
const TTFT_HEADS = ['tokens/s', 'TTFT p50 ms', 'TTFT p99 ms'];

async function until(
  what: string,
  check: () => Promise<boolean>,
  shown?: () => Promise<string>,
): Promise<void> {
  const end = Date.now() + WAIT.timeout;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`gave up waiting for ${what}${shown ? `: ${await shown()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The models table's cells of one model's row, by column heading, from one read of the table's text. */
async function cellsOf(page: Page, model: string): Promise<Record<string, string>> {
  const lines = (await page.locator('#models-table').innerText()).split('\n').map((l) => l.split('\t'));
  const heads = (lines[0] ?? []).map((h) => h.trim().replace(/ [▲▼]$/, ''));
  const cells = lines.find((l) => l[0]?.trim() === model) ?? [];
  return Object.fromEntries(heads.map((h, i) => [h, (cells[i] ?? '').trim()]));
}

const num = (text: string | undefined): number => (text === undefined || text === '–' ? NaN : Number(text));

/** One generate_stream request, read to its end; the events' count (one per token for these models). */
async function stream(server: SpawnedServer, model: string, prompt: string): Promise<number> {
  const r = await request(`${server.url}/v2/models/${model}/generate_stream`, {
    body: JSON.stringify({
      text_input: prompt,
      stream: true,
      exclude_input_in_output: true,
      sampling_parameters: JSON.stringify({ temperature: 0, max_tokens: 8 }),
    }),
  });
  assert.equal(r.status, 200, r.body.toString());
  const events = r.body
    .toString()
    .split('\n')
    .filter((l) => l.startsWith('data:'));
  assert.ok(
    events.every((e) => !e.includes('"error"')),
    r.body.toString(),
  );
  return events.length;
}

/** The TTFT histogram of one model from the metrics text: cumulative counts by bound (seconds). */
async function ttftBuckets(server: SpawnedServer, model: string): Promise<Map<number, number>> {
  const text = (await request(`${server.url}/dashboard/api/metrics`)).body.toString();
  const out = new Map<number, number>();
  const re = /^vllm:time_to_first_token_seconds_bucket\{([^}]*)\} (\S+)$/gm;
  for (const m of text.matchAll(re)) {
    if (!m[1].includes(`model="${model}"`)) continue;
    const le = /le="([^"]+)"/.exec(m[1])?.[1];
    out.set(le === '+Inf' ? Infinity : Number(le), Number(m[2]));
  }
  return out;
}

describe('the dashboard: tokens/s and time to first token of LLM models', { skip: setup.skip }, () => {
  let repo: string;
  let server: SpawnedServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(existsSync(TINY_GGUF), `${TINY_GGUF} is missing: scripts/setup-llm-models.sh writes it`);
    repo = makeRepository({
      tiny_llama: {
        config: LLAMACPP_CONFIG,
        files: {
          '1/model.gguf': readFileSync(TINY_GGUF),
          // One thread: the test machines are small and busy, and llama.cpp's threads wait on each other.
          '1/model.json': JSON.stringify({
            threads: 1,
            batch_size: 128,
            context_size: 256,
            parallel_sequences: 2,
          }),
        },
      },
    });
    cpSync(path.join(EXAMPLES, 'toy_llm'), path.join(repo, 'toy_llm'), { recursive: true });
    cpSync(path.join(EXAMPLES, 'identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
    server = await spawnServer([
      `--model-repository=${repo}`,
      '--allow-metrics=true',
      '--metrics-port=0',
      '--metrics-address=127.0.0.1',
    ]);
    browser = await setup.launch();
    page = await openDashboard(browser, server.url, { width: 1600, errors: pageErrors, ...WAIT });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it('shows tokens/s and TTFT p50/p99 for the LLMs after streaming requests, and – for a model that is not one', async () => {
    for (const model of LLMS) {
      for (const prompt of ['the machine is', 'hello there', 'what is learning']) {
        assert.ok((await stream(server, model, prompt)) > 1, `${model} streamed one event or none`);
      }
    }
    const identity = await request(`${server.url}/v2/models/identity_fp32/infer`, {
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] }),
    });
    assert.equal(identity.status, 200, identity.body.toString());

    // Three first tokens in each model's histogram, which the page reads on its next polls.
    for (const model of LLMS) {
      const b = await ttftBuckets(server, model);
      assert.equal(b.get(Infinity), 3, `${model}: ${JSON.stringify([...b])}`);
    }
    // Streams keep coming while the page is watched, so its 30 s window holds tokens whenever it polls.
    let stopped = false;
    const loops = LLMS.map(async (model) => {
      while (!stopped) await stream(server, model, 'the machine is');
    });
    try {
      await until(
        'both LLMs to show tokens/s and TTFT',
        async () => {
          const rows = await Promise.all(LLMS.map((m) => cellsOf(page, m)));
          return rows.every(
            (c) => num(c['tokens/s']) > 0 && num(c['TTFT p50 ms']) > 0 && num(c['TTFT p99 ms']) > 0,
          );
        },
        async () => page.locator('#models-table').innerText(),
      );
    } finally {
      stopped = true;
      await Promise.all(loops);
    }
    for (const model of LLMS) {
      const c = await cellsOf(page, model);
      assert.ok(num(c['TTFT p50 ms']) <= num(c['TTFT p99 ms']), `${model}: ${JSON.stringify(c)}`);
      // Every first token is at most the smallest bound that counts all of them, so any quantile is too
      // (whichever of the requests the page's 30 s window holds).
      const b = await ttftBuckets(server, model);
      const all = b.get(Infinity) ?? 0;
      const bound = Math.min(...[...b].filter(([, n]) => n >= all).map(([le]) => le)) * 1000;
      assert.ok(num(c['TTFT p99 ms']) <= bound + 0.1, `${model}: p99 past ${bound} ms: ${JSON.stringify(c)}`);
    }
    const other = await cellsOf(page, 'identity_fp32');
    assert.equal(other.State, 'READY', JSON.stringify(other));
    for (const head of TTFT_HEADS)
      assert.equal(other[head], '–', `identity_fp32 ${head}: ${JSON.stringify(other)}`);
    assert.deepEqual(pageErrors, []);
  });
});
