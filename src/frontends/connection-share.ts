/**
 * --http-max-connections-per-address / --grpc-max-connections-per-address (issue 33): how many of a port's
 * connections one client address may hold, so one address that opens connections and keeps them (drip
 * calls, idle sockets) cannot take the whole --*-max-connections cap and starve every other client until
 * its read deadlines run out.
 *
 * "One address" is an IPv4 address, or an IPv6 /64 (the block a single host or subscriber is handed, so a
 * client cannot dodge the limit by walking its own /64); IPv4-mapped IPv6 addresses count as IPv4. A
 * socket whose address is unknown (already closed) is not limited. Connections behind one proxy share its
 * address: raise the limit (or set 0, none) when a proxy in front of Nereid opens many connections.
 */
import { isIPv6 } from 'node:net';

/** Default per-address share: a quarter of the default connection cap (8192). */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 2048;

/** The key an address is counted under: IPv4 as it is, IPv6 its first 64 bits. */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  // Expand '::' so the first four groups are the /64, whatever the spelling.
  const [head, tail] = address.split('%')[0].split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? left
      : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

export class ConnectionShare {
  private readonly counts = new Map<string, number>();

  /** `max` 0 = no per-address limit (nothing is counted). */
  constructor(readonly max: number) {}

  /**
   * Takes a place for a connection from `address`: the key to give back with release(), or null when the
   * address already holds `max` connections (the caller refuses the connection). undefined: not counted.
   */
  take(address: string | undefined): string | null | undefined {
    if (this.max <= 0 || address === undefined) return undefined;
    const key = addressKey(address);
    const n = this.counts.get(key) ?? 0;
    if (n >= this.max) return null;
    this.counts.set(key, n + 1);
    return key;
  }

  release(key: string | null | undefined): void {
    if (key === null || key === undefined) return;
    const n = (this.counts.get(key) ?? 1) - 1;
    if (n <= 0) this.counts.delete(key);
    else this.counts.set(key, n);
  }

  /** Connections `address` holds now (tests, the dashboard). */
  held(address: string): number {
    return this.counts.get(addressKey(address)) ?? 0;
  }
}
