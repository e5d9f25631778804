/**
 * The life of one gRPC connection (one HTTP/2 session): when it is closed and how it is kept honest.
 * Every path out ends with the socket destroyed, so no connection can hold a file descriptor for good:
 *
 * - Errors, a closed or ended socket: the session is destroyed at once.
 * - GOAWAY, sent (shutdown, idle, age) or received: running calls get a grace, then the session and its
 *   socket are destroyed; once no call is left the socket gets CLOSE_LINGER_MS to close on its own.
 * - Idle (`maxConnectionIdleMs`, gRPC's GRPC_ARG_MAX_CONNECTION_IDLE_MS): no call for that long → GOAWAY.
 * - Age (`maxConnectionAgeMs` ± 10 % jitter, GRPC_ARG_MAX_CONNECTION_AGE_MS): GOAWAY, then
 *   `maxConnectionAgeGraceMs` for the running calls.
 * - Keepalive (GRPC_ARG_KEEPALIVE_*): a PING every `keepaliveTimeMs` while calls run (or always, with
 *   `keepalivePermitWithoutCalls`), at most `http2MaxPingsWithoutData` in a row without the server sending
 *   headers or data; a ping not answered within `keepaliveTimeoutMs` closes the connection.
 * - Liveness: a connection from which nothing was received for `livenessQuietMs` is pinged (then less
 *   often while it stays quiet and answers, up to every LIVENESS_MAX_MS), and closed if the ping goes
 *   unanswered for `keepaliveTimeoutMs`. This is Nereid's own check, not a gRPC setting: nghttp2 answers
 *   some protocol violations (a DATA frame on stream 0, a reset flood) with GOAWAY and then wants nothing
 *   more from the socket, Node stops reading it and never sees the peer close it, and no event reaches
 *   JavaScript — the connection would sit in CLOSE-WAIT holding its descriptor forever. Such a session
 *   sends no PING either, so the unanswered probe finds it.
 * - Ping abuse (gRPC core's Chttp2PingAbusePolicy): a client pinging more often than
 *   `http2MinRecvPingIntervalWithoutDataMs` (two hours when no call runs and pings without calls are not
 *   permitted) gets a strike; more than `http2MaxPingStrikes` strikes → GOAWAY ENHANCE_YOUR_CALM
 *   "too_many_pings" and the connection is closed. Sending headers or data clears the strikes.
 * - Rapid reset: a client that resets its streams faster than RESET_RATE per second after a burst of
 *   RESET_BURST (half of nghttp2's own guard, so this one trips first) gets GOAWAY ENHANCE_YOUR_CALM and
 *   is closed, instead of being left to nghttp2's guard, which would leave the socket open (above).
 *
 * - First call (`requestReadTimeoutMs`, --grpc-request-read-timeout): a connection that starts no call
 *   within it (one that drips its preface or a HEADERS frame) gets GOAWAY and is closed.
 *
 * It also owns the connection's ByteBudget (request bytes still arriving, see budget.ts).
 */
import { constants, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Logger } from '../../../common/logger.js';
import { rankConnection, type EvictionRank } from '../../eviction.js';
import { ByteBudget } from './budget.js';

export interface ConnectionSettings {
  /** Milliseconds between keepalive pings (Triton's default 7,200,000). */
  readonly keepaliveTimeMs: number;
  /** Milliseconds a ping may go unanswered before the connection is closed (20,000). */
  readonly keepaliveTimeoutMs: number;
  /** Keepalive pings (sent and received) are allowed without calls in flight (false). */
  readonly keepalivePermitWithoutCalls: boolean;
  /** Keepalive pings the server sends without sending data in between; 0 = no limit (2). */
  readonly http2MaxPingsWithoutData: number;
  /** Least milliseconds between pings received while no data was sent (300,000). */
  readonly http2MinRecvPingIntervalWithoutDataMs: number;
  /** Bad pings tolerated before GOAWAY ENHANCE_YOUR_CALM; 0 = any number (2). */
  readonly http2MaxPingStrikes: number;
  /** Connection lifetime in milliseconds before GOAWAY; 0 = unlimited (Triton's default). */
  readonly maxConnectionAgeMs: number;
  /** Milliseconds calls may still run after the age GOAWAY; 0 = until they end (Triton's default). */
  readonly maxConnectionAgeGraceMs: number;
  /** Milliseconds without calls before GOAWAY; 0 = never. */
  readonly maxConnectionIdleMs: number;
  /** Bytes of request messages still arriving that one connection may hold. */
  readonly maxConnectionBufferedBytes: number;
  /** Quiet time before a liveness probe (Nereid's; not a flag, tests shorten it). */
  readonly livenessQuietMs: number;
  /** `--grpc-request-read-timeout`: a connection that starts no call within this is closed; 0 = never. */
  readonly requestReadTimeoutMs: number;
}

