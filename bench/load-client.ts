/**
 * A small closed-loop HTTP load generator for the KServe v2 infer endpoint, for machines where Triton's
 * perf_analyzer cannot run: N workers, each with a keep-alive connection, send binary-tensor requests
 * (random FP32 input, all outputs binary) back to back; after a warm-up it counts completed requests for a
 * fixed duration. Reports the same numbers bench/summarize.py reads from perf_analyzer's CSV.
 *
 * Usage: node dist/bench/load-client.js --url http://localhost:8000 --model densenet_batched [--batch 8]
 *          [--concurrency 4] [--seconds 10] [--warmup-seconds 3] [--out <file.json>]
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

export interface LoadResult {
  readonly model: string;
  readonly batch: number;
  readonly concurrency: number;
  readonly seconds: number;
  readonly requests: number;
  readonly inferencesPerSec: number;
  readonly meanLatencyMs: number;
  readonly p50LatencyMs: number;
  readonly p99LatencyMs: number;
}

interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

interface ModelMetadata {
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

function positiveNumber(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${text}'`);
  return n;
}

function request(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The request body: the JSON header followed by the input's raw bytes (binary tensor data extension). */
function inferBody(meta: ModelMetadata, batch: number): { body: Buffer; headerLength: number } {
  if (meta.inputs.length !== 1 || meta.inputs[0].datatype !== 'FP32') {
    throw new Error('the load client supports models with exactly one FP32 input');
  }
  const input = meta.inputs[0];
  const [first, ...rest] = input.shape;
  if (rest.some((d) => d < 0)) throw new Error(`input '${input.name}' has a free inner dimension`);
  const shape = first === -1 ? [batch, ...rest] : input.shape;
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1;
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: input.name, shape, datatype: 'FP32', parameters: { binary_data_size: data.byteLength } },
      ],
      outputs: meta.outputs.map((o) => ({ name: o.name, parameters: { binary_data: true } })),
    }),
  );
  const body = Buffer.concat([header, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
  return { body, headerLength: header.length };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://localhost:8000' },
      model: { type: 'string' },
      batch: { type: 'string', default: '1' },
      concurrency: { type: 'string', default: '1' },
      seconds: { type: 'string', default: '10' },
      'warmup-seconds': { type: 'string', default: '3' },
      out: { type: 'string' },
    },
  });
  if (values.model === undefined) throw new Error('--model is required');
  const model = values.model;
  const batch = positiveNumber('batch', values.batch);
  const concurrency = positiveNumber('concurrency', values.concurrency);
  const seconds = positiveNumber('seconds', values.seconds);
  const warmupSeconds = positiveNumber('warmup-seconds', values['warmup-seconds']);
  const base = new URL(values.url.includes('://') ? values.url : `http://${values.url}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

  const metaResponse = await request(agent, base, 'GET', `/v2/models/${encodeURIComponent(model)}`, {});
  if (metaResponse.status !== 200) {
    throw new Error(`model metadata: HTTP ${metaResponse.status} ${metaResponse.body.toString()}`);
  }
  const meta = JSON.parse(metaResponse.body.toString()) as ModelMetadata;
  const { body, headerLength } = inferBody(meta, batch);
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Content-Length': body.length,
    'Inference-Header-Content-Length': headerLength,
  };
  const path = `/v2/models/${encodeURIComponent(model)}/infer`;

  const warmupEnd = performance.now() + warmupSeconds * 1000;
  const measureEnd = warmupEnd + seconds * 1000;
  const latencies: number[] = [];
  const worker = async (): Promise<void> => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= measureEnd) return;
      const res = await request(agent, base, 'POST', path, headers, body);
      if (res.status !== 200)
        throw new Error(`infer: HTTP ${res.status} ${res.body.toString().slice(0, 500)}`);
      const t1 = performance.now();
      // closed loop in steady state: completions inside the window / window length = throughput
      if (t1 >= warmupEnd && t1 <= measureEnd) latencies.push(t1 - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => worker()));
  agent.destroy();

  const sorted = [...latencies].sort((a, b) => a - b);
  const result: LoadResult = {
    model,
    batch,
    concurrency,
    seconds,
    requests: latencies.length,
    inferencesPerSec: (latencies.length * batch) / seconds,
    meanLatencyMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
    p50LatencyMs: percentile(sorted, 50),
    p99LatencyMs: percentile(sorted, 99),
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  if (values.out !== undefined) writeFileSync(values.out, JSON.stringify(result, null, 2) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`load-client: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
