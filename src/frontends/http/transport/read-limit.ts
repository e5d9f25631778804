/**
 * A per-connection read limit for the HTTP frontend: a connection that pipelines requests and does not
 * read its answers stops being read, and stays unread until it drains them.
 *
 * Why: Node pauses a pipelining socket itself only while its queued responses exceed the socket's
 * highWaterMark, and anything that calls socket.resume() afterwards (the turn budget, a body read, Node's
 * own 'drain' handler) starts reading again without looking at what is still unanswered. One client that
 * pipelined 200k small requests and never read was read whole in 4 s (RSS 429 → 1,300 MB, health checks
 * unanswered for 40 s).
 *
 * How: every request counts as unanswered on its connection until its response has been handed to the
 * kernel ('finish') or the connection closed. When a connection has `maxPendingRequests` unanswered, or
 * `maxPendingBytes` of written responses not yet taken by the kernel (socket.writableLength), it is held:
 * paused, and re-paused by a 'resume' listener whoever resumes it (that listener runs in the same tick as
 * the resume, before any read can happen). It is released when both are back under their limit (checked
 * as responses finish and on 'drain'), unless Node itself keeps it paused for its own backpressure
 * (socket._paused, which Node lifts on 'drain'). What the server takes from such a client is then bounded
 * by the limits, one read (64 KiB of requests) and the kernel's socket buffers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ReadLimitOptions {
  /** Unanswered requests on one connection before it stops being read. */
  readonly maxPendingRequests: number;
  /** Bytes of responses waiting in the socket (writableLength) before it stops being read. */
  readonly maxPendingBytes: number;
}

/** Far above what a well-behaved pipelining client keeps in flight; far below a flood. */
export const DEFAULT_READ_LIMIT: ReadLimitOptions = { maxPendingRequests: 64, maxPendingBytes: 4 << 20 };

export interface ReadLimit {
  /** Counts `req` as unanswered on its connection until `res` finishes or closes; may hold the socket. */
  track(req: IncomingMessage, res: ServerResponse): void;
  /** socket.resume(), unless the limit holds the connection (or Node's own backpressure pauses it). */
  resume(socket: Socket): void;
  /** Connections held now. */
  readonly held: number;
}

interface ConnState {
  pending: number;
  held: boolean;
  /** Waiting for 'drain' to re-check. */
  draining: boolean;
}

/** Node's own pipelining pause flag (node:_http_server); read, never written. */
const nodePaused = (socket: Socket): boolean => (socket as Socket & { _paused?: boolean })._paused === true;

export function createReadLimit(options: ReadLimitOptions = DEFAULT_READ_LIMIT): ReadLimit {
  const { maxPendingRequests, maxPendingBytes } = options;
  const states = new WeakMap<Socket, ConnState>();
  let held = 0;

  const over = (socket: Socket, st: ConnState): boolean =>
    st.pending >= maxPendingRequests || socket.writableLength >= maxPendingBytes;

  const release = (socket: Socket, st: ConnState): void => {
    if (!st.held) return;
    if (over(socket, st)) {
      if (!st.draining && socket.writableLength >= maxPendingBytes) {
        st.draining = true;
        socket.once('drain', () => {
          st.draining = false;
          release(socket, st);
        });
      }
      return;
    }
    st.held = false;
    held--;
    if (!nodePaused(socket) && !socket.destroyed) socket.resume();
  };

  const hold = (socket: Socket, st: ConnState): void => {
    if (st.held) return;
    st.held = true;
    held++;
    socket.pause();
  };

  const stateOf = (socket: Socket): ConnState => {
    let st = states.get(socket);
    if (st === undefined) {
      const s: ConnState = { pending: 0, held: false, draining: false };
      st = s;
      states.set(socket, s);
      // Whoever resumes a held socket (Node's 'drain' handler, a body read), it is paused again at once.
      socket.on('resume', () => {
        if (s.held) socket.pause();
      });
      socket.once('close', () => {
        if (s.held) held--;
        s.held = false;
      });
    }
    return st;
  };

  return {
    track(req, res) {
      const socket = req.socket;
      const st = stateOf(socket);
      st.pending++;
      res.once('close', () => {
        st.pending--;
        release(socket, st);
      });
      if (over(socket, st)) hold(socket, st);
    },
    resume(socket) {
      const st = states.get(socket);
      if (st?.held === true) return;
      socket.resume();
    },
    get held() {
      return held;
    },
  };
}
