/**
 * The llamacpp backend against its limit: the same GGUF model and thread count, decoded by node-llama-cpp
 * alone in this process (N sequences of one context, each generating the same number of tokens) and by
 * Nereid over POST /v1/completions with N concurrent SSE streams and over gRPC with N concurrent
 * ModelStreamInfer calls (the vLLM interface's text_input / stream / sampling_parameters, read with the
 * repository's own gRPC client, src/client), on one server with parallel_sequences = N. Prints
 * aggregate tokens/s and time to first token (p50 and p99 over every stream of every round) at each N,
 * and Nereid's share of the bare rate (prompt-prefix reuse off there: bare node-llama-cpp evaluates each
 * round's prompt anew too), and the main thread's CPU time per token on each side (the difference is what
 * Nereid and the bench's own HTTP or gRPC client spend per token on the event loop, a steadier figure
 * than tok/s on a loaded machine). Then the
 * time to first token of one long prompt asked again and again, with prefix reuse (the repeats evaluate
 * only its last token) and without (enable_prefix_caching false), beside bare node-llama-cpp evaluating
 * the whole prompt each time.
 *   node dist/bench/llm.js
 * Env: BENCH_GGUF (default: the tests' tiny model, .cache/llm-models/current/tiny-llama.gguf),
 *      BENCH_THREADS (1), BENCH_TOKENS (64), BENCH_STREAMS (1,4,8), BENCH_ROUNDS (3),
 *      BENCH_PREFIX_WORDS (250: the long prompt's words; 0 skips that part), BENCH_PREFIX_ROUNDS (5),
 *      BENCH_CLIENT (inline: the bench reads the streams on the server's event loop, so its own HTTP
 *      client's cost counts against Nereid; worker: a worker thread reads them, as another process would).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { getLlama, LlamaLogLevel, type LlamaModel } from 'node-llama-cpp';
import { GrpcClient, InferInput } from '../src/client/index.js';
import { Logger, parseFlags, startNereid } from '../src/index.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const GGUF = process.env.BENCH_GGUF ?? path.join(ROOT, '.cache/llm-models/current/tiny-llama.gguf');
const THREADS = Number(process.env.BENCH_THREADS ?? 1);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 64);
const STREAMS = (process.env.BENCH_STREAMS ?? '1,4,8').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROMPT = 'the quiet river and the machine';
const CONTEXT = 512;
const PREFIX_WORDS = Number(process.env.BENCH_PREFIX_WORDS ?? 250);
const PREFIX_ROUNDS = Number(process.env.BENCH_PREFIX_ROUNDS ?? 5);
const PREFIX_CONTEXT = 4096;
/** 'inline': the streams are read on the server's own event loop; 'worker': by a worker thread's. */
const CLIENT = process.env.BENCH_CLIENT ?? 'inline';
/** The long prompt: a system-prompt-sized text of PREFIX_WORDS words. */
const LONG_PROMPT = Array.from(
  { length: PREFIX_WORDS },
  (_, i) => ['the', 'quiet', 'river', 'and', 'machine', 'stone', 'light', 'model'][(i * 5) % 8],
).join(' ');

interface Point {
  tokensPerSecond: number;
  ttftMs: number;
  ttftP99Ms: number;
  /** The main thread's time on a CPU per token (Linux's schedstat; NaN elsewhere). */
  cpuUsPerToken: number;
}

/**
 * The main (event-loop) thread's time on a CPU so far, in microseconds: what the JavaScript of
 * node-llama-cpp, Nereid and the bench's HTTP client costs, apart from llama.cpp's own threads and from
 * the time other processes of a loaded machine hold the CPUs (which throughput counts). NaN off Linux.
 */
function mainThreadCpuUs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return Number.NaN;
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The nearest-rank percentile `p` (0-100) of `xs`. */
const percentile = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)];

