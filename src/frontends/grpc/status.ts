/**
 * The gRPC frontend's one error funnel: gRPC status codes (named as in the gRPC spec), the single map
 * NereidError code → gRPC status (Triton's table: CodeToStatus in server src/grpc/grpc_utils.cc), and the
 * conversion of anything thrown by a handler into `{code, details}`. Anything that is not a NereidError is
 * a bug: it becomes INTERNAL and is logged once, with the request id.
 */
import { NereidError, type ErrorCode } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type StatusCode = (typeof Status)[keyof typeof Status];

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

export interface ErrorContext {
  readonly log: Logger;
  /** `/inference.GRPCInferenceService/ModelInfer` */
  readonly method: string;
  /** The inference request id when known. */
  readonly requestId?: string;
}

/** Maps anything thrown by a handler to its status; logs errors that are not NereidErrors. */
export function toGrpcError(err: unknown, ctx: ErrorContext): GrpcError {
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
