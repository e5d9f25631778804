/**
 * Bare onnxruntime-node throughput of one ONNX model, in-process: the ceiling that serving the same model
 * over HTTP is measured against (bench/run.sh). For each batch size: one session, random FP32 input, a
 * warm-up, then back-to-back runs for a fixed duration; images/s = runs × batch / elapsed.
 *
 * Usage: node dist/bench/bare-onnxruntime.js --model <model.onnx> [--batches 1,8] [--seconds 10]
 *          [--warmup-seconds 3] [--threads <intra-op threads, default: all cores>] [--out <file.json>]
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';

export interface BareResult {
  readonly model: string;
  readonly batch: number;
  readonly intraOpThreads: number;
  readonly seconds: number;
  readonly runs: number;
  readonly imagesPerSec: number;
  readonly meanLatencyMs: number;
  readonly p50LatencyMs: number;
  readonly p99LatencyMs: number;
}

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`--${name} must be a positive integer, got '${text}'`);
  return n;
}

function positiveNumber(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${text}'`);
  return n;
}

/** The input's shape with the batch dimension set; the model's first dimension must be free or match. */
function inputShape(meta: ort.InferenceSession.ValueMetadata, batch: number): number[] {
  if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor`);
  if (meta.type !== 'float32')
    throw new Error(`input '${meta.name}' is ${meta.type}; only float32 is supported`);
  const [first, ...rest] = meta.shape;
  if (typeof first === 'number' && first > 0 && first !== batch) {
    throw new Error(`input '${meta.name}' has a fixed batch dimension ${first}; cannot run batch ${batch}`);
  }
  return [
    batch,
    ...rest.map((d) => {
      if (typeof d !== 'number' || d <= 0) throw new Error(`input '${meta.name}' has a free inner dimension`);
      return d;
    }),
  ];
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(
  session: ort.InferenceSession,
  feeds: ort.InferenceSession.FeedsType,
  warmupSeconds: number,
  seconds: number,
): Promise<{ runs: number; elapsed: number; latencies: number[] }> {
  const warmupEnd = performance.now() + warmupSeconds * 1000;
  do await session.run(feeds);
  while (performance.now() < warmupEnd);

  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  let now = start;
  while (now < end) {
    const t0 = now;
    await session.run(feeds);
    now = performance.now();
    latencies.push(now - t0);
  }
  return { runs: latencies.length, elapsed: (now - start) / 1000, latencies };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      batches: { type: 'string', default: '1,8' },
      seconds: { type: 'string', default: '10' },
      'warmup-seconds': { type: 'string', default: '3' },
      threads: { type: 'string', default: String(availableParallelism()) },
      out: { type: 'string' },
    },
  });
  if (values.model === undefined) throw new Error('--model <model.onnx> is required');
  const batches = values.batches.split(',').map((b) => positiveInt('batches', b.trim()));
  const seconds = positiveNumber('seconds', values.seconds);
  const warmupSeconds = positiveNumber('warmup-seconds', values['warmup-seconds']);
  const threads = positiveInt('threads', values.threads);

  // The same session settings Nereid's onnxruntime backend uses for a single-instance model.
  const session = await ort.InferenceSession.create(values.model, {
    intraOpNumThreads: threads,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  if (session.inputMetadata.length !== 1) throw new Error('the model must have exactly one input');
  const meta = session.inputMetadata[0];

  const results: BareResult[] = [];
  try {
    for (const batch of batches) {
      const shape = inputShape(meta, batch);
      const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
      for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1;
      const feeds = { [meta.name]: new ort.Tensor('float32', data, shape) };
      const { runs, elapsed, latencies } = await measure(session, feeds, warmupSeconds, seconds);
      const sorted = [...latencies].sort((a, b) => a - b);
      const result: BareResult = {
        model: values.model,
        batch,
        intraOpThreads: threads,
        seconds: elapsed,
        runs,
        imagesPerSec: (runs * batch) / elapsed,
        meanLatencyMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, runs),
        p50LatencyMs: percentile(sorted, 50),
        p99LatencyMs: percentile(sorted, 99),
      };
      results.push(result);
      process.stdout.write(JSON.stringify(result) + '\n');
    }
  } finally {
    await session.release();
  }
  if (values.out !== undefined) writeFileSync(values.out, JSON.stringify(results, null, 2) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bare-onnxruntime: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
