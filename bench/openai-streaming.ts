/**
 * Streaming cost of the OpenAI-compatible API: time to first token (TTFT) and tokens/s for the bundled
 * toy_llm over POST /v1/chat/completions (SSE) vs POST /v2/models/toy_llm/generate_stream (SSE) vs gRPC
 * ModelStreamInfer, at 1 and 16 concurrent streams. The same prompt and max_tokens for all three, so the
 * model does the same work; the difference is the frontend. Each stream runs requests back to back for
 * BENCH_POINT_SECONDS (default 5); TTFT is the median over requests, tokens/s the total over the point.
 *   node dist/bench/openai-streaming.js
 */
import { performance } from 'node:perf_hooks';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseFlags, startNereid, Logger } from '../src/index.js';
import { GrpcClient, InferInput } from '../src/client/index.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const TOKENS = Number(process.env.BENCH_TOKENS ?? 64);
const SECONDS = Number(process.env.BENCH_POINT_SECONDS ?? 5);
const PROMPT = 'What is machine learning?';
const SAMPLING = JSON.stringify({ max_tokens: TOKENS, ignore_eos: true });

interface One {
  ttftMs: number;
  tokens: number;
}

/** Reads an SSE body, calling `onEvent` per `data:` line; resolves at the end of the body. */
async function readSse(res: Response, onEvent: (data: string) => void): Promise<void> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev.startsWith('data: ')) onEvent(ev.slice(6));
    }
  }
}

async function viaOpenAi(url: string): Promise<One> {
  const t0 = performance.now();
  let ttft = -1;
  let tokens = 0;
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model: 'toy_llm',
      stream: true,
      max_tokens: TOKENS,
      ignore_eos: true,
      messages: [{ role: 'user', content: PROMPT }],
    }),
  });
  await readSse(res, (data) => {
    if (data === '[DONE]') return;
    const c = (JSON.parse(data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content;
    if (c) {
      if (ttft < 0) ttft = performance.now() - t0;
      tokens++;
    }
  });
  return { ttftMs: ttft, tokens };
}

async function viaGenerateStream(url: string, prompt: string): Promise<One> {
  const t0 = performance.now();
  let ttft = -1;
  let tokens = 0;
  const res = await fetch(`${url}/v2/models/toy_llm/generate_stream`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text_input: prompt, stream: true, sampling_parameters: SAMPLING }),
  });
  await readSse(res, (data) => {
    if ((JSON.parse(data) as { text_output?: string }).text_output !== undefined) {
      if (ttft < 0) ttft = performance.now() - t0;
      tokens++;
    }
  });
  return { ttftMs: ttft, tokens };
}

async function viaGrpc(client: GrpcClient, prompt: string): Promise<One> {
  const t0 = performance.now();
  let ttft = -1;
  let tokens = 0;
  const stream = client.streamInfer();
  stream.send({
    model: 'toy_llm',
    inputs: [
      new InferInput('text_input', [1], 'BYTES').setData([prompt]),
      new InferInput('stream', [1], 'BOOL').setData([true]),
      new InferInput('sampling_parameters', [1], 'BYTES').setData([SAMPLING]),
    ],
    enableEmptyFinalResponse: true,
  });
  for await (const r of stream) {
    if (r.error) throw r.error;
    if (r.result.outputs.some((o) => o.name === 'text_output')) {
      if (ttft < 0) ttft = performance.now() - t0;
      tokens++;
    }
    if (r.result.final) break;
  }
  stream.end();
  return { ttftMs: ttft, tokens };
}

async function point(streams: number, run: () => Promise<One>): Promise<{ ttft: number; tps: number }> {
  const ttfts: number[] = [];
  let tokens = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: streams }, async () => {
      while (performance.now() < end) {
        const r = await run();
        ttfts.push(r.ttftMs);
        tokens += r.tokens;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  ttfts.sort((a, b) => a - b);
  return { ttft: ttfts[Math.floor(ttfts.length / 2)], tps: tokens / elapsed };
}

async function main(): Promise<void> {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-openai-'));
  cpSync(path.join(ROOT, 'examples/model_repository/toy_llm'), path.join(repo, 'toy_llm'), {
    recursive: true,
  });
  const { options } = parseFlags([
    `--model-repository=${repo}`,
    '--http-port=0',
    '--http-address=127.0.0.1',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--allow-metrics=false',
  ]);
  const running = await startNereid(options, new Logger({ logInfo: false }, () => {}));
  const url = `http://127.0.0.1:${running.http!.port}`;
  const grpc = new GrpcClient(`127.0.0.1:${running.grpc!.port}`);
  // The chat template turns the message into this prompt; generate_stream and gRPC get the same text,
  // so the model picks the same reply and does the same work.
  const prompt = `<|user|>\n${PROMPT}\n<|assistant|>\n`;
  const modes: [string, () => Promise<One>][] = [
    ['/v1/chat/completions (SSE)', () => viaOpenAi(url)],
    ['generate_stream (SSE)', () => viaGenerateStream(url, prompt)],
    ['gRPC ModelStreamInfer', () => viaGrpc(grpc, prompt)],
  ];
  for (const [, run] of modes) await point(1, run); // warm-up
  console.log(`toy_llm, ${TOKENS} tokens per request, ${SECONDS} s per point\n`);
  console.log('| streams | path | TTFT p50 (ms) | tokens/s |');
  console.log('| --- | --- | --- | --- |');
  for (const streams of [1, 16]) {
    for (const [name, run] of modes) {
      const r = await point(streams, run);
      console.log(`| ${streams} | ${name} | ${r.ttft.toFixed(2)} | ${r.tps.toFixed(0)} |`);
    }
  }
  grpc.close();
  await running.stop();
  rmSync(repo, { recursive: true, force: true });
}

await main();
