/**
 * The bounds on a request's undelivered responses (issue 33): how many responses a request's response
 * stream holds that its frontend has not taken yet before the backend's awaited send waits, and how long
 * a producer may wait for a reader that takes nothing before the request is cancelled. One process-wide
 * setting, made once at startup from `--max-undelivered-responses` and `--response-idle-timeout`; tests
 * may change it and put it back.
 */

export interface ResponseLimits {
  /** Undelivered responses a stream holds before a producer's whenWritable() waits (>= 1). */
  readonly maxUndelivered: number;
  /** A producer waiting this long without the reader taking a response cancels the request; 0: never. */
  readonly idleTimeoutMs: number;
}

export const DEFAULT_RESPONSE_LIMITS: ResponseLimits = { maxUndelivered: 64, idleTimeoutMs: 300_000 };

let current: ResponseLimits = DEFAULT_RESPONSE_LIMITS;

export function responseLimits(): ResponseLimits {
  return current;
}

/** Sets the process-wide bounds; returns the previous ones (for tests that put them back). */
export function setResponseLimits(limits: Partial<ResponseLimits>): ResponseLimits {
  const previous = current;
  const maxUndelivered = Math.max(1, Math.floor(limits.maxUndelivered ?? current.maxUndelivered));
  const idleTimeoutMs = Math.max(0, limits.idleTimeoutMs ?? current.idleTimeoutMs);
  current = { maxUndelivered, idleTimeoutMs };
  return previous;
}