/** Triton's keepalive defaults (src/grpc/grpc_server.h KeepAliveOptions) and Nereid's own limits. */
export const DEFAULT_CONNECTION_SETTINGS: ConnectionSettings = Object.freeze({
  keepaliveTimeMs: 7_200_000,
  keepaliveTimeoutMs: 20_000,
  keepalivePermitWithoutCalls: false,
  http2MaxPingsWithoutData: 2,
  http2MinRecvPingIntervalWithoutDataMs: 300_000,
  http2MaxPingStrikes: 2,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 0,
  maxConnectionIdleMs: 300_000,
  maxConnectionBufferedBytes: 512 * 1024 * 1024,
  livenessQuietMs: 5_000,
  requestReadTimeoutMs: 60_000,
});

/** After a GOAWAY, a received one included, calls not covered by an age grace get this long. */
export const GOAWAY_GRACE_MS = 10_000;
/** Once no call is left on a closing connection, the peer gets this long to close the socket itself. */
export const CLOSE_LINGER_MS = 2_000;
/** The longest interval between liveness probes of a connection that stays quiet and answers them. */
export const LIVENESS_MAX_MS = 300_000;
/** Client stream resets tolerated: a burst, then a rate per second (nghttp2's guard: 1000 and 33). */
export const RESET_BURST = 500;
export const RESET_RATE = 33;

/** gRPC core's allowed interval between received pings when nothing runs (RFC 1122's two hours). */
const IDLE_PING_INTERVAL_MS = 2 * 3600 * 1000;
/** setTimeout's largest delay; longer settings simply never fire. */
const MAX_TIMER = 0x7fffffff;

/** The raw socket under a session, tagged when the server accepted it (the session only shows a proxy). */
const RAW_SOCKET = Symbol('nereid.grpc.rawSocket');

/** Remembers `socket` as the one to destroy for the session it carries (h2c: the TCP socket). */
export function tagSocket(socket: Socket): void {
  (socket as Socket & { [RAW_SOCKET]?: Socket })[RAW_SOCKET] = socket;
}

/** What a call needs from its connection. */
export interface CallTransport {
  readonly budget: ByteBudget | undefined;
  /** `bytes` of a call's request arrived from the client (the connection is alive). */
  received(bytes: number): void;
  /**
   * A whole request message of `stream` arrived: the connection made progress, and the call counts as in
   * flight (never evicted at the connection cap) until its stream closes.
   */
  messageArrived(stream: ServerHttp2Stream): void;
  /** The server wrote headers or data (clears ping strikes, re-allows keepalive pings). */
  dataSent(): void;
  /**
   * A response write was handed to the stream (`+1`) or has left it (`-1`). While one is still flowing
   * out (a large message paced by the client's flow control), the server is sending DATA frames, so a
   * ping received meanwhile (grpcio's BDP pings while it reads) is not one "without data".
   */
  writing(delta: 1 | -1): void;
}

export class GrpcConnection implements CallTransport {
  readonly budget: ByteBudget;
  private readonly raw: Socket | undefined;
  private activeStreams = 0;
  private closing = false;
  private closed = false;
  private killed = false;
  /** Something arrived since the liveness timer last looked. */
  private heard = true;
  private livenessDelay: number;
  private pingOutstanding = false;
  private pingsWithoutData = 0;
  private lastPingReceived = -Infinity;
  private pingStrikes = 0;
  /** Response writes not yet flushed to nghttp2 (CallTransport.writing). */
  private writesInFlight = 0;
  private resetTokens = RESET_BURST;
  private resetRefilled = performance.now();
  private idleTimer: NodeJS.Timeout | undefined;
  /** When the connection last became idle (performance.now()). */
  private idleSince = 0;
  private ageTimer: NodeJS.Timeout | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private deadlineAt: number | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  /** Runs until the first call starts (requestReadTimeoutMs). */
  private firstCallTimer: NodeJS.Timeout | undefined;
  /** Streams that received a whole request message and have not closed: calls being served. */
  private readonly serving = new WeakSet<ServerHttp2Stream>();
  private servingCount = 0;
  /** Whole request messages received, and call bytes (of any message, whole or not). */
  private messages = 0;
  private bytesReceived = 0;
  /** When the connection last made progress (a message in, a served call done); first, its accept time. */
  private lastProgress = performance.now();

