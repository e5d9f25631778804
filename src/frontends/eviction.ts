/**
 * Which connection to close when a port is at its connection cap (--grpc-max-connections,
 * --http-max-connections; issue 33). Refusing the newcomer, as both ports did, let an attacker who holds
 * the cap with connections that do nothing (idle sockets, a preface or a request dripped a byte at a
 * time) lock every other client out until the read deadlines freed a place (60 s by default). Instead the
 * open connection that has done the least is closed and the newcomer is served; the attacker's
 * connections are the ones that have done least, so they go first, and holding the cap then costs real
 * requests.
 *
 * "Done the least" is measured in whole requests, because that is what an attacker holding places does
 * not send: bytes alone can be dripped, and time alone would close a busy client's connection before an
 * idle one that arrived earlier. So, in order:
 * 1. connections that never delivered a whole request (message): the fewest request bytes first (a large
 *    upload on its way outranks a drip), the oldest on a tie;
 * 2. then connections that did, but have nothing in flight now: the one quiet the longest first.
 * Never closed: a connection with a request being served (it arrived whole and is not answered yet), and
 * one that delivered or completed a request within ACTIVE_MS (it is in use). When every connection is one
 * of those, the newcomer is refused as before: the server is full of real work.
 */

/**
 * A connection that delivered a whole request or finished one this recently is not closed to make room
 * at the connection cap: it is in use, whatever the idle ones do.
 */
export const ACTIVE_MS = 1_000;

/** What a connection has done, for eviction at the connection cap. */
export interface EvictionRank {
  /** It has delivered at least one whole request (message). */
  readonly progressed: boolean;
  /** Request bytes received, whole requests or not. */
  readonly bytes: number;
  /** When it last made progress (performance.now(); its accept time if it never did). */
  readonly since: number;
}

/** What a port knows of one open connection, for its rank. */
export interface ConnectionProgress {
  /** A request (message) of it arrived whole and is not answered yet. */
  readonly serving: boolean;
  readonly progressed: boolean;
  readonly bytes: number;
  readonly since: number;
}

/**
 * A connection's rank at the cap, or undefined when it may not be closed (the header's "never closed": a
 * request being served, or progress within `activeMs`). The one statement of that rule for both ports.
 */
export function rankConnection(
  c: ConnectionProgress,
  now: number,
  activeMs = ACTIVE_MS,
): EvictionRank | undefined {
  if (c.serving) return undefined;
  if (c.progressed && now - c.since < activeMs) return undefined;
  return { progressed: c.progressed, bytes: c.bytes, since: c.since };
}

/** Negative when `a` should be closed before `b` (the order in the header). */
export function evictionOrder(a: EvictionRank, b: EvictionRank): number {
  if (a.progressed !== b.progressed) return a.progressed ? 1 : -1;
  if (!a.progressed && a.bytes !== b.bytes) return a.bytes - b.bytes;
  return a.since - b.since;
}

/** The candidate to close first, or undefined when none may be closed (every rank undefined). */
export function leastActive<T>(
  candidates: Iterable<T>,
  rank: (c: T) => EvictionRank | undefined,
): T | undefined {
  let victim: T | undefined;
  let worst: EvictionRank | undefined;
  for (const c of candidates) {
    const r = rank(c);
    if (r !== undefined && (worst === undefined || evictionOrder(r, worst) < 0)) {
      victim = c;
      worst = r;
    }
  }
  return victim;
}
