/**
 * Where an HTTP inference request arrived, for its trace's SERVER span (core/trace/semconv.ts writes it
 * in the OpenTelemetry conventions): method, path, the route's template, scheme, HTTP version and the
 * Host header's address and port.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { hostAndPort, traceCarrier, type RequestTrace, type TraceEdge } from '../../core/index.js';
import type { RouteContext } from './route-context.js';
import type { RouteMatch } from './router.js';

const ACTIONS: Readonly<Partial<Record<RouteMatch['name'], string>>> = {
  modelInfer: 'infer',
  modelGenerate: 'generate',
  modelGenerateStream: 'generate_stream',
};

/** The template of an inference route, e.g. `/v2/models/{model_name}/versions/{model_version}/infer`. */
export function routeTemplate(match: RouteMatch): string {
  const versions = match.version === undefined ? '' : '/versions/{model_version}';
  return `/v2/models/{model_name}${versions}/${ACTIONS[match.name] ?? match.name}`;
}

export function httpTraceEdge(req: IncomingMessage, match: RouteMatch): TraceEdge {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const { address, port } = hostAndPort(req.headers.host);
  return {
    protocol: 'http',
    method: req.method ?? 'GET',
    path: query === -1 ? url : url.slice(0, query),
    route: routeTemplate(match),
    scheme: (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http',
    protocolVersion: req.httpVersion,
    ...(address !== undefined && { serverAddress: address }),
    ...(port !== undefined && { serverPort: port }),
  };
}

/**
 * Samples an inference request (/infer, /generate) for tracing, joined to its W3C traceparent: the trace,
 * also on ctx.trace (the server ends it after the reply), with HTTP_RECV_START; undefined when not traced.
 */
export function startHttpTrace(ctx: RouteContext, model: string): RequestTrace | undefined {
  const { req } = ctx;
  const carrier = traceCarrier(req.headers.traceparent, req.headers.tracestate, () =>
    httpTraceEdge(req, ctx.match),
  );
  const trace = ctx.api.startTrace?.(model, carrier);
  if (trace) {
    ctx.trace = trace;
    trace.capture('HTTP_RECV_START');
  }
  return trace;
}
