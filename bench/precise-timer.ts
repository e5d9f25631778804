/**
 * How late short timers fire (src/core/scheduling/precise-timer.ts, used by the dynamic batcher's queue
 * delay) compared with setTimeout, side by side in one run: the median and p99 lateness of `--count`
 * sequential timers of `--delay-us`, each started at a random phase of Node's millisecond clock. The speed
 * claim the unit tests used to assert lives here; the tests keep the "never early" half.
 *
 * Usage: node dist/bench/precise-timer.js [--count 200] [--delay-us 2000]
 */
import os from 'node:os';
import { PreciseTimers } from '../src/core/scheduling/precise-timer.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const count = Number(arg('count', '200'));
const delayNs = BigInt(Number(arg('delay-us', '2000')) * 1000);
const now = (): bigint => process.hrtime.bigint();

function lateness(set: (cb: () => void) => unknown): Promise<number> {
  return new Promise((resolve) => {
    const due = now() + delayNs;
    set(() => resolve(Number(now() - due) / 1e6));
  });
}

/** Busy-waits up to 1 ms so each timer starts at a different point of the millisecond clock. */
function randomPhase(): void {
  const until = now() + BigInt(Math.floor(Math.random() * 1e6));
  while (now() < until);
}

const quantile = (xs: number[], q: number): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];

const timers = new PreciseTimers();
await lateness((cb) => timers.set(cb, delayNs)); // start the worker
const precise: number[] = [];
const plain: number[] = [];
for (let i = 0; i < count; i++) {
  randomPhase();
  precise.push(await lateness((cb) => timers.set(cb, delayNs)));
  randomPhase();
  plain.push(await lateness((cb) => setTimeout(cb, Number(delayNs / 1_000_000n))));
}
await timers.close();
const row = (name: string, xs: number[]): string =>
  `| ${name} | ${quantile(xs, 0.5).toFixed(3)} | ${quantile(xs, 0.99).toFixed(3)} | ${xs.filter((x) => x < 0).length} |`;
console.log(`${count} sequential ${Number(delayNs) / 1e6} ms timers, load ${os.loadavg()[0].toFixed(2)}`);
console.log('| timer | median late (ms) | p99 late (ms) | fired early |');
console.log('|---|---:|---:|---:|');
console.log(row('PreciseTimers', precise));
console.log(row('setTimeout', plain));