/** N sequences of one context generate TOKENS tokens each, together. */
async function bare(model: LlamaModel, n: number): Promise<Point> {
  const context = await model.createContext({ contextSize: CONTEXT, sequences: n, threads: THREADS });
  const sequences = Array.from({ length: n }, () => context.getSequence());
  const rates: number[] = [];
  const ttfts: number[] = [];
  const cpu0 = mainThreadCpuUs();
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    await Promise.all(
      sequences.map(async (sequence) => {
        let count = 0;
        for await (const token of sequence.evaluate(model.tokenize(PROMPT), {
          temperature: 0,
          yieldEogToken: true,
        })) {
          void token;
          if (count === 0) ttfts.push(performance.now() - t0);
          if (++count >= TOKENS) break;
        }
        await sequence.clearHistory();
      }),
    );
    rates.push((n * TOKENS) / ((performance.now() - t0) / 1000));
  }
  const cpuUsPerToken = (mainThreadCpuUs() - cpu0) / (ROUNDS * n * TOKENS);
  await context.dispose();
  return {
    tokensPerSecond: median(rates),
    ttftMs: median(ttfts),
    ttftP99Ms: percentile(ttfts, 99),
    cpuUsPerToken,
  };
}

/** How the bench reaches Nereid: /v1/completions over HTTP, or ModelStreamInfer over gRPC. */
type Protocol = 'v1' | 'grpc';

/** Where a Nereid of the bench listens. */
interface Endpoints {
  readonly url: string;
  readonly grpc: string;
}

/** One gRPC client per thread (one HTTP/2 channel; each request its own ModelStreamInfer call). */
const grpcClients = new Map<string, GrpcClient>();

/**
 * One streamed generation over gRPC, as Triton's clients ask a vLLM model: a ModelStreamInfer call with
 * text_input, stream = true and sampling_parameters; resolves with its time to first token once the
 * final response came.
 */
async function grpcStreamOnce(address: string, model: string, t0: number, prompt: string, tokens: number) {
  let client = grpcClients.get(address);
  if (client === undefined) grpcClients.set(address, (client = new GrpcClient(address)));
  const inputs = [
    new InferInput('text_input', [1], 'BYTES').setData([prompt]),
    new InferInput('stream', [1], 'BOOL').setData([true]),
    new InferInput('exclude_input_in_output', [1], 'BOOL').setData([true]),
    new InferInput('sampling_parameters', [1], 'BYTES').setData([
      JSON.stringify({ max_tokens: tokens, temperature: 0, ignore_eos: true }),
    ]),
  ];
  const stream = client.streamInfer();
  stream.send({ model, inputs });
  stream.end();
  let ttft = -1;
  for await (const r of stream.results()) {
    if (ttft < 0 && r.outputs.length > 0) ttft = performance.now() - t0;
    if (r.final) break;
  }
  if (ttft < 0) throw new Error(`no text came back over gRPC from '${model}'`);
  return ttft;
}

