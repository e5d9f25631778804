/**
 * --http-max-connections: a cap on the HTTP connections held open at once, with a clean refusal.
 *
 * Node's own server.maxConnections closes a connection over the cap as soon as it is accepted, so the
 * client sees a reset with no answer, and retries into the same wall. Here a connection over the cap is
 * still served by the HTTP parser, but its requests are answered 503 with `Connection: close` (health
 * checks excepted: a kubelet's probe on a fresh connection must not fail because clients hold the
 * connections), so clients get a reason and the fd is freed as soon as the answer is out.
 */
import type { Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';

/** Default --http-max-connections: well above ordinary fleets of clients, well below common fd limits. */
export const DEFAULT_MAX_CONNECTIONS = 8192;

export interface ConnectionLimit {
  /** True for a connection accepted while the server was at its cap: its requests are refused. */
  isOverCap(socket: Socket): boolean;
  /** Connections open now. */
  readonly open: number;
}

/**
 * Counts `server`'s connections; `max` 0 = no cap (connections are still counted). On a TLS server a
 * request's socket is the TLS socket, so connections are counted from 'secureConnection' there.
 */
export function limitConnections(server: Server | HttpsServer, max: number, tls = false): ConnectionLimit {
  let open = 0;
  let overCapOpen = 0;
  const overCap = new WeakSet<Socket>();
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    const refused = max > 0 && open >= max;
    open++;
    if (refused) {
      overCap.add(socket);
      overCapOpen++;
    }
    socket.once('close', () => {
      open--;
      if (refused) overCapOpen--;
    });
  });
  return {
    // The common case (nobody over the cap) costs one comparison.
    isOverCap: (socket) => overCapOpen > 0 && overCap.has(socket),
    get open() {
      return open;
    },
  };
}
