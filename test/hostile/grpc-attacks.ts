/**
 * The full-size gRPC attacks of issue 33, against a real `nereid` process on loopback, one after the other;
 * for each: the server's RSS peak (from /proc, every 100 ms), the latency of `GET /v2/health/live` on a new
 * connection during the attack (a probe every 100 ms, sequential, 60 s timeout) and the time to recover
 * after the attacker stops (until a probe answers within 50 ms again). Same measurements as
 * http-attacks.ts (its helpers are copied here, since that script runs on import).
 *
 * - drip: `--connections` (default 20,000) gRPC connections, each starting a ModelInfer whose message
 *   arrives one byte every 3 s; reports how many the server refused (connection cap) or ended
 *   (request read deadline), and whether a fresh gRPC call still works during the attack. With
 *   `--addresses N` the connections come from N loopback addresses (127.0.0.2 ...), so the per-address
 *   share no longer stops them before the server's cap, and the probes (from 127.0.0.1) show whether the
 *   cap closes an attacker's connection for a newcomer;
 * - resets: one connection opening and resetting streams (RST_STREAM CANCEL) until the server GOAWAYs;
 *   reports the resets sent, the GOAWAY code and how long the socket stayed open after it;
 * - big: one 300 MiB FP32 ModelInfer from tritonclient.grpc (.venv/bin/python) to an identity model.
 *
 * The client needs as many descriptors as connections: raise `ulimit -n` in the shell first (the server is
 * started under `ulimit -n 65536` where the hard limit allows). Run it on a quiet machine:
 *   npx tsc -p tsconfig.json && (ulimit -n 65536; node dist/test/hostile/grpc-attacks.js \
 *     [--nereid bin/nereid.js] [--attacks drip,resets,big] [--connections 20000] [--seconds 30]
 *     [--addresses 1])
 * Not part of `npm test`: it takes minutes and gigabytes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as h2connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { listeningPorts, recovery, rssMb, sleep, stats, watch } from './attack-kit.js';

const { values } = parseArgs({
  options: {
    nereid: { type: 'string', default: 'bin/nereid.js' },
    attacks: { type: 'string', default: 'drip,resets,big' },
    connections: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '30' },
    addresses: { type: 'string', default: '1' },
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
};

async function startServer(repo: string): Promise<{ child: ChildProcess; port: number; grpcPort: number }> {
  // The server gets as many descriptors as the hard limit allows (up to 65,536), like a production unit.
  const child = spawn(
    'bash',
    [
      '-c',
      'ulimit -n 65536 2>/dev/null || ulimit -n hard; exec "$0" "$@"',
      process.execPath,
      '--initial-heap-size=128',
      values.nereid,
      `--model-repository=${repo}`,
      '--http-address=127.0.0.1',
      '--http-port=0',
      '--grpc-address=127.0.0.1',
      '--grpc-port=0',
      '--allow-metrics=false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return { child, ...(await listeningPorts(child)) };
}

const INFER = '/inference.GRPCInferenceService/ModelInfer';
const GRPC_HEADERS = { ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers' };

/** A ServerLive call on a new connection: true when it answers grpc-status 0 within 10 s. */
function grpcLive(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = h2connect(`http://127.0.0.1:${port}`);
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), 10_000);
    s.on('error', () => done(false));
    const req = s.request({ ...GRPC_HEADERS, ':path': '/inference.GRPCInferenceService/ServerLive' });
    req.on('error', () => done(false));
    req.on('trailers', (tr) => {
      clearTimeout(t);
      done((tr as Record<string, unknown>)['grpc-status'] === '0');
    });
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) {
        clearTimeout(t);
        done(h['grpc-status'] === '0');
      }
    });
    req.resume();
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