/** One streamed completion; resolves with its time to first token. */
async function streamOnce(
  protocol: Protocol,
  where: Endpoints,
  model: string,
  t0: number,
  prompt = PROMPT,
  tokens = TOKENS,
): Promise<number> {
  if (protocol === 'grpc') return grpcStreamOnce(where.grpc, model, t0, prompt, tokens);
  const res = await fetch(`${where.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model,
      prompt,
      stream: true,
      max_tokens: tokens,
      temperature: 0,
      ignore_eos: true,
    }),
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let ttft = -1;
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
    if (ttft < 0) ttft = performance.now() - t0;
  }
  return ttft;
}

/** What a worker-thread client is asked: one completion, timed from `startAt` (epoch ms). */
interface Ask {
  readonly id: number;
  readonly protocol: Protocol;
  readonly where: Endpoints;
  readonly model: string;
  readonly startAt: number;
  readonly prompt: string;
  readonly tokens: number;
}

let worker: Worker | undefined;
let asked = 0;
const pending = new Map<number, (ttft: number) => void>();

/** A streamed completion read inline or by the worker thread (BENCH_CLIENT); its time to first token. */
async function completion(
  protocol: Protocol,
  where: Endpoints,
  model: string,
  t0: number,
  prompt = PROMPT,
  tokens = TOKENS,
): Promise<number> {
  if (CLIENT !== 'worker') return streamOnce(protocol, where, model, t0, prompt, tokens);
  if (worker === undefined) {
    worker = new Worker(new URL(import.meta.url));
    worker.unref();
    worker.on('message', ({ id, ttft }: { id: number; ttft: number }) => {
      pending.get(id)?.(ttft);
      pending.delete(id);
    });
  }
  const id = ++asked;
  const startAt = performance.timeOrigin + t0;
  const done = new Promise<number>((resolve) => pending.set(id, resolve));
  worker.postMessage({ id, protocol, where, model, startAt, prompt, tokens } satisfies Ask);
  return done;
}

/** The worker thread: answers each Ask with its completion's time to first token. */
function serveAsks(): void {
  parentPort!.on('message', (ask: Ask) => {
    const t0 = ask.startAt - performance.timeOrigin;
    void streamOnce(ask.protocol, ask.where, ask.model, t0, ask.prompt, ask.tokens).then((ttft) =>
      parentPort!.postMessage({ id: ask.id, ttft }),
    );
  });
}

/** Nereid with one model 'llm' of these engine settings; `use` gets its addresses. */
async function withNereid<T>(settings: object, use: (where: Endpoints) => Promise<T>): Promise<T> {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-llm-'));
  const version = path.join(repo, 'llm', '1');
  mkdirSync(version, { recursive: true });
  writeFileSync(path.join(repo, 'llm', 'config.pbtxt'), 'backend: "llamacpp"\n');
  copyFileSync(GGUF, path.join(version, 'model.gguf'));
  writeFileSync(path.join(version, 'model.json'), JSON.stringify({ threads: THREADS, ...settings }));
  const { options } = parseFlags([
    `--model-repository=${repo}`,
    '--http-port=0',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--allow-metrics=false',
  ]);
  const running = await startNereid(options, new Logger({}, () => {}));
  try {
    return await use({
      url: `http://127.0.0.1:${running.http!.port}`,
      grpc: `127.0.0.1:${running.grpc!.port}`,
    });
  } finally {
    for (const c of grpcClients.values()) c.close();
    grpcClients.clear();
    await running.stop();
    rmSync(repo, { recursive: true, force: true });
  }
}

/** N concurrent streams per round over `protocol`, ROUNDS rounds after a warm-up. */
async function rounds(protocol: Protocol, where: Endpoints, n: number): Promise<Point> {
  await completion(protocol, where, 'llm', performance.now()); // warm-up
  const rates: number[] = [];
  const ttfts: number[] = [];
  const cpu0 = mainThreadCpuUs();
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    ttfts.push(
      ...(await Promise.all(Array.from({ length: n }, () => completion(protocol, where, 'llm', t0)))),
    );
    rates.push((n * TOKENS) / ((performance.now() - t0) / 1000));
  }
  const cpuUsPerToken = (mainThreadCpuUs() - cpu0) / (ROUNDS * n * TOKENS);
  return {
    tokensPerSecond: median(rates),
    ttftMs: median(ttfts),
    ttftP99Ms: percentile(ttfts, 99),
    cpuUsPerToken,
  };
}

/** One server with N sequences: /v1 streams, then gRPC streams. */
async function viaNereid(n: number): Promise<{ v1: Point; grpc: Point }> {
  const settings = { context_size: CONTEXT, parallel_sequences: n, enable_prefix_caching: false };
  return withNereid(settings, async (where) => ({
    v1: await rounds('v1', where, n),
    grpc: await rounds('grpc', where, n),
  }));
}