  constructor(
    readonly session: ServerHttp2Session,
    private readonly settings: ConnectionSettings,
    serverBudget: ByteBudget | undefined,
    private readonly log: Logger,
  ) {
    this.budget = new ByteBudget(
      settings.maxConnectionBufferedBytes,
      serverBudget,
      'this connection',
      '--grpc-max-connection-buffered-bytes',
    );
    this.livenessDelay = settings.livenessQuietMs;
    this.raw = (session.socket as unknown as { [RAW_SOCKET]?: Socket })[RAW_SOCKET];
    session.on('close', () => this.onClosed());
    session.on('error', (err: Error) => {
      if (log.isVerbose()) log.verbose(`GRPC connection error: ${err.message}`);
      this.destroy();
    });
    session.on('goaway', () => this.beginClose(GOAWAY_GRACE_MS));
    session.on('ping', () => this.onPingReceived());
    session.on('remoteSettings', () => (this.heard = true));
    // The session watches its socket's close itself; an end it sees only while it still reads.
    session.socket.once('end', () => this.destroy());
    session.socket.once('close', () => this.destroy());

    this.startIdleTimer();
    if (settings.maxConnectionAgeMs > 0) {
      const jittered = settings.maxConnectionAgeMs * (0.9 + 0.2 * Math.random());
      this.ageTimer = timer(jittered, () =>
        this.beginClose(settings.maxConnectionAgeGraceMs > 0 ? settings.maxConnectionAgeGraceMs : undefined),
      );
    }
    this.keepaliveTimer = timer(settings.keepaliveTimeMs, () => this.keepalive());
    this.livenessTimer = timer(this.livenessDelay, () => this.liveness());
    this.firstCallTimer = timer(settings.requestReadTimeoutMs, () => {
      this.firstCallTimer = undefined;
      this.kill(constants.NGHTTP2_NO_ERROR, `no call within ${settings.requestReadTimeoutMs} ms`);
    });
  }

  /** Over the server's connection cap: GOAWAY ENHANCE_YOUR_CALM with `message`, then close at once. */
  refuse(message: string): void {
    this.kill(constants.NGHTTP2_ENHANCE_YOUR_CALM, message);
  }

  /** A new stream (call) on this connection. */
  /** Streams open on this connection now. */
  get openStreams(): number {
    return this.activeStreams;
  }

  streamStarted(stream: ServerHttp2Stream): void {
    this.heard = true;
    this.activeStreams++;
    if (this.firstCallTimer !== undefined) {
      clearTimeout(this.firstCallTimer);
      this.firstCallTimer = undefined;
    }
    // The idle timer is left running: it checks for itself whether the connection stayed idle (arming
    // and clearing a timer per call was measurable at one call at a time).
    stream.once('close', () => {
      this.activeStreams--;
      if (this.serving.has(stream)) {
        this.serving.delete(stream);
        this.servingCount--;
        this.lastProgress = performance.now();
      }
      // A reset counts whatever its code: h2 libraries send RST_STREAM NO_ERROR by default, and such a
      // stream is `aborted` (closed before the server ended its side).
      if (stream.aborted || (stream.rstCode !== constants.NGHTTP2_NO_ERROR && stream.rstCode !== undefined)) {
        this.onReset();
      }
      if (this.activeStreams > 0 || this.closed) return;
      if (this.closing) this.linger();
      else this.startIdleTimer();
    });
  }

  received(bytes: number): void {
    this.heard = true;
    this.bytesReceived += bytes;
  }

  messageArrived(stream: ServerHttp2Stream): void {
    this.messages++;
    this.lastProgress = performance.now();
    if (!this.serving.has(stream) && !stream.closed) {
      this.serving.add(stream);
      this.servingCount++;
    }
  }

