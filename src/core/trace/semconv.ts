/**
 * The OpenTelemetry semantic conventions on the request's SERVER span (OpenTelemetry mode): pure functions
 * from where the request arrived (TraceEdge) and what it was answered to span attributes and status.
 * HTTP: the stable HTTP server attributes. gRPC: the stable RPC attributes of the conventions this SDK's
 * @opentelemetry/semantic-conventions carries (`rpc.system.name`, fully-qualified `rpc.method`, the status
 * name in `rpc.status_code`) and, beside them, the older `rpc.system`, `rpc.service` and numeric
 * `rpc.grpc.status_code` that many tracing backends still read (the two sets do not clash except on
 * `rpc.method`, which takes the stable, fully-qualified form). docs/tracing.md lists them.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_RPC_METHOD,
  ATTR_RPC_STATUS_CODE,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { TraceEdge } from './types.js';

/** The KServe v2 gRPC service, as rpc.service names it. */
export const GRPC_SERVICE = 'inference.GRPCInferenceService';

// The incubating (not yet stable) names, kept here as the package advises rather than imported from its
// `incubating` entry point, which may change between minor releases.
const ATTR_RPC_SYSTEM = 'rpc.system';
const ATTR_RPC_SERVICE = 'rpc.service';
const ATTR_RPC_GRPC_STATUS_CODE = 'rpc.grpc.status_code';

/** HTTP methods the conventions know; any other is `_OTHER` (a client cannot pick the attribute's value). */
const KNOWN_METHODS = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'TRACE',
]);

/** gRPC status names by code (grpc/status.proto). */
const GRPC_STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** The codes a gRPC server span is in error for (the RPC conventions: the server's fault, not the client's). */
const GRPC_SERVER_ERRORS = new Set([2, 4, 12, 13, 14, 15]);

/** Attributes known when the request arrives. */
export function edgeAttributes(edge: TraceEdge): Attributes {
  const server: Attributes = {};
  if (edge.serverAddress !== undefined) server[ATTR_SERVER_ADDRESS] = edge.serverAddress;
  if (edge.serverPort !== undefined) server[ATTR_SERVER_PORT] = edge.serverPort;
  if (edge.protocol === 'http') {
    return {
      [ATTR_HTTP_REQUEST_METHOD]: KNOWN_METHODS.has(edge.method) ? edge.method : '_OTHER',
      [ATTR_URL_PATH]: edge.path,
      [ATTR_URL_SCHEME]: edge.scheme,
      [ATTR_HTTP_ROUTE]: edge.route,
      [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
      [ATTR_NETWORK_PROTOCOL_VERSION]: edge.protocolVersion,
      ...server,
    };
  }
  return {
    [ATTR_RPC_SYSTEM_NAME]: 'grpc',
    [ATTR_RPC_SYSTEM]: 'grpc',
    [ATTR_RPC_SERVICE]: GRPC_SERVICE,
    [ATTR_RPC_METHOD]: `${GRPC_SERVICE}/${edge.method}`,
    ...server,
  };
}

/** What the answer adds: its status attributes, and whether the span is in error (and its error.type). */
export function outcomeAttributes(
  edge: TraceEdge,
  status: number,
): { attributes: Attributes; error: string | undefined } {
  if (edge.protocol === 'http') {
    // A server span is in error for 5xx only: a 4xx is the client's mistake, answered as it should be.
    const error = status >= 500 ? String(status) : undefined;
    return {
      attributes: { [ATTR_HTTP_RESPONSE_STATUS_CODE]: status, ...(error && { [ATTR_ERROR_TYPE]: error }) },
      error,
    };
  }
  const name = GRPC_STATUS_NAMES[status] ?? String(status);
  const error = GRPC_SERVER_ERRORS.has(status) ? name : undefined;
  return {
    attributes: {
      [ATTR_RPC_STATUS_CODE]: name,
      [ATTR_RPC_GRPC_STATUS_CODE]: status,
      ...(error && { [ATTR_ERROR_TYPE]: error }),
    },
    error,
  };
}