/** Median time to first token of LONG_PROMPT asked PREFIX_ROUNDS times after a first time. */
async function repeatedPrompt(caching: boolean): Promise<{ promptTokens: number; ttftMs: number }> {
  const settings = { context_size: PREFIX_CONTEXT, parallel_sequences: 2, enable_prefix_caching: caching };
  return withNereid(settings, async (where) => {
    const first = await fetch(`${where.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'llm', prompt: LONG_PROMPT, max_tokens: 1, temperature: 0 }),
    });
    const promptTokens = ((await first.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    const ttfts: number[] = [];
    for (let round = 0; round < PREFIX_ROUNDS; round++) {
      ttfts.push(await completion('v1', where, 'llm', performance.now(), LONG_PROMPT, 8));
    }
    return { promptTokens, ttftMs: median(ttfts) };
  });
}

/** Bare node-llama-cpp: the median time to evaluate the whole LONG_PROMPT and sample one token. */
async function bareLongPrompt(model: LlamaModel): Promise<number> {
  const context = await model.createContext({ contextSize: PREFIX_CONTEXT, sequences: 1, threads: THREADS });
  const sequence = context.getSequence();
  const ttfts: number[] = [];
  for (let round = 0; round <= PREFIX_ROUNDS; round++) {
    const t0 = performance.now();
    for await (const token of sequence.evaluate(model.tokenize(LONG_PROMPT), { temperature: 0 })) {
      void token;
      break;
    }
    if (round > 0) ttfts.push(performance.now() - t0); // round 0 warms up
    await sequence.clearHistory();
  }
  await context.dispose();
  return median(ttfts);
}

async function main(): Promise<void> {
  console.log(
    `model ${GGUF}, ${THREADS} thread(s), ${TOKENS} tokens per stream, ${ROUNDS} rounds (median), client ${CLIENT}`,
  );
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: GGUF });
  const bareAt = new Map<number, Point>();
  await bare(model, 1); // warm-up
  for (const n of STREAMS) bareAt.set(n, await bare(model, n));
  const bareLong = PREFIX_WORDS > 0 ? await bareLongPrompt(model) : 0;
  await model.dispose();
  await llama.dispose();
  const cells = (xs: (string | number)[]) => `| ${xs.join(' | ')} |`;
  console.log(
    cells([
      'streams',
      'bare tok/s',
      '/v1 tok/s',
      'gRPC tok/s',
      '/v1 ratio',
      'gRPC ratio',
      'bare TTFT p50/p99 ms',
      '/v1 TTFT p50/p99 ms',
      'gRPC TTFT p50/p99 ms',
      'main CPU us/tok bare, /v1, gRPC',
    ]),
  );
  const ttft = (p: Point) => `${p.ttftMs.toFixed(1)} / ${p.ttftP99Ms.toFixed(1)}`;
  for (const n of STREAMS) {
    const b = bareAt.get(n)!;
    const { v1, grpc } = await viaNereid(n);
    console.log(
      cells([
        n,
        b.tokensPerSecond.toFixed(0),
        v1.tokensPerSecond.toFixed(0),
        grpc.tokensPerSecond.toFixed(0),
        (v1.tokensPerSecond / b.tokensPerSecond).toFixed(2),
        (grpc.tokensPerSecond / b.tokensPerSecond).toFixed(2),
        ttft(b),
        ttft(v1),
        ttft(grpc),
        [b, v1, grpc].map((p) => p.cpuUsPerToken.toFixed(0)).join(', '),
      ]),
    );
  }
  if (PREFIX_WORDS <= 0) return;
  const on = await repeatedPrompt(true);
  const off = await repeatedPrompt(false);
  console.log(
    `repeated prompt of ${on.promptTokens} tokens, TTFT ms (median of ${PREFIX_ROUNDS}, 8 tokens each): bare (whole prompt) ${bareLong.toFixed(1)} | nereid, prefix reuse off ${off.ttftMs.toFixed(1)} | on ${on.ttftMs.toFixed(1)}`,
  );
}

if (isMainThread) {
  try {
    await main();
  } finally {
    // The worker's gRPC channels would keep the process up after the servers stopped.
    await worker?.terminate();
  }
} else serveAsks();
