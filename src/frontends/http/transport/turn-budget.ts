/**
 * Bounds the request work the HTTP frontend starts in one event-loop turn, so that accept() and health
 * checks keep getting their turn when many kept-alive connections send requests back to back.
 *
 * Why: libuv (1.45 and later, so Node 20) accepts ONE connection per listening socket per loop iteration
 * and relies on level-triggered polling for the next. An iteration handles every socket that became
 * readable; under closed-loop load from N connections that is about N requests, and with fast refusals
 * (503 "Exceeds maximum queue size") every one of them is ready again at once. Measured with 2,000
 * connections: iterations of 100-300 ms, so about 5 accepts a second, a full listen backlog, SYNs dropped
 * (clients back off 1, 3, 7, 15, 31 s), final ACKs dropped (clients that think they are connected send a
 * request that waits or is reset), and a health check on a new connection waiting 30 s or more.
 *
 * How: once `perTurn` requests have started within `turnMs`, further requests wait in a FIFO (their socket
 * paused, so a pipelining client cannot pile up more). While requests wait, each loop turn starts up to
 * `perTurn` of them (or `turnMs` worth) from setImmediate: the check phase, after the next poll, which is
 * where the next accept happens. A turn is then short whatever the number of connections, the loop comes
 * back to poll often, and waiting requests are served in arrival order. Nothing is refused here and
 * nothing is reordered within a connection. While nothing waits, a request costs a clock read and a
 * counter: no timer, no allocation.
 *
 * Accepting comes first: while requests wait and the last turn accepted a connection (so the listen queue
 * may hold more), a turn starts no request at all, up to `acceptTurns` turns in a row, and the loop goes
 * straight back to poll for the next accept. A burst of new connections is then taken at the loop's idle
 * rate (thousands a second) instead of one per request-laden turn, and a kubelet's probe on a new
 * connection does not wait behind seconds of queued connections.
 */
import type { Socket } from 'node:net';

export interface TurnBudgetOptions {
  /** Requests started per loop turn before the rest wait for a later turn. */
  readonly perTurn: number;
  /** Time a turn may spend starting requests (checked between requests) before the rest wait. */
  readonly turnMs: number;
  /** Turns in a row given to accepting only (see above) before one starts requests again. */
  readonly acceptTurns: number;
}

/** How a waiting request's socket is resumed when its turn comes (the server asks its read limit). */
export type ResumeSocket = (socket: Socket) => void;

/** Measured on the 2-core test machine (bench/overload): see docs/security.md. */
export const DEFAULT_TURN_BUDGET: TurnBudgetOptions = { perTurn: 8, turnMs: 2, acceptTurns: 32 };

export interface TurnBudget {
  /**
   * Starts `start` now when this turn has budget left and nothing waits, or queues it (pausing `socket`)
   * for a later turn.
   */
  admit(socket: Socket, start: () => void): void;
  /** Called for every accepted connection. */
  connected(): void;
  /** Requests waiting for a turn. */
  readonly waiting: number;
}

interface Waiting {
  readonly socket: Socket;
  readonly start: () => void;
}

export function createTurnBudget(
  options: TurnBudgetOptions = DEFAULT_TURN_BUDGET,
  resume: ResumeSocket = (socket) => socket.resume(),
): TurnBudget {
  const { perTurn, turnMs, acceptTurns } = options;
  let used = 0;
  let acceptedSinceTurn = false;
  let acceptOnlyTurns = 0;
  let turnStart = 0;
  let scheduled = false;
  let queue: (Waiting | undefined)[] = [];
  let head = 0;

  const run = (w: Waiting): void => {
    // Node does NOT re-pause a resumed socket for its own pipelining backpressure: the server's resume
    // asks its per-connection read limit (read-limit.ts), which keeps a flooding connection paused.
    resume(w.socket);
    w.start();
  };

  const endTurn = (): void => {
    scheduled = false;
    used = 0;
    if (acceptedSinceTurn && acceptOnlyTurns < acceptTurns) {
      acceptedSinceTurn = false;
      acceptOnlyTurns++;
      schedule();
      return;
    }
    acceptedSinceTurn = false;
    acceptOnlyTurns = 0;
    turnStart = performance.now();
    while (head < queue.length) {
      if (used >= perTurn || (used > 0 && performance.now() - turnStart >= turnMs)) break;
      const w = queue[head]!;
      queue[head++] = undefined;
      used++;
      run(w);
    }
    if (head === queue.length) {
      // Nothing waits: the next poll phase starts a fresh turn.
      queue = [];
      head = 0;
      used = 0;
    } else {
      if (head > 1024 && head * 2 > queue.length) {
        queue = queue.slice(head);
        head = 0;
      }
      schedule();
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(endTurn);
  };

  return {
    admit(socket, start) {
      if (head === queue.length) {
        // Nothing waits: a turn is a window of turnMs, with no timer (a small request pays a clock read).
        const now = performance.now();
        if (now - turnStart >= turnMs) {
          turnStart = now;
          used = 0;
        }
        if (used < perTurn) {
          used++;
          start();
          return;
        }
      }
      socket.pause();
      queue.push({ socket, start });
      schedule();
    },
    connected() {
      acceptedSinceTurn = true;
    },
    get waiting() {
      return queue.length - head;
    },
  };
}
