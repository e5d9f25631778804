/**
 * What the full-size attack scripts (http-attacks.ts, grpc-attacks.ts, stream-fairness.ts) share: the
 * server's ports from its log, its RSS from /proc, health probes on new connections while an attack runs,
 * the time to recover after it, and percentiles.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

export function probe(port: number): Promise<number | undefined> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/v2/health/live', agent: false, timeout: 60_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

export interface Watch {
  stop(): Promise<{ rssPeakMb: number; probes: number[]; failed: number }>;
}

/** Probes health every 100 ms (one at a time) and samples RSS every 100 ms until stopped. */
export function watch(port: number, pid: number): Watch {
  let running = true;
  let rssPeakMb = 0;
  const probes: number[] = [];
  let failed = 0;
  const rssTimer = setInterval(() => {
    rssPeakMb = Math.max(rssPeakMb, rssMb(pid) || 0);
  }, 100);
  const loop = (async () => {
    while (running) {
      const ms = await probe(port);
      if (ms === undefined) failed++;
      else probes.push(ms);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      clearInterval(rssTimer);
      return { rssPeakMb, probes, failed };
    },
  };
}

/** ms from now until a health probe answers within 50 ms. */
export async function recovery(port: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const ms = await probe(port);
    if (ms !== undefined && ms < 50) return Math.round(performance.now() - t0);
    await sleep(50);
  }
}

export function stats(ms: number[]): { p50: number; p99: number; max: number; n: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number): number => Math.round(s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? NaN);
  return { p50: at(0.5), p99: at(0.99), max: Math.round(s[s.length - 1] ?? NaN), n: s.length };
}

/** Waits for a started server's HTTP and gRPC ports in its log, then keeps its output drained. */
export async function listeningPorts(child: ChildProcess): Promise<{ port: number; grpcPort: number }> {
  let log = '';
  const [port, grpcPort] = await new Promise<[number, number]>((resolve, reject) => {
    const look = (d: Buffer): void => {
      log += d.toString();
      const h = /Started HTTPService at [^ ]*:(\d+)/.exec(log);
      const g = /Started GRPCInferenceService at [^ ]*:(\d+)/.exec(log);
      if (h && g) resolve([Number(h[1]), Number(g[1])]);
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', look);
    child.on('exit', (code) => reject(new Error(`nereid exited (${code}) before listening:\n${log}`)));
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return { port, grpcPort };
}
