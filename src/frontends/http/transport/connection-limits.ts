/**
 * --http-max-connections: a cap on the HTTP connections held open at once, with a clean refusal.
 *
 * Node's own server.maxConnections closes a connection over the cap as soon as it is accepted, so the
 * client sees a reset with no answer, and retries into the same wall. Here a connection over the cap is
 * still served by the HTTP parser, but its requests are answered 503 with `Connection: close` (health
 * checks excepted: a kubelet's probe on a fresh connection must not fail because clients hold the
 * connections), so clients get a reason and the fd is freed as soon as the answer is out.
 *
 * --http-max-connections-per-address does the same for a connection whose client address (IPv4, or IPv6
 * /64) already holds that many (../connection-share.ts), so one address cannot take the whole cap.
 */
import type { Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { ConnectionShare } from '../../connection-share.js';

/** Default --http-max-connections: well above ordinary fleets of clients, well below common fd limits. */
export const DEFAULT_MAX_CONNECTIONS = 8192;

export interface ConnectionLimit {
  /**
   * The 503 body for a connection accepted while the server was at its cap or its address at its share:
   * its requests are refused. undefined: served.
   */
  refusal(socket: Socket): string | undefined;
  /** Connections open now. */
  readonly open: number;
}

export interface ConnectionLimitOptions {
  /** The cap; 0 = none (connections are still counted). */
  readonly max: number;
  /** Connections one address may hold; 0 = no limit. */
  readonly maxPerAddress?: number;
  readonly overCapBody: string;
  readonly overShareBody?: string;
  /** On a TLS server a request's socket is the TLS socket: count from 'secureConnection'. */
  readonly tls?: boolean;
}

/** Counts `server`'s connections and refuses those over the cap or over their address's share. */
export function limitConnections(server: Server | HttpsServer, o: ConnectionLimitOptions): ConnectionLimit {
  let open = 0;
  let refusedOpen = 0;
  const refused = new WeakMap<Socket, string>();
  const share = new ConnectionShare(o.maxPerAddress ?? 0);
  server.on(o.tls === true ? 'secureConnection' : 'connection', (socket: Socket) => {
    open++;
    let body: string | undefined;
    let place: string | null | undefined;
    if (o.max > 0 && open > o.max) body = o.overCapBody;
    else {
      place = share.take(socket.remoteAddress);
      if (place === null) body = o.overShareBody ?? o.overCapBody;
    }
    if (body !== undefined) {
      refused.set(socket, body);
      refusedOpen++;
    }
    socket.once('close', () => {
      open--;
      share.release(place);
      if (body !== undefined) refusedOpen--;
    });
  });
  return {
    // The common case (nobody refused) costs one comparison.
    refusal: (socket) => (refusedOpen > 0 ? refused.get(socket) : undefined),
    get open() {
      return open;
    },
  };
}
