/**
 * The W3C trace-context values of a request, from HTTP headers or gRPC metadata (a repeated header is
 * ignored: a request can only join one trace).
 */
import type { TraceCarrier } from './types.js';

export function traceCarrier(
  traceparent: string | string[] | undefined,
  tracestate: string | string[] | undefined,
): TraceCarrier | undefined {
  if (typeof traceparent !== 'string') return undefined;
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent };
}
