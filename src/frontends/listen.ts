/**
 * Binding a frontend's server to its address and port, written once for every listener (HTTP, gRPC,
 * metrics, OpenAI, the health port's worker): resolves with the address the kernel gave (port 0 picks a
 * free port), or rejects with the one startup error operators and Triton's tests know — "Socket
 * '<address>:<port>' already in use", or "failed to start the <service> service at ...". The address is
 * printed as given (no brackets around an IPv6 literal), as Triton prints it.
 */
import type { AddressInfo, ListenOptions, Server } from 'node:net';
import { unavailable, type NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';

export interface ListenTarget {
  readonly address: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The listen queue length; absent: Node's default. */
  readonly backlog?: number;
  /** SO_REUSEPORT (Node 22.12+, Linux): protocol threads each bind a listener to the one port. */
  readonly reusePort?: boolean;
}

export interface BoundAddress {
  readonly address: string;
  readonly port: number;
}

/** The error a failed bind reports: `service` names the listener ("HTTP", "GRPC", "Metrics", ...). */
export function listenError(
  service: string,
  target: ListenTarget,
  err: { readonly code?: string | undefined; readonly message: string },
): NereidError {
  return err.code === 'EADDRINUSE'
    ? unavailable(`Socket '${target.address}:${target.port}' already in use`)
    : unavailable(
        `failed to start the ${service} service at ${target.address}:${target.port}: ${err.message}`,
      );
}

/**
 * Starts `server` listening on `target`. The bind error is this promise's alone. Once listening, a server
 * can still emit 'error' (an accept() the kernel refuses: out of file descriptors past libuv's reserve, out
 * of memory), and an 'error' nobody listens to ends the process: with `log`, such errors are logged and the
 * server keeps serving; without it the caller adds its own listener.
 */
export function listen(
  server: Server,
  service: string,
  target: ListenTarget,
  log?: Logger,
): Promise<BoundAddress> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      reject(listenError(service, target, err));
    };
    const onListening = (): void => {
      server.off('error', onError);
      if (log) server.on('error', (err: Error) => log.error(`${service} server error: ${err.message}`));
      const addr = server.address() as AddressInfo;
      resolve({ address: addr.address, port: addr.port });
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({
      port: target.port,
      host: target.address,
      ...(target.backlog !== undefined && { backlog: target.backlog }),
      ...(target.reusePort === true && { reusePort: true }),
    } as ListenOptions);
  });
}