  /**
   * How little this connection has done, for the choice of which connection to close when the server is
   * at its connection cap (../eviction.ts); undefined: not to be closed for that — it is closing already,
   * it has a call being served, or it completed something within the last ACTIVE_MS.
   */
  evictionRank(now: number): EvictionRank | undefined {
    if (this.closing || this.closed) return undefined;
    return rankConnection(
      {
        serving: this.servingCount > 0,
        progressed: this.messages > 0,
        bytes: this.bytesReceived,
        since: this.lastProgress,
      },
      now,
    );
  }

  /**
   * Closed to make room for a new connection at the server's cap: GOAWAY NO_ERROR with `message` and no
   * stream accepted (the connection had no call being served: a client retries whatever it had begun),
   * then closed at once.
   */
  evict(message: string): void {
    this.kill(constants.NGHTTP2_NO_ERROR, message);
  }

  writing(delta: 1 | -1): void {
    this.writesInFlight += delta;
    if (delta < 0) this.dataSent();
  }

  dataSent(): void {
    this.pingsWithoutData = 0;
    this.pingStrikes = 0;
    this.lastPingReceived = -Infinity;
  }

  /**
   * GOAWAY: no new calls; running ones get `graceMs` (undefined: until they end), then the connection
   * is destroyed. Used for shutdown, idle and age, and when the client sent GOAWAY.
   */
  beginClose(graceMs: number | undefined): void {
    if (this.closed) return;
    if (graceMs !== undefined) {
      // A later GOAWAY may shorten the grace, never lengthen it.
      const at = performance.now() + graceMs;
      if (this.deadlineAt === undefined || at < this.deadlineAt) {
        if (this.deadline !== undefined) clearTimeout(this.deadline);
        this.deadlineAt = at;
        this.deadline = timer(graceMs, () => this.destroy());
      }
    }
    if (this.closing) return;
    this.closing = true;
    if (!this.session.closed && !this.session.destroyed) {
      try {
        this.session.close();
      } catch {
        this.destroy();
        return;
      }
    }
    if (this.activeStreams === 0) this.linger();
  }

  /** Destroys the session and, whatever state the peer leaves it in, its socket. */
  destroy(): void {
    if (this.closed) return;
    if (!this.session.destroyed) this.session.destroy();
    // Node ends the socket after a destroy but waits for the peer to take the FIN (and, after a graceful
    // close, for the peer's own): a peer that does neither would keep the descriptor. Give it a moment.
    const raw = this.raw;
    if (raw !== undefined && !raw.destroyed && this.lingerTimer === undefined) {
      this.lingerTimer = timer(CLOSE_LINGER_MS, () => raw.destroy());
    }
  }

  /** GOAWAY with an error code (abuse), then close at once. */
  private kill(code: number, debug: string): void {
    if (this.killed || this.closed || this.session.destroyed) return;
    this.killed = true;
    // Verbose only: a hostile client must not be able to flood the log.
    if (this.log.isVerbose()) this.log.verbose(`GRPC connection closed: ${debug} (GOAWAY ${code})`);
    try {
      this.session.goaway(code, 0, Buffer.from(debug));
    } catch {
      // already going away
    }
    this.closing = true;
    setImmediate(() => this.destroy());
  }

  private linger(): void {
    if (this.lingerTimer === undefined && !this.closed) {
      this.lingerTimer = timer(CLOSE_LINGER_MS, () => {
        this.lingerTimer = undefined;
        if (this.raw !== undefined && !this.raw.destroyed) this.raw.destroy();
        this.destroy();
      });
    }
  }

  /** The connection just became idle (no streams): it is closed once it stays so maxConnectionIdleMs. */
  private startIdleTimer(): void {
    if (this.settings.maxConnectionIdleMs <= 0 || this.closing) return;
    this.idleSince = performance.now();
    this.idleTimer ??= timer(this.settings.maxConnectionIdleMs, () => this.idleCheck());
  }

  private idleCheck(): void {
    this.idleTimer = undefined;
    // Busy now: the last stream to close starts the idle time again.
    if (this.activeStreams > 0 || this.closing || this.closed) return;
    const left = this.idleSince + this.settings.maxConnectionIdleMs - performance.now();
    if (left >= 1) this.idleTimer = timer(left, () => this.idleCheck());
    else this.beginClose(GOAWAY_GRACE_MS);
  }

