/**
 * The HTTP frontend's one error funnel: NereidError code → HTTP status (Triton's table: HttpCodeFromError
 * in server src/http_server.cc) and the `{"error": "<message>"}` body every endpoint uses. Anything that is
 * not a NereidError is a bug: it becomes a 500 and is logged once, with the request id.
 */
import { NereidError, type ErrorCode } from '../../../common/errors.js';
import type { Logger } from '../../../common/logger.js';

const STATUS: Readonly<Record<ErrorCode, number>> = {
  INTERNAL: 500,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  UNSUPPORTED: 501,
  INVALID_ARG: 400,
  ALREADY_EXISTS: 400,
  CANCELLED: 400,
  UNKNOWN: 400,
};

export function httpStatusOf(code: ErrorCode): number {
  return STATUS[code];
}

/** `{"error":"<message>"}` */
export function errorBody(message: string): string {
  return '{"error":' + JSON.stringify(message) + '}';
}

export interface ErrorReply {
  readonly status: number;
  readonly body: string;
}

export interface HttpErrorContext {
  readonly log: Logger;
  /** The inference request id when known. */
  readonly requestId?: string;
  readonly method: string;
  readonly path: string;
}

/** Maps anything thrown by a route to its reply; logs errors that are not NereidErrors. */
export function toErrorReply(err: unknown, ctx: HttpErrorContext): ErrorReply {
  if (err instanceof NereidError) {
    if (ctx.log.isVerbose()) {
      ctx.log.verbose(
        `[request id: ${ctx.requestId || '<id_unknown>'}] ${ctx.method} ${ctx.path} failed: ${err.message}`,
      );
    }
    return { status: httpStatusOf(err.code), body: errorBody(err.message) };
  }
  const message = err instanceof Error ? err.message : String(err);
  const detail = err instanceof Error && err.stack !== undefined ? err.stack : message;
  ctx.log.error(
    `[request id: ${ctx.requestId || '<id_unknown>'}] ${ctx.method} ${ctx.path}: unexpected error: ${detail}`,
  );
  return { status: 500, body: errorBody(`internal error: ${message}`) };
}
