/**
 * Response cache benchmark: requests/s and latency of a cache hit against a miss, for a compute-heavy model
 * (the densenet_onnx example, 602 KB in, 4 KB out) and a tiny one (simple, 128 B in and out), with the local
 * cache and with Redis, over HTTP with binary tensors; and a local hit of `simple` against a bare node:http
 * echo server answering the same number of bytes (bench/transport/http-echo.ts), the floor any Node HTTP
 * server pays. Prints one table with the ratios side by side.
 *
 * A hit sends the same request again and again (one miss stores it first); a miss sends a request whose
 * input bytes differ every time, so it is computed and stored. Closed loop: each of N workers keeps one
 * keep-alive connection and sends its next request when the previous answer came back.
 *
 * Usage: node dist/bench/cache/run.js [--seconds 4] [--concurrency 1,8] [--out file.md] [--nereid <checkout>]
 * (--nereid: another built checkout whose bin/nereid.js is measured; the models, the echo and this driver
 * stay this checkout's, as bench/before-after.sh uses it)
 * (bench/cache/run.sh builds first and keeps the table in bench/results/). Needs redis-server on PATH
 * (scripts/setup-redis.sh); without it the Redis rows are left out.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, appendFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const EXAMPLES = path.join(ROOT, 'examples/model_repository');

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '1,8' },
    out: { type: 'string' },
    nereid: { type: 'string', default: ROOT },
  },
});
const SECONDS = Number(args.seconds);
const CONCURRENCY = args.concurrency.split(',').map(Number);

const children: ChildProcess[] = [];
const cleanup: (() => void)[] = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGTERM');
  for (const f of cleanup) f();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts a process and waits until its output matches `ready` (returns the match). */
