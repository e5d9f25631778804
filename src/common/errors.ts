/**
 * The one error type of Nereid. Every layer throws NereidError with one of Triton's error codes; the
 * frontends map the code to an HTTP status (frontends/http/transport/errors.ts) and a gRPC status (frontends/grpc)
 * in exactly one place each. Messages follow Triton's wording where clients match on substrings.
 */

/** Triton's TRITONSERVER_Error codes. */
export type ErrorCode =
  | 'UNKNOWN'
  | 'INTERNAL'
  | 'NOT_FOUND'
  | 'INVALID_ARG'
  | 'UNAVAILABLE'
  | 'UNSUPPORTED'
  | 'ALREADY_EXISTS'
  | 'CANCELLED';

export class NereidError extends Error {
  override readonly name = 'NereidError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Wraps anything thrown into a NereidError, keeping NereidErrors as they are. */
  static from(err: unknown, code: ErrorCode = 'INTERNAL'): NereidError {
    if (err instanceof NereidError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new NereidError(code, message, { cause: err });
  }
}

export const invalidArg = (message: string): NereidError => new NereidError('INVALID_ARG', message);
export const notFound = (message: string): NereidError => new NereidError('NOT_FOUND', message);
export const unavailable = (message: string): NereidError => new NereidError('UNAVAILABLE', message);
export const internal = (message: string, cause?: unknown): NereidError =>
  new NereidError('INTERNAL', message, { cause });
export const unsupported = (message: string): NereidError => new NereidError('UNSUPPORTED', message);
export const alreadyExists = (message: string): NereidError => new NereidError('ALREADY_EXISTS', message);
export const cancelled = (message: string): NereidError => new NereidError('CANCELLED', message);
