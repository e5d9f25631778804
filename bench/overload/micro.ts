/**
 * What the overload protections add to a small request, measured in-process without sockets (so that a
 * busy machine disturbs it least): the decode of a small JSON inference body directly, and through
 * JsonPool (its admission check and its async wrapper, the path every inference request now takes), and
 * the turn budget's admit (with a budget it never reaches, so nothing queues). Best of several runs, in ns
 * of process CPU time per call (CPU time rather than
 * wall time: a descheduled process does not count).
 *
 * Usage: node dist/bench/overload/micro.js
 */
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { decodeInferRequest } from '../../src/frontends/http/infer-codec.js';
import { JsonPool } from '../../src/frontends/http/json-pool.js';
import { createTurnBudget, DEFAULT_TURN_BUDGET } from '../../src/frontends/http/transport/turn-budget.js';

const body = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: Array.from({ length: 16 }, (_, i) => i) },
    ],
  }),
);
const options = { modelName: 'small', maxInputSize: 1 << 26 };
const req = {
  headers: { 'content-length': String(body.length), 'content-type': 'application/json' },
} as unknown as IncomingMessage;
const pool = new JsonPool();

async function best(n: number, fn: () => unknown): Promise<number> {
  let bestNs = Infinity;
  for (let run = 0; run < 3; run++) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const r = fn();
      if (r instanceof Promise) await r;
    }
    const used = process.cpuUsage(t0);
    const ns = ((used.user + used.system) * 1000) / n;
    bestNs = Math.min(bestNs, ns);
  }
  return bestNs;
}

async function main(): Promise<void> {
  // Interleaved rounds, best of each: a busy machine disturbs one round, not the minimum.
  const results = new Map<string, number>();
  const keep = (label: string, ns: number): void => {
    results.set(label, Math.min(results.get(label) ?? Infinity, ns));
  };
  const turns = createTurnBudget({ ...DEFAULT_TURN_BUDGET, perTurn: Number.MAX_SAFE_INTEGER });
  const socket = new Socket();
  let started = 0;
  for (let round = 0; round < 5; round++) {
    keep(
      'decodeInferRequest (the decode alone)',
      await best(200_000, () => decodeInferRequest(body, undefined, options)),
    );
    keep(
      "JsonPool.admit + decodeInfer + release (the route's path for a small body)",
      await best(200_000, () => {
        const ticket = pool.admit(req, true);
        try {
          return pool.decodeInfer(body, undefined, options, ticket);
        } finally {
          ticket.release();
        }
      }),
    );
    keep('a no-op call (loop baseline)', await best(1_000_000, () => started++));
    keep(
      'turn budget admit, nothing waiting',
      await best(1_000_000, () => turns.admit(socket, () => started++)),
    );
  }
  for (const [label, ns] of results) process.stdout.write(`${label}: ${ns.toFixed(0)} ns\n`);
  socket.destroy();
  await pool.close();
}

void main();
