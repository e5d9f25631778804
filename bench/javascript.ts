/**
 * JavaScript backend benchmark, three parts:
 *
 * 1. Backend overhead: identity_js (a JavaScript model on its worker thread) against identity_fp32 (ONNX
 *    Runtime on its worker thread), one instance each, no batching, through the in-process core API so that
 *    only the backends differ. 16 FP32 and 3x224x224 FP32, concurrency 1 and 16, the two sides interleaved
 *    round by round so that load from elsewhere on the machine hits both alike. Overhead = JS − ONNX time
 *    per request (latency at concurrency 1, 1/throughput at 16). Target: ≤ 50 µs.
 * 2. Copies: the 3x224x224 request run on a JsInstance directly, its transfer counters printed — one copy
 *    in (the core's Buffer is not ours to move), none out (the output's buffer moves) — and the same with
 *    the input in a SharedArrayBuffer (no copy at all), with the time per request of each.
 * 3. In-process vs HTTP on identity_js with 16 FP32: NereidServer.infer() against HTTP (binary tensors,
 *    keep-alive) driven by a separate client process, requests per second at concurrency 1 and 16.
 *    Target: in-process ≥ 3× HTTP.
 *
 * Usage: node dist/bench/javascript.js [--requests 2000] [--rounds 5] [--seconds 5] [--out <file.json>]
 *        (client mode, used by part 3: --client --url <base> --concurrency <n> --seconds <s>)
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BackendRequest } from '../src/backend-api/backend.js';
import {
  JavascriptBackend,
  type JsInstance,
  type TransferCounters,
} from '../src/backends/javascript/index.js';
import { silentLogger } from '../src/common/logger.js';
import type { InferInput, InferenceRequest } from '../src/core/types.js';
import { freezeModelConfig, normalizeModelConfig, parseModelConfigText } from '../src/model-config/index.js';
import { Nereid, Tensor, type NereidServer } from '../src/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'examples/model_repository');
const FIXTURES = path.join(ROOT, 'test/fixtures/javascript');
const LARGE = 3 * 224 * 224;

interface Point {
  readonly side: string;
  readonly elements: number;
  readonly concurrency: number;
  readonly requests: number;
  readonly usPerRequest: number;
  readonly requestsPerSec: number;
}

/** Runs `total` calls of `run` with `concurrency` in flight; returns elapsed ms. */
async function closedLoop(run: () => Promise<void>, total: number, concurrency: number): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (started < total) {
      started++;
      await run();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return performance.now() - t0;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function fp32(name: string, n: number, shared = false): InferInput {
  const data = shared ? Buffer.from(new SharedArrayBuffer(n * 4)) : Buffer.alloc(n * 4);
  new Float32Array(data.buffer, data.byteOffset, n).fill(1.5);
  return { name, datatype: 'FP32', shape: [1, n], data };
}

// --- part 1 -------------------------------------------------------------------------------------------

async function backendOverhead(server: NereidServer, requests: number, rounds: number): Promise<Point[]> {
  const points: Point[] = [];
  for (const elements of [16, LARGE]) {
    for (const concurrency of [1, 16]) {
      const input = fp32('INPUT0', elements);
      const total = elements === LARGE ? Math.max(200, Math.floor(requests / 8)) : requests;
      const sides = ['identity_fp32', 'identity_js'].map((model) => ({
        model,
        run: async (): Promise<void> => {
          const req: InferenceRequest = {
            modelName: model,
            inputs: [input],
            signal: new AbortController().signal,
          };
          const r = await server.api.inferOnce(req);
          if (r.outputs[0].data.length !== elements * 4) throw new Error(`${model}: wrong answer`);
        },
        times: [] as number[],
      }));
      for (const s of sides) await closedLoop(s.run, Math.min(200, total), concurrency); // warm-up
      for (let round = 0; round < rounds; round++) {
        for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
          s.times.push((await closedLoop(s.run, total, concurrency)) / total);
        }
      }
      for (const s of sides) {
        const msPerRequest = median(s.times);
        // Concurrency 1: the latency; 16: elapsed / requests, i.e. 1 / throughput.
        const usPerRequest = msPerRequest * 1000;
        points.push({
          side: s.model,
          elements,
          concurrency,
          requests: total * rounds,
          usPerRequest,
          requestsPerSec: 1000 / msPerRequest,
        });
      }
    }
  }
  return points;
}

// --- part 2 -------------------------------------------------------------------------------------------

