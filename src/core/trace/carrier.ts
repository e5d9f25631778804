/**
 * The W3C trace-context values of a request, from HTTP headers or gRPC metadata (a repeated header is
 * ignored: a request can only join one trace), and where it arrived.
 */
import type { TraceCarrier, TraceEdge } from './types.js';

export function traceCarrier(
  traceparent: string | string[] | undefined,
  tracestate: string | string[] | undefined,
  edge?: () => TraceEdge,
): TraceCarrier | undefined {
  const context =
    typeof traceparent !== 'string'
      ? {}
      : typeof tracestate === 'string'
        ? { traceparent, tracestate }
        : { traceparent };
  if (edge === undefined) return typeof traceparent === 'string' ? context : undefined;
  return { ...context, edge };
}

/**
 * `host[:port]` of a Host header or :authority (`[v6]:port` too) as server.address and server.port;
 * undefined parts when absent or not well formed (a hostile header is never echoed as it came).
 */
export function hostAndPort(value: string | undefined): { address?: string; port?: number } {
  if (value === undefined || value === '' || value.length > 255) return {};
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(value);
  if (m === null) return {};
  const address = m[1].startsWith('[') ? m[1].slice(1, -1) : m[1];
  const port = m[2] === undefined ? undefined : Number(m[2]);
  return port !== undefined && port <= 65535 ? { address, port } : { address };
}
