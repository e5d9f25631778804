/**
 * The gRPC frontend's one error funnel: gRPC status codes (common/grpc-status.ts, shared with the client), the single map
 * NereidError code → gRPC status (Triton's table: CodeToStatus in server src/grpc/grpc_utils.cc), and the
 * conversion of anything thrown by a handler into `{code, details}`. Anything that is not a NereidError is
 * a bug: it becomes INTERNAL and is logged once, with the request id.
 */
import { NereidError, type ErrorCode } from '../../../common/errors.js';
import { GrpcStatus, type GrpcStatusCode } from '../../../common/grpc-status.js';
import type { Logger } from '../../../common/logger.js';

/** gRPC status codes (common/grpc-status.ts, shared with the client), under the frontend's short name. */
export const Status = GrpcStatus;

export type StatusCode = GrpcStatusCode;

const BY_ERROR_CODE: Readonly<Record<ErrorCode, StatusCode>> = {
  INTERNAL: Status.INTERNAL,
  NOT_FOUND: Status.NOT_FOUND,
  UNAVAILABLE: Status.UNAVAILABLE,
  UNSUPPORTED: Status.UNIMPLEMENTED,
  INVALID_ARG: Status.INVALID_ARGUMENT,
  ALREADY_EXISTS: Status.ALREADY_EXISTS,
  CANCELLED: Status.CANCELLED,
  UNKNOWN: Status.UNKNOWN,
};

export function grpcStatusOf(code: ErrorCode): StatusCode {
  return BY_ERROR_CODE[code];
}

/** A gRPC call's outcome: the `grpc-status` and `grpc-message` trailers. */
export interface GrpcError {
  readonly code: StatusCode;
  readonly details: string;
}

/** An error raised by the transport itself (framing, deadlines, compression), already in gRPC terms. */
export class GrpcStatusError extends Error {
  override readonly name = 'GrpcStatusError';
  constructor(
    readonly code: StatusCode,
    message: string,
  ) {
    super(message);
  }
}

export interface GrpcErrorContext {
  readonly log: Logger;
  /** `/inference.GRPCInferenceService/ModelInfer` */
  readonly method: string;
  /** The inference request id when known. */
  readonly requestId?: string;
}

/** Maps anything thrown by a handler to its status; logs errors that are not NereidErrors. */
export function toGrpcError(err: unknown, ctx: GrpcErrorContext): GrpcError {
  if (err instanceof NereidError) {
    if (ctx.log.isVerbose()) {
      ctx.log.verbose(
        `[request id: ${ctx.requestId || '<id_unknown>'}] ${ctx.method} failed: ${err.message}`,
      );
    }
    return { code: grpcStatusOf(err.code), details: err.message };
  }
  if (err instanceof GrpcStatusError) return { code: err.code, details: err.message };
  const message = err instanceof Error ? err.message : String(err);
  const detail = err instanceof Error && err.stack !== undefined ? err.stack : message;
  ctx.log.error(
    `[request id: ${ctx.requestId || '<id_unknown>'}] ${ctx.method}: unexpected error: ${detail}`,
  );
  return { code: Status.INTERNAL, details: `internal error: ${message}` };
}