function backendRequest(input: InferInput): BackendRequest {
  let done = false;
  return {
    id: '',
    inputs: new Map([[input.name, input]]),
    requestedOutputs: new Set(['OUTPUT0']),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal: new AbortController().signal,
    sender: {
      send: (outputs, o) => {
        if (outputs[0].data.length !== input.data.length) throw new Error('wrong answer');
        done ||= o.final;
      },
      fail: (e) => {
        throw e;
      },
      get done() {
        return done;
      },
    },
  };
}

async function jsInstance(repo: string): Promise<JsInstance> {
  const modelDir = path.join(repo, 'identity_js');
  const versionDir = path.join(modelDir, '1');
  const config = freezeModelConfig(
    normalizeModelConfig(
      parseModelConfigText(readFileSync(path.join(modelDir, 'config.pbtxt'), 'utf8'), 'identity_js'),
      {
        backend: 'javascript',
        defaultModelFilename: 'model.js',
      },
    ),
  );
  const handle = await new JavascriptBackend().loadModel({
    config,
    modelName: 'identity_js',
    version: 1,
    modelDir,
    versionDir,
    modelPath: path.join(versionDir, 'model.js'),
    backendConfig: {},
    log: silentLogger(),
  });
  const spec = {
    name: 'identity_js_bench',
    groupName: 'identity_js',
    index: 0,
    kind: 'KIND_CPU' as const,
    deviceId: 0,
  };
  return (await handle.createInstance(spec)) as JsInstance;
}

interface CopyReport {
  readonly input: 'Buffer' | 'SharedArrayBuffer';
  readonly bytesPerRequest: number;
  readonly perRequest: TransferCounters;
  readonly usPerRequest: number;
}

async function copies(repo: string, requests: number): Promise<CopyReport[]> {
  const out: CopyReport[] = [];
  for (const shared of [false, true]) {
    const instance = await jsInstance(repo);
    try {
      const input = fp32('INPUT0', LARGE, shared);
      const n = Math.max(100, Math.floor(requests / 10));
      await instance.execute([backendRequest(input)]);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await instance.execute([backendRequest(input)]);
      const us = ((performance.now() - t0) * 1000) / n;
      const c = await instance.transferCounters();
      const per = Object.fromEntries(
        Object.entries(c).map(([k, v]) => [k, v / (n + 1)]),
      ) as unknown as TransferCounters;
      out.push({
        input: shared ? 'SharedArrayBuffer' : 'Buffer',
        bytesPerRequest: LARGE * 4,
        perRequest: per,
        usPerRequest: us,
      });
    } finally {
      await instance.close();
    }
  }
  return out;
}

// --- part 3 -------------------------------------------------------------------------------------------

function binaryBody(n: number): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n], parameters: { binary_data_size: n * 4 } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  return { body: Buffer.concat([header, Buffer.alloc(n * 4, 1)]), headerLength: header.length };
}

/** Client mode: a closed loop of HTTP requests for `seconds`; prints {requests, seconds} as JSON. */
async function clientMode(url: string, concurrency: number, seconds: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const { body, headerLength } = binaryBody(16);
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': String(headerLength),
    'Content-Length': String(body.length),
  };
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        `${url}/v2/models/identity_js/infer`,
        { method: 'POST', agent, headers },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const loop = async (until: number, count: { n: number }): Promise<void> => {
    while (performance.now() < until) {
      await one();
      count.n++;
    }
  };
  const warm = { n: 0 };
  await Promise.all(Array.from({ length: concurrency }, () => loop(performance.now() + 1000, warm)));
  const count = { n: 0 };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, () => loop(t0 + seconds * 1000, count)));
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  process.stdout.write(JSON.stringify({ requests: count.n, seconds: elapsed }) + '\n');
}

function runClient(
  url: string,
  concurrency: number,
  seconds: number,
): Promise<{ requests: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        '--client',
        '--url',
        url,
        '--concurrency',
        String(concurrency),
        '--seconds',
        String(seconds),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as { requests: number; seconds: number })
        : reject(new Error(`client exited ${code}`)),
    );
  });
}

async function inProcessVsHttp(
  server: NereidServer,
  seconds: number,
): Promise<{ concurrency: number; inProcess: number; http: number }[]> {
  const input = Tensor.from('INPUT0', new Float32Array(16).fill(1), { shape: [1, 16] });
  const http = await server.listenHttp({ port: 0 });
  const url = `http://127.0.0.1:${http.port}`;
  const out = [];
  try {
    for (const concurrency of [1, 16]) {
      const run = async (): Promise<void> => {
        const r = await server.infer({ model: 'identity_js', inputs: [input] });
        if (r.outputs[0].data.length !== 64) throw new Error('wrong answer');
      };
      await closedLoop(run, 500, concurrency);
      let n = 0;
      const t0 = performance.now();
      const until = t0 + seconds * 1000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < until) {
            await run();
            n++;
          }
        }),
      );
      const inProcess = n / ((performance.now() - t0) / 1000);
      const h = await runClient(url, concurrency, seconds);
      out.push({ concurrency, inProcess, http: h.requests / h.seconds });
    }
  } finally {
    await server.stopListening('http');
  }
  return out;
}

