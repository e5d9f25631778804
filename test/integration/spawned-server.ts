/**
 * Runs the `nereid` command (bin/nereid.js) as a child process on port 0, for tests that need the server
 * in a process of its own: hundreds of client connections that must not share its event loop, or its RSS
 * read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './harness.js';

export interface SpawnedServer {
  readonly url: string;
  readonly port: number;
  /** --http-health-port's port, when the flags asked for one. */
  readonly healthPort: number | undefined;
  readonly child: ChildProcess;
  /** Everything the server printed so far. */
  log(): string;
  /** The server's resident set (VmRSS) and its peak so far (VmHWM), in MB. */
  memoryMb(): { rss: number; peak: number };
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** `cwd`: the server's working folder, against which relative paths in `args` resolve (default: this process's). */
export async function spawnServer(args: string[], options: { cwd?: string } = {}): Promise<SpawnedServer> {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin/nereid.js'),
      '--http-address=127.0.0.1',
      '--http-port=0',
      '--allow-grpc=false',
      '--allow-metrics=false',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(options.cwd !== undefined && { cwd: options.cwd }) },
  );
  let log = '';
  const wantHealth = args.some((a) => a.startsWith('--http-health-port'));
  const ports = await new Promise<{ port: number; health: number | undefined }>((resolve, reject) => {
    const onData = (c: Buffer): void => {
      log += c.toString();
      const m = /Started HTTPService at [^\s:]+:(\d+)/.exec(log);
      const h = /Started HTTP health service at [^\s:]+:(\d+)/.exec(log);
      if (m && (!wantHealth || h)) resolve({ port: Number(m[1]), health: h ? Number(h[1]) : undefined });
    };
    child.stderr.on('data', onData);
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`nereid exited early with ${code}: ${log}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${ports.port}`,
    port: ports.port,
    healthPort: ports.health,
    child,
    log: () => log,
    memoryMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (key: string): number => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
      return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
