/**
 * The client's one error type. Both clients throw NereidClientError for every failure the server reports,
 * carrying the server's own message, the HTTP status (for gRPC: the status Triton's HTTP endpoint would
 * have used for the same error, so tests can assert one way for both protocols) and, over gRPC, the gRPC
 * status code. Argument mistakes made by the caller are plain TypeError / RangeError, thrown before any
 * byte is sent.
 */
import { GrpcStatus } from '../common/grpc-status.js';

/** gRPC status codes by name (common/grpc-status.ts): part of the client's API. */
export { GrpcStatus };

/**
 * Triton's error tables (HttpCodeFromError in http_server.cc, CodeToStatus in grpc_utils.cc) read
 * backwards: gRPC code → the HTTP status of the same error.
 */
const HTTP_STATUS_OF_GRPC: Readonly<Record<number, number>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 400,
  [GrpcStatus.ALREADY_EXISTS]: 400,
  [GrpcStatus.CANCELLED]: 400,
  [GrpcStatus.UNKNOWN]: 400,
  [GrpcStatus.NOT_FOUND]: 404,
  [GrpcStatus.INTERNAL]: 500,
  [GrpcStatus.UNIMPLEMENTED]: 501,
  [GrpcStatus.UNAVAILABLE]: 503,
  [GrpcStatus.PERMISSION_DENIED]: 403,
  [GrpcStatus.UNAUTHENTICATED]: 401,
  [GrpcStatus.DEADLINE_EXCEEDED]: 504,
  [GrpcStatus.RESOURCE_EXHAUSTED]: 400,
};

export interface NereidClientErrorInit {
  /** HTTP status; for gRPC, the status Triton's HTTP endpoint maps the same error to. */
  readonly status?: number;
  /** gRPC status code (GrpcStatus), for errors from the gRPC client. */
  readonly grpcCode?: number;
  readonly cause?: unknown;
}

export class NereidClientError extends Error {
  override readonly name = 'NereidClientError';
  /** HTTP status of the failed call; undefined when no answer arrived (connection refused, reset). */
  readonly status: number | undefined;
  /** gRPC status code, set by the gRPC client only. */
  readonly grpcCode: number | undefined;

  constructor(message: string, init: NereidClientErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.grpcCode = init.grpcCode;
  }

  /** An error built from a gRPC status, with the equivalent HTTP status filled in. */
  static fromGrpc(code: number, message: string, cause?: unknown): NereidClientError {
    return new NereidClientError(message, { status: HTTP_STATUS_OF_GRPC[code], grpcCode: code, cause });
  }
}
