/**
 * Streams of one decoupled model read at different speeds (issue 33): a fast reader on one stream must
 * not be starved by a slow reader on another stream of the same model, and the slow reader's stream must
 * stay bounded in the server (the per-request response queue, src/core/response-stream.ts, with
 * back-pressure into the model).
 *
 * For each model and protocol (HTTP generate_stream over SSE, gRPC ModelStreamInfer, each on connections
 * of their own) it measures how long a fast reader takes to receive `--fast` responses alone, then again
 * while a slow reader (a stream asking for `--slow` responses whose client reads nothing) holds another
 * stream of the same model, and the server's RSS before, during (peak) and after. Models: the builtin
 * `square_int32` (one request = one task, each awaiting its own queue's room), the Python
 * `repeat_int32_python` (a thread per request inside one stub process, which shares one socket to the
 * server) and a JavaScript generator model (one worker thread).
 *
 *   npx tsc -p tsconfig.json && node dist/test/hostile/stream-fairness.js [--nereid bin/nereid.js]
 *     [--models square_int32,repeat_int32_python,count_js] [--protocols sse,grpc] [--fast 2000]
 *     [--slow 1000000] [--hold 3]
 * Prints one JSON line per model and protocol: fastAloneMs, fastWithSlowMs (null: the fast reader did not
 * finish within 60 s, i.e. starved), their ratio, and RSS. Not part of `npm test` (stream-fairness.test.ts
 * in test/integration is its scaled-down regression test).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as h2connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeMessage } from '../../src/frontends/grpc/test-client.testkit.js';
import { listeningPorts, rssMb, sleep } from './attack-kit.js';

const { values } = parseArgs({
  options: {
    nereid: { type: 'string', default: 'bin/nereid.js' },
    models: { type: 'string', default: 'square_int32,repeat_int32_python,count_js' },
    protocols: { type: 'string', default: 'sse,grpc' },
    fast: { type: 'string', default: '2000' },
    slow: { type: 'string', default: '1000000' },
    hold: { type: 'string', default: '3' },
  },
});

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

export const FAIRNESS_MODELS: Readonly<Record<string, { config: string; files?: Record<string, string> }>> = {
  square_int32: {
    config: `name: "square_int32"
backend: "square"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`,
  },
  count_js: {
    config: `name: "count_js"
backend: "javascript"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
    files: {
      // A generator execute: the SDK awaits the sender's room before each response.
      '1/model.js': `import { Tensor } from 'nereid-server';
export default class Model {
  async *execute(request) {
    const n = Number(request.input('IN').toArray()[0]);
    for (let i = 0; i < n; i++) yield { outputs: [Tensor.from('OUT', new Int32Array([i]))] };
  }
}
`,
    },
  },
};

/** The request body of one stream asking for `n` responses from `model`. */
function inputsOf(model: string, n: number): { name: string; datatype: string; values: number[] }[] {
  if (model === 'repeat_int32_python') {
    return [
      { name: 'IN', datatype: 'INT32', values: Array.from({ length: n }, (_, i) => i) },
      { name: 'DELAY', datatype: 'UINT32', values: new Array<number>(n).fill(0) },
      { name: 'WAIT', datatype: 'UINT32', values: [0] },
    ];
  }
  return [{ name: 'IN', datatype: 'INT32', values: [n] }];
}

function sseBody(model: string, n: number): string {
  const body: Record<string, number[] | number> = {};
  for (const i of inputsOf(model, n)) body[i.name] = model === 'repeat_int32_python' ? i.values : i.values[0];
  return JSON.stringify(body);
}

function grpcMessage(model: string, n: number): Buffer {
  const inputs = inputsOf(model, n);
  const raw = inputs.map((i) => {
    const b = Buffer.alloc(4 * i.values.length);
    i.values.forEach((v, k) =>
      i.datatype === 'INT32' ? b.writeInt32LE(v, k * 4) : b.writeUInt32LE(v, k * 4),
    );
    return b;
  });
  const message = encodeMessage('inference.ModelInferRequest', {
    model_name: model,
    inputs: inputs.map((i) => ({ name: i.name, datatype: i.datatype, shape: [i.values.length] })),
    raw_input_contents: raw,
  });
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, 5);
  return framed;
}

export interface SlowReader {
  close(): void;
}