// --- main ---------------------------------------------------------------------------------------------

function table(headers: string[], rows: (string | number)[][]): string {
  const lines = [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`];
  for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '5' },
      seconds: { type: 'string', default: '5' },
      out: { type: 'string' },
      client: { type: 'boolean', default: false },
      url: { type: 'string' },
      concurrency: { type: 'string', default: '1' },
    },
  });
  if (values.client) {
    await clientMode(values.url!, Number(values.concurrency), Number(values.seconds));
    return;
  }
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);

  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-js-'));
  cpSync(path.join(EXAMPLES, 'identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  cpSync(path.join(FIXTURES, 'identity_js'), path.join(repo, 'identity_js'), { recursive: true });
  // One instance each (onnxruntime's default on CPU is two), so that only the backends differ.
  const onnxConfig = path.join(repo, 'identity_fp32', 'config.pbtxt');
  writeFileSync(
    onnxConfig,
    readFileSync(onnxConfig, 'utf8') + '\ninstance_group [ { count: 1, kind: KIND_CPU } ]\n',
  );
  const server = await Nereid.start({ modelRepository: repo, log: false });
  try {
    const load = os.loadavg()[0];
    process.stderr.write(
      `bench/javascript: backend overhead (${rounds} rounds, load ${load.toFixed(1)} on ${os.availableParallelism()} CPUs)\n`,
    );
    const overhead = await backendOverhead(server, requests, rounds);
    process.stderr.write('bench/javascript: copies of a 3x224x224 FP32 tensor\n');
    const copyReports = await copies(repo, requests);
    process.stderr.write(`bench/javascript: in-process vs HTTP (${seconds} s per point)\n`);
    const versus = await inProcessVsHttp(server, seconds);

    const rows: (string | number)[][] = [];
    for (const elements of [16, LARGE]) {
      for (const concurrency of [1, 16]) {
        const onnx = overhead.find(
          (p) => p.side === 'identity_fp32' && p.elements === elements && p.concurrency === concurrency,
        )!;
        const js = overhead.find(
          (p) => p.side === 'identity_js' && p.elements === elements && p.concurrency === concurrency,
        )!;
        rows.push([
          elements === 16 ? '16 FP32' : '3x224x224 FP32',
          concurrency,
          onnx.usPerRequest.toFixed(1),
          js.usPerRequest.toFixed(1),
          (js.usPerRequest - onnx.usPerRequest).toFixed(1),
        ]);
      }
    }
    const report = [
      `JavaScript backend (node ${process.version}, ${os.availableParallelism()} CPUs, load ${load.toFixed(1)})`,
      '',
      'Backend overhead: µs per request (latency at concurrency 1, 1/throughput at 16), one instance each',
      table(['tensor', 'concurrency', 'ONNX identity', 'JS identity', 'JS − ONNX'], rows),
      '',
      'Copies of one 3x224x224 FP32 request (602112 bytes) on a JsInstance',
      table(
        ['input in', 'in: copied', 'in: shared', 'out: moved', 'out: copied', 'out: shared', 'µs/request'],
        copyReports.map((c) => [
          c.input,
          c.perRequest.inputBytesCopied,
          c.perRequest.inputBytesShared,
          c.perRequest.outputBytesMoved,
          c.perRequest.outputBytesCopied,
          c.perRequest.outputBytesShared,
          c.usPerRequest.toFixed(1),
        ]),
      ),
      '',
      'identity_js, 16 FP32: in-process NereidServer.infer() vs HTTP (binary, keep-alive, client in another process)',
      table(
        ['concurrency', 'in-process req/s', 'HTTP req/s', 'ratio'],
        versus.map((v) => [
          v.concurrency,
          v.inProcess.toFixed(0),
          v.http.toFixed(0),
          (v.inProcess / v.http).toFixed(2),
        ]),
      ),
    ].join('\n');
    process.stdout.write(report + '\n');
    if (values.out)
      writeFileSync(values.out, JSON.stringify({ load, overhead, copies: copyReports, versus }, null, 2));
  } finally {
    await server.close();
    rmSync(repo, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(
    `bench/javascript: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
});