  /** Sends a PING; the connection is destroyed if it is not answered in time. False if one is out. */
  private ping(onAck: () => void): boolean {
    if (this.pingOutstanding || this.closed || this.session.destroyed) return false;
    this.pingOutstanding = true;
    this.pingTimer = timer(this.settings.keepaliveTimeoutMs, () => {
      this.pingTimer = undefined;
      if (this.log.isVerbose()) this.log.verbose('GRPC connection closed: a ping went unanswered');
      this.destroy();
    });
    const acked = (err: Error | null): void => {
      if (this.pingTimer !== undefined) clearTimeout(this.pingTimer);
      this.pingTimer = undefined;
      this.pingOutstanding = false;
      if (err === null && !this.closed) onAck();
    };
    try {
      if (!this.session.ping(acked)) acked(new Error('ping not sent'));
    } catch {
      this.destroy();
    }
    return true;
  }

  private keepalive(): void {
    this.keepaliveTimer = undefined;
    const again = (): void => {
      if (!this.closed) this.keepaliveTimer = timer(this.settings.keepaliveTimeMs, () => this.keepalive());
    };
    const max = this.settings.http2MaxPingsWithoutData;
    const wanted = this.settings.keepalivePermitWithoutCalls || this.activeStreams > 0;
    if (wanted && (max === 0 || this.pingsWithoutData < max) && this.ping(again)) {
      this.pingsWithoutData++;
      return;
    }
    again();
  }

  private liveness(): void {
    this.livenessTimer = undefined;
    const again = (): void => {
      if (!this.closed) this.livenessTimer = timer(this.livenessDelay, () => this.liveness());
    };
    if (this.heard) {
      this.heard = false;
      this.livenessDelay = this.settings.livenessQuietMs;
      again();
      return;
    }
    const sent = this.ping(() => {
      this.livenessDelay = Math.min(this.livenessDelay * 2, LIVENESS_MAX_MS);
      again();
    });
    if (!sent) again();
  }

  private onPingReceived(): void {
    this.heard = true;
    if (this.writesInFlight > 0) {
      // Data is going out between this ping and the last one, as in gRPC core (strikes reset per write).
      this.dataSent();
      return;
    }
    const now = performance.now();
    const idle = !this.settings.keepalivePermitWithoutCalls && this.activeStreams === 0;
    const allowedAt =
      this.lastPingReceived +
      (idle ? IDLE_PING_INTERVAL_MS : this.settings.http2MinRecvPingIntervalWithoutDataMs);
    this.lastPingReceived = now;
    if (allowedAt <= now) return;
    this.pingStrikes++;
    const max = this.settings.http2MaxPingStrikes;
    if (max !== 0 && this.pingStrikes > max) this.kill(constants.NGHTTP2_ENHANCE_YOUR_CALM, 'too_many_pings');
  }

  private onReset(): void {
    const now = performance.now();
    this.resetTokens = Math.min(
      RESET_BURST,
      this.resetTokens + ((now - this.resetRefilled) / 1000) * RESET_RATE,
    );
    this.resetRefilled = now;
    this.resetTokens -= 1;
    if (this.resetTokens < 0) this.kill(constants.NGHTTP2_ENHANCE_YOUR_CALM, 'too_many_resets');
  }

  private onClosed(): void {
    this.closed = true;
    for (const t of [
      this.idleTimer,
      this.ageTimer,
      this.keepaliveTimer,
      this.livenessTimer,
      this.pingTimer,
      this.deadline,
      this.firstCallTimer,
    ]) {
      if (t !== undefined) clearTimeout(t);
    }
    // The session is gone; make sure its socket is too (Node closes it unless the peer stalls).
    if (this.raw !== undefined && !this.raw.destroyed && this.lingerTimer === undefined) {
      this.lingerTimer = timer(CLOSE_LINGER_MS, () => this.raw!.destroy());
    }
  }
}

/** An unref'd timer (a connection never keeps the process alive); delays past setTimeout's range never fire. */
function timer(ms: number, fn: () => void): NodeJS.Timeout | undefined {
  if (!(ms > 0) || ms > MAX_TIMER) return undefined;
  const t = setTimeout(fn, ms);
  t.unref();
  return t;
}
