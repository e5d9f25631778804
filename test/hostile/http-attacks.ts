/**
 * The full-size HTTP attacks of issue 33, against a real `nereid` process on loopback, one after the
 * other; for each: the server's RSS peak (from /proc, every 100 ms), the latency of `GET /v2/health/live`
 * on a new connection during the attack (a probe every 100 ms, sequential, 60 s timeout) and the time to
 * recover after the attacker stops (until a probe answers within 50 ms again).
 *
 * - pipeline: one connection pipelines small infers (default 200,000) and never reads an answer;
 * - bigjson: 4 requests at once, each a 61 MiB binary FP32 input to an identity model, answered as JSON
 *   (about 150 MB of text each), read as fast as the client can;
 * - slowreader: one generate_stream request to the decoupled square_int32 with IN = 10,000,000, read at
 *   1 KiB/s.
 *
 * Run it on a quiet machine (the figures are wall-clock: a loaded machine stretches them):
 *   npx tsc -p tsconfig.json && node dist/test/hostile/http-attacks.js [--nereid bin/nereid.js]
 *     [--attacks pipeline,bigjson,slowreader] [--seconds 20] [--pipelined 200000]
 * `--nereid` may name another checkout's bin/nereid.js to measure it ("before" figures). Not part of
 * `npm test`: it takes minutes and gigabytes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { recovery, rssMb, sleep, stats, watch } from './attack-kit.js';

const { values } = parseArgs({
  options: {
    nereid: { type: 'string', default: 'bin/nereid.js' },
    attacks: { type: 'string', default: 'pipeline,bigjson,slowreader' },
    seconds: { type: 'string', default: '20' },
    pipelined: { type: 'string', default: '200000' },
  },
});
const attackSeconds = Number(values.seconds);

const MODELS: Readonly<Record<string, string>> = {
  big: `name: "big"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`,
  square_int32: `name: "square_int32"
backend: "square"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`,
};

async function startServer(repo: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      '--initial-heap-size=128',
      values.nereid,
      `--model-repository=${repo}`,
      '--http-address=127.0.0.1',
      '--http-port=0',
      '--allow-grpc=false',
      '--allow-metrics=false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  const port = await new Promise<number>((resolve, reject) => {
    const look = (d: Buffer): void => {
      log += d.toString();
      const m = /Started HTTPService at [^ ]*:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`nereid exited (${code}) before listening:\n${log}`)));
  });
  child.stdout.resume();
  child.stderr.resume();
  return { child, port };
}

function writeAll(socket: Socket, data: Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (socket.write(data)) resolve();
    else socket.once('drain', resolve).once('close', resolve);
  });
}

/** Pipelines `count` small infers on one connection, never reading; stops at `seconds`. */
async function pipeline(port: number, count: number, seconds: number): Promise<Record<string, number>> {
  const body = Buffer.from(
    JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] }] }),
  );
  const one = Buffer.concat([
    Buffer.from(
      `POST /v2/models/big/infer HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    ),
    body,
  ]);
  const socket = connect(port, '127.0.0.1');
  socket.pause(); // never read an answer
  await new Promise((r) => socket.once('connect', r));
  const deadline = performance.now() + seconds * 1000;
  let written = 0;
  const batch = Buffer.concat(Array.from({ length: 100 }, () => one));
  while (written < count && performance.now() < deadline && !socket.destroyed) {
    const left = deadline - performance.now();
    await Promise.race([writeAll(socket, batch), sleep(Math.max(0, left))]);
    written += 100;
  }
  const sent = written;
  await sleep(Math.max(0, deadline - performance.now()));
  socket.destroy();
  return { requestsWritten: sent, bytesWritten: sent * one.length };
}

/** `count` requests at once, each `mb` MiB of binary FP32 input, answered as JSON and read whole. */
async function bigJson(port: number, count: number, mib: number): Promise<Record<string, unknown>> {
  const n = Math.floor((mib * 1024 * 1024) / 4);
  const values32 = new Float32Array(n);
  for (let i = 0; i < n; i++) values32[i] = Math.random();
  const data = Buffer.from(values32.buffer);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [n], parameters: { binary_data_size: data.length } },
      ],
    }),
  );
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ status: number; bytes: number; ms: number }>((resolve) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/v2/models/big/infer',
              agent: false,
              headers: {
                'Content-Type': 'application/octet-stream',
                'Inference-Header-Content-Length': header.length,
                'Content-Length': header.length + data.length,
              },
            },
            (res) => {
              let bytes = 0;
              res.on('data', (c: Buffer) => (bytes += c.length));
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t0 }),
              );
              res.on('error', () => resolve({ status: -1, bytes, ms: performance.now() - t0 }));
            },
          );
          req.on('error', () => resolve({ status: -1, bytes: 0, ms: performance.now() - t0 }));
          req.write(header);
          req.end(data);
        }),
    ),
  );
  return {
    inputMiB: mib,
    statuses: results.map((r) => r.status).join(','),
    answerMB: Math.round(results.reduce((a, r) => a + r.bytes, 0) / count / 1e6),
    lastAnswerMs: Math.round(Math.max(...results.map((r) => r.ms))),
  };
}

/** One generate_stream to square_int32 with a huge count, read at 1 KiB/s for `seconds`. */
async function slowReader(port: number, seconds: number): Promise<Record<string, number>> {
  const body = JSON.stringify({ IN: 10_000_000 });
  const socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.pause();
  socket.write(
    `POST /v2/models/square_int32/generate_stream HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  let read = 0;
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline && !socket.destroyed) {
    const chunk = socket.read(1024) as Buffer | null;
    if (chunk) read += chunk.length;
    await sleep(1000);
  }
  socket.destroy();
  return { bytesRead: read };
}

async function main(): Promise<void> {
  const repo = mkdtempSync(path.join(tmpdir(), 'nereid-hostile-'));
  for (const [name, config] of Object.entries(MODELS)) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
  }
  const { child, port } = await startServer(repo);
  const pid = child.pid!;
  try {
    await sleep(2000);
    for (const attack of values.attacks.split(',')) {
      const rssBeforeMb = rssMb(pid);
      const w = watch(port, pid);
      let detail: Record<string, unknown>;
      if (attack === 'pipeline') detail = await pipeline(port, Number(values.pipelined), attackSeconds);
      else if (attack === 'bigjson') detail = await bigJson(port, 4, 61);
      else if (attack === 'slowreader') detail = await slowReader(port, attackSeconds);
      else throw new Error(`unknown attack '${attack}'`);
      const during = await w.stop();
      const recoverMs = await recovery(port);
      await sleep(3000);
      const line = {
        attack,
        rssBeforeMb,
        rssPeakMb: during.rssPeakMb,
        rssAfter3sMb: rssMb(pid),
        health: { ...stats(during.probes), failed: during.failed },
        recoverMs,
        alive: child.exitCode === null,
        ...detail,
      };
      process.stdout.write(JSON.stringify(line) + '\n');
      if (child.exitCode !== null) break;
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(repo, { recursive: true, force: true });
  }
}

await main();
