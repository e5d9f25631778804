/**
 * The OpenAI frontend's one error funnel. OpenAI's API answers every failure with
 * `{"error": {"message", "type", "param", "code"}}` and a status that says whose fault it is: 400 for a
 * bad request, 404 for an unknown model (code `model_not_found`), 500 when the model fails, 503 when the
 * server cannot take the request now. NereidError codes map onto those here and nowhere else; anything
 * that is not a NereidError is a bug, answered 500 and logged once by the caller.
 */
import { NereidError, type ErrorCode } from '../../common/errors.js';

export type OpenAiErrorType =
  'invalid_request_error' | 'not_found_error' | 'server_error' | 'service_unavailable';

export interface OpenAiErrorReply {
  readonly status: number;
  readonly body: string;
  /** Not a NereidError: a bug the funnel logs. */
  readonly unexpected: boolean;
}

const BY_CODE: Readonly<Record<ErrorCode, { status: number; type: OpenAiErrorType }>> = {
  INVALID_ARG: { status: 400, type: 'invalid_request_error' },
  UNSUPPORTED: { status: 400, type: 'invalid_request_error' },
  ALREADY_EXISTS: { status: 400, type: 'invalid_request_error' },
  NOT_FOUND: { status: 404, type: 'not_found_error' },
  UNAVAILABLE: { status: 503, type: 'service_unavailable' },
  CANCELLED: { status: 400, type: 'invalid_request_error' },
  INTERNAL: { status: 500, type: 'server_error' },
  UNKNOWN: { status: 500, type: 'server_error' },
};

/** A request error that names the offending field (OpenAI's `param`) and, when useful, a `code`. */
export class OpenAiRequestError extends NereidError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly errorCode: string | null = null,
  ) {
    super(code, message);
  }
}

export const badRequest = (message: string, param: string | null = null): OpenAiRequestError =>
  new OpenAiRequestError('INVALID_ARG', message, param);

export const modelNotFound = (model: string): OpenAiRequestError =>
  new OpenAiRequestError('NOT_FOUND', `The model '${model}' does not exist`, 'model', 'model_not_found');

export function openAiErrorJson(
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

export function toOpenAiError(err: unknown): OpenAiErrorReply {
  if (err instanceof NereidError) {
    const { status, type } = BY_CODE[err.code];
    const param = err instanceof OpenAiRequestError ? err.param : null;
    const code = err instanceof OpenAiRequestError ? err.errorCode : null;
    return { status, body: openAiErrorJson(err.message, type, param, code), unexpected: false };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    status: 500,
    body: openAiErrorJson(`internal error: ${message}`, 'server_error'),
    unexpected: true,
  };
}
