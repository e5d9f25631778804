/**
 * The gRPC port's open connections and their caps: --grpc-max-connections-per-address (an address's share,
 * checked first, so a connection refused for it never costs another its place) and --grpc-max-connections.
 * At the cap, the open connection that has done the least (../../eviction.ts) is closed to make room; one
 * with a call being served or one just active never is (GrpcConnection.evictionRank). When none can go,
 * the newcomer is refused. O(connections), only at the cap.
 */
import type { ServerHttp2Session } from 'node:http2';
import type { Logger } from '../../../common/logger.js';
import { ConnectionShare } from '../../connection-share.js';
import { leastActive } from '../../eviction.js';
import type { ByteBudget } from './budget.js';
import { GOAWAY_GRACE_MS, GrpcConnection, type ConnectionSettings } from './connection.js';

export interface ConnectionCapSettings {
  /** 0: no cap. */
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  readonly connectionSettings: ConnectionSettings;
  readonly serverBudget: ByteBudget;
  /** The HTTP/2 connection window each admitted session gets. */
  readonly connectionWindow: number;
  /**
   * The caps the refusals quote, when these are one protocol thread's shares of them
   * (--grpc-infer-thread-count): the whole port's. Default: the caps above.
   */
  readonly quotedCaps?: { readonly maxConnections: number; readonly maxConnectionsPerAddress: number };
}

export class GrpcConnections {
  private readonly open = new Map<ServerHttp2Session, GrpcConnection>();
  private readonly share: ConnectionShare;
  /** Sessions at all (admitted and not yet closed), those evicted whose sessions still close. */
  private count = 0;
  private evicting = 0;
  /** Connections closed at the cap so far (verbose log). */
  private evictions = 0;
  private readonly evicted = new WeakSet<ServerHttp2Session>();

  constructor(
    private readonly settings: ConnectionCapSettings,
    private readonly log: Logger,
  ) {
    this.share = new ConnectionShare(settings.maxConnectionsPerAddress);
  }

  /** The admitted connection of `session`, if it is one. */
  get(session: ServerHttp2Session): GrpcConnection | undefined {
    return this.open.get(session);
  }

  values(): IterableIterator<GrpcConnection> {
    return this.open.values();
  }

  /** A new session: admitted (evicting another at the cap), or refused with why. `closing`: GOAWAY at once. */
  admit(session: ServerHttp2Session, closing: boolean): void {
    const { settings } = this;
    const connection = new GrpcConnection(
      session,
      settings.connectionSettings,
      settings.serverBudget,
      this.log,
    );
    const place = this.share.take(session.socket?.remoteAddress);
    if (place === null) {
      connection.refuse(
        `this client address holds ${this.settings.quotedCaps?.maxConnectionsPerAddress ?? this.share.max} gRPC connections, the most one address may; close some or ` +
          'retry later (--grpc-max-connections-per-address)',
      );
      return;
    }
    const max = settings.maxConnections;
    if (max > 0 && this.count - this.evicting >= max && !this.evictOne()) {
      this.share.release(place);
      connection.refuse(
        `the server is at its gRPC connection limit (${settings.quotedCaps?.maxConnections ?? max}); retry later (--grpc-max-connections)`,
      );
      return;
    }
    this.count++;
    this.open.set(session, connection);
    session.on('close', () => {
      this.count--;
      if (this.evicted.has(session)) this.evicting--;
      this.share.release(place);
      this.open.delete(session);
    });
    if (closing) {
      connection.beginClose(GOAWAY_GRACE_MS);
      return;
    }
    session.setLocalWindowSize(settings.connectionWindow);
  }

  private evictOne(): boolean {
    const now = performance.now();
    const victim = leastActive(this.open.values(), (c) => c.evictionRank(now));
    if (victim === undefined) return false;
    this.evictions++;
    if (this.log.isVerbose()) {
      this.log.verbose(`GRPC connection evicted at the connection limit (${this.evictions} so far)`);
    }
    victim.evict(
      `the server is at its gRPC connection limit (${this.settings.quotedCaps?.maxConnections ?? this.settings.maxConnections}) and this connection was ` +
        'the least active; reconnect (--grpc-max-connections)',
    );
    // It no longer counts against the cap: it is destroyed on the next tick.
    this.open.delete(victim.session);
    this.evicted.add(victim.session);
    this.evicting++;
    return true;
  }
}