async function drip(
  port: number,
  count: number,
  seconds: number,
  addresses: number,
): Promise<Record<string, unknown>> {
  const sessions: ClientHttp2Session[] = [];
  const calls: ClientHttp2Stream[] = [];
  let opened = 0;
  let refused = 0;
  let ended = 0;
  const statuses: Record<string, number> = {};
  for (let i = 0; i < count; i++) {
    // One address: the default (127.0.0.1, as the probes). More: 127.0.0.2, .3, ... in turn.
    const localAddress = addresses > 1 ? `127.0.0.${2 + (i % addresses)}` : undefined;
    const s = h2connect(
      `http://127.0.0.1:${port}`,
      localAddress === undefined
        ? {}
        : { createConnection: () => netConnect({ host: '127.0.0.1', port, localAddress }) },
    );
    s.on('error', () => undefined);
    s.on('goaway', () => refused++);
    s.on('connect', () => opened++);
    const req = s.request({ ...GRPC_HEADERS, ':path': INFER });
    req.on('error', () => undefined);
    const status = (v: unknown): void => {
      ended++;
      statuses[String(v)] = (statuses[String(v)] ?? 0) + 1;
    };
    req.on('trailers', (tr) => status((tr as Record<string, unknown>)['grpc-status']));
    req.on('response', (h) => h['grpc-status'] !== undefined && status(h['grpc-status']));
    req.resume();
    req.write(Buffer.from([0, 0, 0, 0, 100])); // declares 100 bytes, sends them one at a time
    sessions.push(s);
    calls.push(req);
    if (i % 500 === 499) await sleep(50);
  }
  const t0 = performance.now();
  let liveDuring = 0;
  let liveChecks = 0;
  while (performance.now() - t0 < seconds * 1000) {
    for (const c of calls) if (!c.destroyed && !c.closed) c.write(Buffer.from([0])); // one more byte each
    liveChecks++;
    if (await grpcLive(port)) liveDuring++;
    await sleep(3000);
  }
  const stillOpen = sessions.filter((s) => !s.destroyed && !s.closed).length;
  for (const s of sessions) s.destroy();
  return {
    connections: count,
    addresses,
    opened,
    refused,
    callsEnded: ended,
    statuses,
    stillOpen,
    grpcLiveDuring: `${liveDuring}/${liveChecks}`,
  };
}

async function resets(port: number): Promise<Record<string, unknown>> {
  const s = h2connect(`http://127.0.0.1:${port}`);
  s.on('error', () => undefined);
  let sent = 0;
  let goaway: number | undefined;
  let goawayAt = 0;
  s.on('goaway', (code) => {
    goaway = code as number;
    goawayAt = performance.now();
  });
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  await new Promise<void>((r) => s.once('connect', () => r()));
  while (goaway === undefined && !s.destroyed && sent < 100_000) {
    for (let i = 0; i < 50 && !s.destroyed && goaway === undefined; i++) {
      try {
        const req = s.request({ ...GRPC_HEADERS, ':path': '/inference.GRPCInferenceService/ServerLive' });
        req.on('error', () => undefined);
        req.close(constants.NGHTTP2_CANCEL);
        sent++;
      } catch {
        break;
      }
    }
    await sleep(1);
  }
  await Promise.race([closed, sleep(60_000)]);
  return {
    resetsSent: sent,
    goawayCode: goaway,
    socketOpenAfterGoawayMs: goaway === undefined ? undefined : Math.round(performance.now() - goawayAt),
  };
}

async function big(grpcPort: number, mib: number): Promise<Record<string, unknown>> {
  const script = [
    'import sys, time, numpy as np, tritonclient.grpc as g',
    `c = g.InferenceServerClient("127.0.0.1:${grpcPort}")`,
    `n = ${mib} * 1024 * 1024 // 4`,
    't = g.InferInput("INPUT0", [n], "FP32"); t.set_data_from_numpy(np.ones(n, np.float32))',
    't0 = time.time()',
    'try:',
    '    r = c.infer("big", [t]); print("ok", r.as_numpy("OUTPUT0").shape[0] == n, round(time.time() - t0, 1))',
    'except Exception as e:',
    '    print("error", str(e)[:200].replace(chr(10), " "))',
  ].join('\n');
  // Asynchronous, so the health probes go on while the request runs.
  const py = spawn('.venv/bin/python', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  py.stdout.on('data', (d: Buffer) => (out += d.toString()));
  py.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => py.once('exit', r));
  const result = out.split('\n').find((l) => l.startsWith('ok') || l.startsWith('error')) ?? out.slice(-300);
  return { mib, result };
}

async function main(): Promise<void> {
  const repo = mkdtempSync(path.join(tmpdir(), 'nereid-hostile-grpc-'));
  for (const [name, config] of Object.entries(MODELS)) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
  }
  const { child, port, grpcPort } = await startServer(repo);
  const pid = child.pid!;
  try {
    await sleep(2000);
    for (const attack of values.attacks.split(',')) {
      const rssBeforeMb = rssMb(pid);
      const w = watch(port, pid);
      let detail: Record<string, unknown>;
      if (attack === 'drip')
        detail = await drip(grpcPort, Number(values.connections), attackSeconds, Number(values.addresses));
      else if (attack === 'resets') detail = await resets(grpcPort);
      else if (attack === 'big') detail = await big(grpcPort, 300);
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
        grpcLiveAfter: await grpcLive(grpcPort),
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
