/**
 * The overload benchmark's load generator (a child process of drive.ts): small JSON inference requests to
 * one model over raw keep-alive connections, in one of two shapes:
 * - closed: `connections` connections opened at once, each sending its next request as soon as it has an
 *   answer (a 503 included) — the 2,000-connection case of issue 23;
 * - open: requests at `rate` per second whatever the answers, each on an idle connection of a pool of
 *   `connections` (a request with no idle connection is counted as `unsent`) — "2x capacity".
 * `churn` is the fraction of requests sent with `Connection: close`, so that many connections are new.
 * After `seconds` it stops sending and waits up to `drainSeconds` for the requests in flight. It prints one
 * JSON line: answers by status, requests lost (connection reset/closed or no answer with the request in
 * flight), connects that failed, and latency of accepted (200) requests.
 */
import { parseArgs } from 'node:util';
import {
  connect,
  requestHead,
  summarize,
  type Outcome,
  type RawConnection,
} from '../../test/integration/raw-http.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    model: { type: 'string' },
    mode: { type: 'string', default: 'closed' },
    connections: { type: 'string', default: '64' },
    rate: { type: 'string', default: '0' },
    seconds: { type: 'string', default: '10' },
    churn: { type: 'string', default: '0' },
    'drain-seconds': { type: 'string', default: '30' },
    'timeout-seconds': { type: 'string', default: '120' },
  },
});
const host = values.host;
const port = Number(values.port);
const model = values.model!;
const mode = values.mode;
const connections = Number(values.connections);
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const churn = Number(values.churn);
const timeoutMs = Number(values['timeout-seconds']) * 1000;

// One FP32 row of 16, as the benchmark's models take it (dims [16], max_batch_size 8).
const json = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: Array.from({ length: 16 }, (_, i) => i) },
    ],
  }),
);
const path = `/v2/models/${model}/infer`;
const keepRequest = [requestHead('POST', path, json.length, { 'Content-Type': 'application/json' }), json];
const closeRequest = [
  requestHead('POST', path, json.length, { 'Content-Type': 'application/json', Connection: 'close' }),
  json,
];

const counts = {
  sent: 0,
  ok: 0,
  refused503: 0,
  otherStatus: {} as Record<string, number>,
  lost: 0,
  lostReasons: {} as Record<string, number>,
  connectErrors: {} as Record<string, number>,
  connects: 0,
  unsent: 0,
};
const accepted: number[] = [];
const refused: number[] = [];
let stopping = false;
let inFlight = 0;
let drained: (() => void) | undefined;

function record(o: Outcome): void {
  inFlight--;
  if (o.kind === 'lost') {
    counts.lost++;
    counts.lostReasons[o.reason] = (counts.lostReasons[o.reason] ?? 0) + 1;
  } else if (o.status === 200) {
    counts.ok++;
    accepted.push(o.ms);
  } else if (o.status === 503) {
    counts.refused503++;
    refused.push(o.ms);
  } else {
    counts.otherStatus[o.status] = (counts.otherStatus[o.status] ?? 0) + 1;
  }
  if (stopping && inFlight === 0) drained?.();
}

async function open(): Promise<RawConnection | undefined> {
  const c = await connect(port, host, timeoutMs);
  if (typeof c === 'string') {
    counts.connectErrors[c] = (counts.connectErrors[c] ?? 0) + 1;
    return undefined;
  }
  counts.connects++;
  return c;
}

async function send(c: RawConnection): Promise<Outcome> {
  const closing = churn > 0 && Math.random() < churn;
  counts.sent++;
  inFlight++;
  const o = await c.send(closing ? closeRequest : keepRequest);
  record(o);
  return o;
}

/** One closed-loop client: a connection, re-opened whenever it closes, sending back to back. */
async function closedClient(): Promise<void> {
  while (!stopping) {
    const c = await open();
    if (c === undefined) {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    while (!stopping && !c.closed) await send(c);
    c.close();
  }
}

async function runOpen(): Promise<void> {
  const idle: RawConnection[] = [];
  let opening = 0;
  const refill = (): void => {
    while (!stopping && idle.length + opening + inFlight < connections) {
      opening++;
      void open().then((c) => {
        opening--;
        if (c !== undefined) idle.push(c);
      });
    }
  };
  refill();
  const start = performance.now();
  const tick = (): void => {
    if (stopping) return;
    const target = Math.floor(((performance.now() - start) / 1000) * rate);
    for (let due = target - counts.sent - counts.unsent; due > 0; due--) {
      const c = idle.pop();
      if (c === undefined || c.closed) {
        counts.unsent++;
        continue;
      }
      void send(c).then(() => {
        if (!c.closed && !stopping) idle.push(c);
        else c.close();
        refill();
      });
    }
    setTimeout(tick, 2);
  };
  tick();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stopping = true;
  for (const c of idle) c.close();
}

async function main(): Promise<void> {
  const t0 = performance.now();
  if (mode === 'closed') {
    for (let i = 0; i < connections; i++) void closedClient();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    stopping = true;
  } else if (mode === 'open') {
    await runOpen();
  } else {
    throw new Error(`--mode must be closed or open, got '${mode}'`);
  }
  const window = (performance.now() - t0) / 1000;
  if (inFlight > 0) {
    await Promise.race([
      new Promise<void>((r) => (drained = r)),
      new Promise((r) => setTimeout(r, Number(values['drain-seconds']) * 1000)),
    ]);
  }
  // Requests still without an answer after the drain are lost too.
  if (inFlight > 0) {
    counts.lost += inFlight;
    counts.lostReasons['no answer by the end of the drain'] = inFlight;
  }
  const result = {
    ...counts,
    windowSeconds: Math.round(window * 10) / 10,
    acceptedPerSecond: Math.round(counts.ok / window),
    acceptedMs: summarize(accepted),
    refusedMs: summarize(refused),
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

void main();
