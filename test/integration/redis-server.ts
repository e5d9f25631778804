/**
 * A real `redis-server` for the Redis cache tests (Debian's package; scripts/setup-redis.sh installs it as
 * root when missing): started on a free loopback port with no persistence, in a folder of its own, and
 * stopped (or killed, to test an outage) by the test. Never the system service.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface RedisOptions {
  readonly password?: string;
  /** e.g. '2mb': with allkeys-lru, Redis evicts keys beyond it. */
  readonly maxmemory?: string;
}

export interface RedisServer {
  readonly port: number;
  /** Kills it at once (SIGKILL): an outage, as a crashed Redis looks to clients. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Why the Redis tests cannot run here, or undefined when they can. */
export function redisUnavailable(): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return 'redis-server is not installed (bash scripts/setup-redis.sh installs it as root on Debian)';
  }
  return undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Sends one inline command and reads the first reply line (enough to see the server answer). */
function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(password ? `AUTH ${password}\r\nPING\r\n` : 'PING\r\n'));
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (text.includes('+PONG')) done(true);
      else if (text.includes('-')) done(false);
    });
  });
}

export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    ...(options.password !== undefined ? ['--requirepass', options.password] : []),
    ...(options.maxmemory !== undefined
      ? ['--maxmemory', options.maxmemory, '--maxmemory-policy', 'allkeys-lru']
      : []),
  ];
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let exited = false;
    proc.once('exit', () => (exited = true));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`redis-server exited at start (port ${port})`);
      if (await ping(port, options.password)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    proc.kill('SIGKILL');
    throw new Error(`redis-server did not answer on port ${port}`);
  };
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill(signal);
    });
  };
  await launch();
  return {
    port,
    kill: () => end('SIGKILL'),
    restart: async () => {
      await end('SIGKILL');
      await launch();
    },
    stop: async () => {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
