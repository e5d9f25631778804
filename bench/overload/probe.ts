/**
 * The overload benchmark's health prober (a child process of drive.ts, so its timing is not the load
 * generator's): `GET /v2/health/ready` at a fixed rate, in up to three series —
 * - fresh: a NEW connection for every probe, the way a kubelet probes (connect + request + answer);
 * - kept: one kept-alive connection, one probe after the other (re-opened if it breaks);
 * - healthPort: new connections to --http-health-port, when the server has one.
 * A probe counts from the connect (or the write, kept) to the end of the answer. One without an answer
 * within --timeout-seconds fails. Prints one JSON line: per series n, p50, p99, max (ms), failures, the
 * statuses seen and the slowest probes with the second they started at.
 */
import { parseArgs } from 'node:util';
import { connect, requestHead, summarize, type RawConnection } from '../../test/integration/raw-http.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    'health-port': { type: 'string' },
    hz: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    'timeout-seconds': { type: 'string', default: '60' },
  },
});
const host = values.host;
const port = Number(values.port);
const healthPort = values['health-port'] === undefined ? undefined : Number(values['health-port']);
const periodMs = 1000 / Number(values.hz);
const seconds = Number(values.seconds);
const timeoutMs = Number(values['timeout-seconds']) * 1000;

const READY = '/v2/health/ready';
const closeProbe = requestHead('GET', READY, 0, { Connection: 'close' });
const keepProbe = requestHead('GET', READY, 0);
const t0 = performance.now();

class Series {
  readonly ms: number[] = [];
  readonly slowest: [number, number][] = [];
  failed = 0;
  readonly failures: Record<string, number> = {};
  readonly statuses: Record<string, number> = {};
  outstanding = 0;

  ok(startedAt: number, ms: number, status: number): void {
    this.ms.push(ms);
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    this.slowest.push([Math.round((startedAt - t0) / 100) / 10, Math.round(ms)]);
    this.slowest.sort((a, b) => b[1] - a[1]);
    this.slowest.length = Math.min(this.slowest.length, 5);
  }

  fail(reason: string): void {
    this.failed++;
    this.failures[reason] = (this.failures[reason] ?? 0) + 1;
  }

  report(): object {
    return {
      ...summarize(this.ms),
      failed: this.failed,
      failures: this.failures,
      statuses: this.statuses,
      slowest: this.slowest,
    };
  }
}

/** One probe on a new connection to `p`. */
async function freshProbe(p: number, series: Series): Promise<void> {
  const start = performance.now();
  series.outstanding++;
  const timer = new Promise<string>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
  const attempt = (async (): Promise<string | { status: number }> => {
    const c = await connect(p, host, timeoutMs);
    if (typeof c === 'string') return c;
    const o = await c.send(closeProbe);
    c.close();
    return o.kind === 'response' ? { status: o.status } : o.reason;
  })();
  const r = await Promise.race([attempt, timer]);
  series.outstanding--;
  if (typeof r === 'string') series.fail(r);
  else series.ok(start, performance.now() - start, r.status);
}

async function keptLoop(series: Series, until: number): Promise<void> {
  let c: RawConnection | undefined;
  while (performance.now() < until) {
    const start = performance.now();
    if (c === undefined || c.closed) {
      const opened = await connect(port, host, timeoutMs);
      if (typeof opened === 'string') {
        series.fail(`connect: ${opened}`);
        await new Promise((r) => setTimeout(r, periodMs));
        continue;
      }
      c = opened;
    }
    const sentAt = performance.now();
    const o = await c.send(keepProbe);
    if (o.kind === 'response') series.ok(sentAt, o.ms, o.status);
    else series.fail(o.reason);
    const wait = periodMs - (performance.now() - start);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  c?.close();
}

async function main(): Promise<void> {
  const fresh = new Series();
  const kept = new Series();
  const health = new Series();
  const until = performance.now() + seconds * 1000;
  const keptDone = keptLoop(kept, until);
  const probes: Promise<void>[] = [];
  const timer = setInterval(() => {
    probes.push(freshProbe(port, fresh));
    if (healthPort !== undefined) probes.push(freshProbe(healthPort, health));
  }, periodMs);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(timer);
  await Promise.all([keptDone, ...probes]);
  const out: Record<string, object> = { fresh: fresh.report(), kept: kept.report() };
  if (healthPort !== undefined) out.healthPort = health.report();
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

void main();
