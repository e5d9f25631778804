/**
 * The protocol threads of a port (--http-thread-count: ../http/threads/, --grpc-infer-thread-count:
 * ../grpc/threads/), as the main thread sees them: N workers, each with a listener of its own on the port
 * (SO_REUSEPORT: the kernel spreads connections over them). The first binds (port 0 picks one), the others
 * join it on the port it got; drain and close go to each; their messages arrive here one turn's batch at a
 * time and the ones that are not about the listener go to the port's own receiver.
 *
 * SO_REUSEPORT needs net.Server.listen's `reusePort` (Node 22.12+ and 23.1+, on Linux): on an older Node
 * the flags are ignored with a warning (threadsRefusal).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../common/logger.js';
import { listenError, type BoundAddress, type ListenTarget } from '../listen.js';
import { Coalescer, type TurnBatch, type ThreadControl, type ThreadStatus } from './wire.js';

/** Whether this Node can bind several listeners to one port (net.Server.listen `reusePort`). */
export function threadsSupported(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return (
    process.platform === 'linux' &&
    (major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12))
  );
}

/**
 * Why `flag` cannot be honoured here (an old Node, or TLS on the port), or undefined when it can; `service`
 * is what is then served on the main thread ("HTTP", "gRPC").
 */
export function threadsRefusal(
  flag: string,
  service: string,
  tls: boolean,
  version?: string,
): string | undefined {
  if (!threadsSupported(version)) {
    return `${flag} needs Node 22.12+ (or 23.1+) on Linux for SO_REUSEPORT; this is Node ${version ?? process.versions.node} on ${process.platform}: ${service} is served on the main thread`;
  }
  if (tls)
    return `${flag} is not supported with ${service} over TLS: ${service} is served on the main thread`;
  return undefined;
}

/**
 * A per-server cap split over `threads` threads so that their sum stays within it (each at least 1); 0
 * (no cap) stays 0. Each thread applies its share to the connections it accepted.
 */
export function capShare(cap: number, threads: number): number {
  return cap <= 0 ? 0 : Math.max(1, Math.floor(cap / threads));
}

export interface ProtocolThread<ToThread extends { readonly t: string }> {
  readonly worker: Worker;
  /** Messages to the thread, one turn's as one postMessage. */
  readonly post: Coalescer<ToThread | ThreadControl>;
}

export interface ThreadSpec<ToMain, ToThread extends { readonly t: string }> {
  /** The worker's module. */
  readonly url: URL;
  /** The worker's name (shown by debuggers and in thread lists). */
  readonly name: string;
  readonly count: number;
  /** For the bind error ("HTTP", "GRPC"), as listen.ts names listeners. */
  readonly service: string;
  readonly target: ListenTarget;
  /** The workerData of thread `index`, which listens on `port`. */
  readonly workerData: (port: number, index: number) => unknown;
  /** A message that is not about the listener. */
  readonly receive: (thread: ProtocolThread<ToThread>, m: ToMain) => void;
  readonly log: Logger;
}

type FromThread<ToMain> = ToMain | ThreadStatus | TurnBatch<ToMain | ThreadStatus>;

export class ProtocolThreads<ToMain extends { readonly t: string }, ToThread extends { readonly t: string }> {
  readonly threads: ProtocolThread<ToThread>[] = [];

  constructor(private readonly spec: ThreadSpec<ToMain, ToThread>) {}

  /** Starts the threads; resolves once all listen, with the port's address. */
  async start(): Promise<BoundAddress> {
    const first = await this.one(this.spec.target.port, 0);
    await Promise.all(Array.from({ length: this.spec.count - 1 }, (_, i) => this.one(first.port, i + 1)));
    return first;
  }

  drain(): void {
    for (const r of this.threads) r.worker.postMessage({ t: 'drain' } satisfies ThreadControl);
  }

  /** Asks each thread to close its listener; resolves when all have (or have exited). */
  async close(): Promise<void> {
    await Promise.all(
      this.threads.map(
        (r) =>
          new Promise<void>((resolve) => {
            const done = (): void => resolve();
            r.worker.once('exit', done);
            r.worker.on('message', (m: FromThread<ToMain>) => {
              if (m.t === 'closed') void r.worker.terminate().then(done, done);
            });
            r.worker.postMessage({ t: 'close' } satisfies ThreadControl);
          }),
      ),
    );
  }

  private one(port: number, index: number): Promise<BoundAddress> {
    const { spec } = this;
    return new Promise((resolve, reject) => {
      const worker = new Worker(spec.url, { workerData: spec.workerData(port, index), name: spec.name });
      const post = new Coalescer<ToThread | ThreadControl>((m, transfer) => worker.postMessage(m, transfer));
      const r: ProtocolThread<ToThread> = { worker, post };
      this.threads.push(r);
      const receive = (m: FromThread<ToMain>): void => {
        switch (m.t) {
          case 'batch':
            for (const item of (m as TurnBatch<ToMain | ThreadStatus>).items) receive(item);
            break;
          case 'listening': {
            const s = m as ThreadStatus & { t: 'listening' };
            resolve({ address: s.address, port: s.port });
            break;
          }
          case 'error':
            reject(listenError(spec.service, { ...spec.target, port }, m as ThreadStatus & { t: 'error' }));
            break;
          case 'closed':
            break;
          default:
            spec.receive(r, m as ToMain);
        }
      };
      worker.on('message', receive);
      worker.on('error', (err) => {
        spec.log.error(`${spec.service} thread failed: ${err.message}`);
        reject(err);
      });
    });
  }
}