function start(cmd: string, argv: string[], ready: RegExp, log: string): Promise<RegExpExecArray> {
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let text = '';
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer): void => {
      text += c.toString();
      appendFileSync(log, c);
      const m = ready.exec(text);
      if (m) resolve(m);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code}:\n${text.slice(-2000)}`)));
  });
}

interface Point {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
}

/**
 * N workers on keep-alive connections, each sending `body(worker, i)` back to back for SECONDS after a
 * short warm-up; every answer must be 200.
 */
async function measure(
  url: string,
  concurrency: number,
  body: (worker: number, i: number) => { data: Buffer; headers: http.OutgoingHttpHeaders },
): Promise<Point> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const send = (b: { data: Buffer; headers: http.OutgoingHttpHeaders }): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: b.headers,
        },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(b.data);
    });
  const latencies: number[] = [];
  let counting = false;
  let stop = false;
  let sent = 0;
  const worker = async (w: number): Promise<void> => {
    while (!stop) {
      const b = body(w, sent++);
      const t0 = process.hrtime.bigint();
      await send(b);
      if (counting) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
  const runs = Array.from({ length: concurrency }, (_, w) => worker(w));
  await new Promise((r) => setTimeout(r, 1000));
  counting = true;
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  counting = false;
  const elapsed = (Date.now() - t0) / 1000;
  const done = latencies.length;
  stop = true;
  await Promise.all(runs);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pick = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: done / elapsed, p50: pick(0.5), p99: pick(0.99) };
}

/** A binary-tensor request: JSON header, then the inputs' bytes; every output asked for in binary. */
function binaryRequest(
  inputs: { name: string; datatype: string; shape: number[]; data: Buffer }[],
  outputs: string[],
): { data: Buffer; headers: http.OutgoingHttpHeaders } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: inputs.map((i) => ({
        name: i.name,
        datatype: i.datatype,
        shape: i.shape,
        parameters: { binary_data_size: i.data.length },
      })),
      outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
    }),
  );
  return {
    data: Buffer.concat([header, ...inputs.map((i) => i.data)]),
    headers: {
      'Inference-Header-Content-Length': String(header.length),
      'Content-Type': 'application/octet-stream',
    },
  };
}

// Each worker owns its request buffers: a miss rewrites the first input's first 8 bytes with a value no
// other request used, after the previous answer came back (so no byte changes under a request in flight).
function simpleRequests(
  miss: boolean,
): (w: number, i: number) => { data: Buffer; headers: http.OutgoingHttpHeaders } {
  const per = new Map<number, { data: Buffer; headers: http.OutgoingHttpHeaders; offset: number }>();
  return (w, i) => {
    let r = per.get(w);
    if (!r) {
      const a = Buffer.from(new Int32Array(16).map((_, k) => k).buffer);
      const b = Buffer.from(new Int32Array(16).fill(1).buffer);
      const req = binaryRequest(
        [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b },
        ],
        ['OUTPUT0', 'OUTPUT1'],
      );
      r = { ...req, offset: req.data.length - 128 };
      per.set(w, r);
    }
    if (miss) {
      r.data.writeInt32LE(w, r.offset);
      r.data.writeInt32LE(i + 1_000_000, r.offset + 4);
    }
    return r;
  };
}

function densenetRequests(
  miss: boolean,
): (w: number, i: number) => { data: Buffer; headers: http.OutgoingHttpHeaders } {
  const per = new Map<number, { data: Buffer; headers: http.OutgoingHttpHeaders; offset: number }>();
  const bytes = 3 * 224 * 224 * 4;
  return (w, i) => {
    let r = per.get(w);
    if (!r) {
      const image = Buffer.alloc(bytes);
      for (let k = 0; k < bytes / 4; k++) image.writeFloatLE(((k * 7919) % 255) / 255, k * 4);
      const req = binaryRequest(
        [{ name: 'data_0', datatype: 'FP32', shape: [3, 224, 224], data: image }],
        ['fc6_1'],
      );
      r = { ...req, offset: req.data.length - bytes };
      per.set(w, r);
    }
    if (miss) {
      r.data.writeFloatLE(w, r.offset);
      r.data.writeFloatLE(i, r.offset + 4);
    }
    return r;
  };
}

function echoRequests(): () => { data: Buffer; headers: http.OutgoingHttpHeaders } {
  // 32 FP32 values: 128 bytes in and out, like simple's two [1,16] INT32 outputs.
  const req = binaryRequest(
    [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 32], data: Buffer.alloc(128) }],
    ['OUTPUT0'],
  );
  return () => req;
}

/** Microseconds to compute one cache key over `bytes` of input (SHA-256, as the cache does). */
function keyCostUs(bytes: number): number {
  const data = Buffer.alloc(bytes, 3);
  const n = bytes > 10_000 ? 200 : 20_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) createHash('sha256').update('header').update(data).digest();
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-cache-'));
  cleanup.push(() => rmSync(work, { recursive: true, force: true }));
  const repo = path.join(work, 'models');
  for (const m of ['simple', 'densenet_onnx']) {
    cpSync(path.join(EXAMPLES, m), path.join(repo, m), { recursive: true });
    const config = path.join(repo, m, 'config.pbtxt');
    const text = readFileSync(config, 'utf8');
    if (!text.includes('response_cache')) writeFileSync(config, `${text}\nresponse_cache { enable: true }\n`);
  }
  // Nereid's own floor: the built-in identity backend (no model runtime, no cache) with the echo's shapes.
  mkdirSync(path.join(repo, 'echo_builtin', '1'), { recursive: true });
  writeFileSync(
    path.join(repo, 'echo_builtin', 'config.pbtxt'),
    'name: "echo_builtin"\nbackend: "identity"\nmax_batch_size: 8\n' +
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' +
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
  );
  const log = path.join(work, 'servers.log');
  const nereid = async (cache: string[]): Promise<string> => {
    const m = await start(
      process.execPath,
      [
        path.join(path.resolve(args.nereid), 'bin/nereid.js'),
        `--model-repository=${repo}`,
        '--http-address=127.0.0.1',
        '--http-port=0',
        '--allow-grpc=false',
        '--allow-metrics=false',
        ...cache,
      ],
      /Started HTTPService at [^:]+:(\d+)/,
      log,
    );
    return `http://127.0.0.1:${m[1]}`;
  };
  const servers: [string, string][] = [['local', await nereid(['--cache-config=local,size=268435456'])]];
  const hasRedis = !spawnSync('redis-server', ['--version']).error;
  if (hasRedis) {
    const port = await freePort();
    await start(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work],
      /Ready to accept connections/,
      log,
    );
    servers.push([
      'redis',
      await nereid(['--cache-config=redis,host=127.0.0.1', `--cache-config=redis,port=${port}`]),
    ]);
  } else {
    process.stderr.write(
      'bench/cache: redis-server not found (scripts/setup-redis.sh); Redis rows left out\n',
    );
  }
  const echoPort = (
    await start(
      process.execPath,
      [path.join(ROOT, 'dist/bench/transport/http-echo.js'), '--port', '0'],
      /listening on (\d+)/,
      log,
    )
  )[1];

  const lines: string[] = [];
  const out = (s: string): void => {
    lines.push(s);
    process.stdout.write(s + '\n');
  };
  const fmt = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : '-');
  out(
    `Response cache, hit vs miss over HTTP (binary tensors), ${SECONDS} s per point, load average ${os.loadavg()[0].toFixed(1)} before, ${os.cpus().length} cores`,
  );
  out('');
  out(
    '| model | cache | concurrency | hit req/s | miss req/s | hit/miss | hit p50 ms | miss p50 ms | hit p99 ms |',
  );
  out('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  const simpleHits = new Map<number, Point>();
  for (const [model, requests] of [
    ['simple', simpleRequests],
    ['densenet_onnx', densenetRequests],
  ] as const) {
    for (const [cache, url] of servers) {
      for (const c of CONCURRENCY) {
        const target = `${url}/v2/models/${model}/infer`;
        process.stderr.write(`bench/cache: ${model} ${cache} c=${c}\n`);
        const hit = await measure(target, c, requests(false));
        const miss = await measure(target, c, requests(true));
        if (model === 'simple' && cache === 'local') simpleHits.set(c, hit);
        out(
          `| ${model} | ${cache} | ${c} | ${fmt(hit.rps)} | ${fmt(miss.rps)} | ${fmt(hit.rps / miss.rps, 2)} | ${fmt(hit.p50, 2)} | ${fmt(miss.p50, 2)} | ${fmt(hit.p99, 2)} |`,
        );
      }
    }
  }
  out('');
  out(
    'Local hit of `simple` against a bare node:http echo of the same size (128 B in, 128 B out), and against ' +
      'Nereid answering the same bytes without a cache (built-in identity backend); goal: the hit within 10 % ' +
      "of the echo's cost",
  );
  out('');
  out(
    '| concurrency | echo req/s | Nereid identity req/s | hit req/s | hit/echo | hit/identity | echo p50 ms | identity p50 ms | hit p50 ms |',
  );
  out('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const [, localUrl] = servers[0];
  for (const c of CONCURRENCY) {
    process.stderr.write(`bench/cache: echo and identity c=${c}\n`);
    const echo = await measure(
      `http://127.0.0.1:${echoPort}/v2/models/identity_fp32/infer`,
      c,
      echoRequests(),
    );
    const identity = await measure(`${localUrl}/v2/models/echo_builtin/infer`, c, echoRequests());
    const hit = simpleHits.get(c)!;
    out(
      `| ${c} | ${fmt(echo.rps)} | ${fmt(identity.rps)} | ${fmt(hit.rps)} | ${fmt(hit.rps / echo.rps, 2)} | ` +
        `${fmt(hit.rps / identity.rps, 2)} | ${fmt(echo.p50, 3)} | ${fmt(identity.p50, 3)} | ${fmt(hit.p50, 3)} |`,
    );
  }
  out('');
  out(
    `Cache key (SHA-256 over the inputs): ${fmt(keyCostUs(128), 2)} µs for simple's 128 B, ${fmt(keyCostUs(602112), 0)} µs for densenet's 602 KB.`,
  );
  if (args.out) writeFileSync(args.out, lines.join('\n') + '\n');
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/cache: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
