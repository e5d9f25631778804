/**
 * Requests answered, by endpoint and status, for the metrics frontend: the HTTP frontend counts each
 * answered request by its route and status code, the gRPC frontend each finished call by its rpc and
 * status. Label values come only from fixed sets (route names, the service's rpc names, status codes), never
 * from what a client sent, so a client cannot grow the series. Counting is two map updates per request.
 */
import { GrpcStatus } from '../common/grpc-status.js';

/** One series' labels and count. */
export interface CountedRequests {
  readonly protocol: 'http' | 'grpc';
  /** HTTP: the route's snake_case name (`model_infer`); gRPC: the rpc (`ModelInfer`). */
  readonly endpoint: string;
  /** HTTP: the status code; gRPC: the status name (`OK`, `INVALID_ARGUMENT`). */
  readonly code: string;
  readonly count: number;
}

/** What the frontends see of it. */
export interface RequestCounter {
  http(endpoint: string, status: number): void;
  grpc(rpc: string, code: number): void;
}

const GRPC_NAMES = new Map<number, string>(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

/** `modelInfer` → `model_infer`. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

export class RequestCounts implements RequestCounter {
  private readonly counts = new Map<string, { labels: Omit<CountedRequests, 'count'>; count: number }>();

  http(endpoint: string, status: number): void {
    const code = Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
    this.add('http', endpoint, code);
  }

  grpc(rpc: string, code: number): void {
    this.add('grpc', rpc, GRPC_NAMES.get(code) ?? 'UNKNOWN');
  }

  private add(protocol: 'http' | 'grpc', endpoint: string, code: string): void {
    const key = `${protocol} ${endpoint} ${code}`;
    const entry = this.counts.get(key);
    if (entry !== undefined) entry.count++;
    else this.counts.set(key, { labels: { protocol, endpoint, code }, count: 1 });
  }

  /** Every series so far, in a stable order (protocol, endpoint, code). */
  snapshot(): CountedRequests[] {
    return [...this.counts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, e]) => ({ ...e.labels, count: e.count }));
  }
}
