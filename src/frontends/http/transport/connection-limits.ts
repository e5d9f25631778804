/**
 * --http-max-connections: a cap on the HTTP connections held open at once, with a clean refusal.
 *
 * Node's own server.maxConnections closes a connection over the cap as soon as it is accepted, so the
 * client sees a reset with no answer, and retries into the same wall. Here a connection over the cap is
 * still served by the HTTP parser, but its requests are answered 503 with `Connection: close` (health
 * checks excepted: a kubelet's probe on a fresh connection must not fail because clients hold the
 * connections), so clients get a reason and the fd is freed as soon as the answer is out.
 *
 * At the cap a newcomer is refused only when no open connection may be closed to make room: otherwise
 * the one that has done the least (../eviction.ts: no whole request yet, fewest bytes; else quiet the
 * longest) is closed — destroyed, as Node closes an idle keep-alive socket — and the newcomer is served.
 * A connection with a request being served (its request arrived whole and is not answered) or one that
 * finished a request within ACTIVE_MS is never closed for this.
 *
 * --http-max-connections-per-address does the same for a connection whose client address (IPv4, or IPv6
 * /64) already holds that many (../connection-share.ts), so one address cannot take the whole cap.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { ConnectionShare } from '../../connection-share.js';
import { ACTIVE_MS, leastActive, rankConnection, type EvictionRank } from '../../eviction.js';

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
  /** Connections closed to make room at the cap so far. */
  readonly evicted: number;
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
  /** A connection that finished a request this recently is not closed at the cap (tests: ACTIVE_MS). */
  readonly activeMs?: number;
}

/** One open connection, for the choice at the cap. */
interface Held {
  readonly socket: Socket;
  /** Requests whose headers arrived and whose answers are not finished. */
  readonly requests: Set<IncomingMessage>;
  /** A request of it was answered; when it last was (its accept time before). */
  progressed: boolean;
  since: number;
}

function rank(h: Held, now: number, activeMs: number): EvictionRank | undefined {
  // A request that arrived whole (headers and body) is being served.
  let serving = false;
  for (const req of h.requests) serving ||= req.complete;
  return rankConnection(
    { serving, progressed: h.progressed, bytes: h.socket.bytesRead, since: h.since },
    now,
    activeMs,
  );
}

/** Counts `server`'s connections and refuses those over the cap or over their address's share. */
export function limitConnections(server: Server | HttpsServer, o: ConnectionLimitOptions): ConnectionLimit {
  let open = 0;
  let refusedOpen = 0;
  let evicted = 0;
  /** Closed to make room and not closed yet: they no longer count against the cap. */
  let evicting = 0;
  const refused = new WeakMap<Socket, string>();
  const share = new ConnectionShare(o.maxPerAddress ?? 0);
  const held = new Map<Socket, Held>();
  const activeMs = o.activeMs ?? ACTIVE_MS;
  const evictOne = (): boolean => {
    const now = performance.now();
    const victim = leastActive(held.values(), (h) => rank(h, now, activeMs));
    if (victim === undefined) return false;
    held.delete(victim.socket);
    evicting++;
    evicted++;
    victim.socket.once('close', () => evicting--);
    victim.socket.destroy();
    return true;
  };
  server.on(o.tls === true ? 'secureConnection' : 'connection', (socket: Socket) => {
    const live = open - evicting;
    open++;
    let body: string | undefined;
    // The address's share first, so a connection refused for it never costs another one its place.
    let place = share.take(socket.remoteAddress);
    if (place === null) body = o.overShareBody ?? o.overCapBody;
    else if (o.max > 0 && live >= o.max && !evictOne()) {
      body = o.overCapBody;
      share.release(place);
      place = undefined;
    }
    if (body !== undefined) {
      refused.set(socket, body);
      refusedOpen++;
    }
    held.set(socket, { socket, requests: new Set(), progressed: false, since: performance.now() });
    socket.once('close', () => {
      open--;
      held.delete(socket);
      share.release(place);
      if (body !== undefined) refusedOpen--;
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const h = held.get(req.socket);
    if (h === undefined) return;
    h.requests.add(req);
    res.once('close', () => {
      h.requests.delete(req);
      h.progressed = true;
      h.since = performance.now();
    });
  });
  return {
    // The common case (nobody refused) costs one comparison.
    refusal: (socket) => (refusedOpen > 0 ? refused.get(socket) : undefined),
    get open() {
      return open;
    },
    get evicted() {
      return evicted;
    },
  };
}
