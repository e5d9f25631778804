/**
 * What one wake-up across a process boundary costs on this machine, the floor under every Python-model
 * request at concurrency 1 (bench/README.md, "Concurrency 1 against 4"): a bare ping-pong of 500-byte
 * messages between this Node process and a Python child over the same kind of channel the Python backend
 * uses (a Unix socket pair libuv makes for an extra 'pipe' stdio slot, fd 3), with the child pinned to the
 * CPU this process runs on and then to another one, alternated. Per placement: the median round trip and
 * this process's CPU (user + system) per round trip over the rounds. Nothing of Nereid runs here.
 *
 * Usage: taskset -c 0 node dist/bench/wake-cost.js [--same 0] [--other 1] [--rounds 3] [--count 20000]
 *          [--python .venv-triton/bin/python]
 */
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const ECHO = [
  'import socket',
  's = socket.socket(fileno=3)',
  'buf = bytearray(65536)',
  'while True:',
  '    n = s.recv_into(buf)',
  '    if not n:',
  '        break',
  '    s.sendall(memoryview(buf)[:n])',
].join('\n');

const count = Number(arg('count', '20000'));
const warmup = Math.min(1000, Math.floor(count / 10));
const message = Buffer.alloc(500, 7);

interface Result {
  readonly roundTripUs: number;
  readonly cpuUs: number;
}

function pingPong(cpu: string): Promise<Result> {
  const child = spawn('taskset', ['-c', cpu, arg('python', 'python3'), '-c', ECHO], {
    stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
  });
  const socket = child.stdio[3] as Socket;
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    let n = 0;
    let t0 = 0n;
    let cpu0 = process.cpuUsage();
    socket.on('data', () => {
      n++;
      if (n === warmup) {
        t0 = process.hrtime.bigint();
        cpu0 = process.cpuUsage();
      }
      if (n < count) {
        socket.write(message);
        return;
      }
      const rounds = count - warmup;
      const used = process.cpuUsage(cpu0);
      socket.destroy();
      child.kill();
      resolve({
        roundTripUs: Number(process.hrtime.bigint() - t0) / 1e3 / rounds,
        cpuUs: (used.user + used.system) / rounds,
      });
    });
    socket.write(message);
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const placements = { same: arg('same', '0'), other: arg('other', '1') };
const results: Record<keyof typeof placements, Result[]> = { same: [], other: [] };
const rounds = Number(arg('rounds', '3'));
for (let r = 0; r < rounds; r++) {
  // Alternated (same, other, other, same, ...) so that a change in the machine's load hits both.
  const order: (keyof typeof placements)[] = r % 2 === 0 ? ['same', 'other'] : ['other', 'same'];
  for (const p of order) results[p].push(await pingPong(placements[p]));
}
for (const p of ['same', 'other'] as const) {
  const rs = results[p];
  console.log(
    `child on CPU ${placements[p]} (${p}): round trip ${median(rs.map((x) => x.roundTripUs)).toFixed(1)} µs, ` +
      `this process's CPU ${median(rs.map((x) => x.cpuUs)).toFixed(1)} µs per round trip (median of ${rounds})`,
  );
}