/** A stream asking for `n` responses whose client reads nothing (its socket or HTTP/2 stream paused). */
export async function openSlow(
  protocol: string,
  port: number,
  model: string,
  n: number,
): Promise<SlowReader> {
  if (protocol === 'sse') {
    const body = sseBody(model, n);
    const socket: Socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.pause();
    socket.write(
      `POST /v2/models/${model}/generate_stream HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    return { close: () => socket.destroy() };
  }
  const session = h2connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => undefined);
  stream.pause();
  stream.write(grpcMessage(model, n));
  return { close: () => session.destroy() };
}

/** Reads a stream asking for `n` responses as fast as it can; ms until all arrived (null: not in `limitMs`). */
export async function readFast(
  protocol: string,
  port: number,
  model: string,
  n: number,
  limitMs = 60_000,
): Promise<{ ms: number | null; responses: number }> {
  const t0 = performance.now();
  let responses = 0;
  let finish: (ok: boolean) => void = () => undefined;
  const done = new Promise<boolean>((r) => (finish = r));
  let cleanup: () => void;
  if (protocol === 'sse') {
    const body = sseBody(model, n);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => finish(false));
    // Each SSE event ends with a blank line ("\n\n"); the chunked framing between events uses "\r\n".
    let last = '';
    socket.on('data', (d: Buffer) => {
      const text = last + d.toString('latin1');
      for (let i = text.indexOf('\n\n'); i >= 0; i = text.indexOf('\n\n', i + 2)) responses++;
      last = text.endsWith('\n') && !text.endsWith('\n\n') ? '\n' : '';
      if (responses >= n || text.includes('"error"')) finish(true);
    });
    socket.write(
      `POST /v2/models/${model}/generate_stream HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    cleanup = () => socket.destroy();
  } else {
    const session: ClientHttp2Session = h2connect(`http://127.0.0.1:${port}`);
    session.on('error', () => finish(false));
    const stream: ClientHttp2Stream = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => finish(false));
    let pending = Buffer.alloc(0);
    stream.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 5) {
        const len = pending.readUInt32BE(1);
        if (pending.length < 5 + len) break;
        pending = pending.subarray(5 + len);
        responses++;
      }
      if (responses >= n) finish(true);
    });
    stream.on('end', () => finish(responses >= n));
    stream.write(grpcMessage(model, n));
    cleanup = () => session.destroy();
  }
  const timer = setTimeout(() => finish(false), limitMs);
  const ok = await done;
  clearTimeout(timer);
  cleanup();
  return { ms: ok && responses >= n ? Math.round(performance.now() - t0) : null, responses };
}

async function startServer(repo: string): Promise<{ child: ChildProcess; port: number; grpcPort: number }> {
  const child = spawn(
    process.execPath,
    [
      values.nereid,
      `--model-repository=${repo}`,
      '--http-address=127.0.0.1',
      '--http-port=0',
      '--grpc-address=127.0.0.1',
      '--grpc-port=0',
      '--allow-metrics=false',
      `--backend-config=python,python-executable=${path.join(ROOT, '.venv/bin/python')}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return { child, ...(await listeningPorts(child)) };
}

async function main(): Promise<void> {
  const models = values.models.split(',');
  const repo = mkdtempSync(path.join(tmpdir(), 'nereid-fairness-'));
  for (const name of models) {
    const spec = FAIRNESS_MODELS[name];
    if (spec === undefined) {
      cpSync(path.join(ROOT, 'examples/model_repository', name), path.join(repo, name), { recursive: true });
      continue;
    }
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, 'config.pbtxt'), spec.config);
    for (const [file, text] of Object.entries(spec.files ?? {}))
      writeFileSync(path.join(repo, name, file), text);
  }
  const { child, port, grpcPort } = await startServer(repo);
  const pid = child.pid!;
  const fast = Number(values.fast);
  const slow = Number(values.slow);
  try {
    await sleep(1000);
    for (const model of models) {
      for (const protocol of values.protocols.split(',')) {
        const p = protocol === 'sse' ? port : grpcPort;
        await readFast(protocol, p, model, 10); // warm up
        const alone = await readFast(protocol, p, model, fast);
        const rssBeforeMb = rssMb(pid);
        let rssPeakMb = rssBeforeMb;
        const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, rssMb(pid) || 0)), 100);
        const slowReader = await openSlow(protocol, p, model, slow);
        await sleep(Number(values.hold) * 1000); // let the slow stream fill every buffer it can
        const rssSlowHeldMb = rssMb(pid);
        const withSlow = await readFast(protocol, p, model, fast);
        await sleep(Number(values.hold) * 1000);
        const rssSlowHeldLaterMb = rssMb(pid);
        slowReader.close();
        clearInterval(sampler);
        await sleep(1000);
        process.stdout.write(
          JSON.stringify({
            model,
            protocol,
            fast,
            slow,
            fastAloneMs: alone.ms,
            fastWithSlowMs: withSlow.ms,
            fastWithSlowResponses: withSlow.responses,
            ratio: alone.ms && withSlow.ms ? Number((withSlow.ms / alone.ms).toFixed(2)) : null,
            rssBeforeMb,
            rssSlowHeldMb,
            rssSlowHeldLaterMb,
            rssPeakMb,
            rssAfterMb: rssMb(pid),
          }) + '\n',
        );
      }
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(repo, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href)
  await main();
