/**
 * Reasons for what object-store SDKs throw, in words an operator can act on ("connection refused",
 * "access denied: check the credentials (InvalidAccessKeyId)"), shared by the S3, GCS and Azure clients.
 * Only error names, codes, statuses and the service's own message are used: never request headers or
 * signatures, and the caller (ObjectErrors) still cuts any configured secret out of the text.
 */
import type { ErrorCode } from '../../common/errors.js';

export interface Described {
  readonly reason: string;
  readonly code: ErrorCode;
}

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'timed out',
  ECONNABORTED: 'connection aborted',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the server',
  ERR_STREAM_PREMATURE_CLOSE: 'connection closed before the object ended',
};

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[name] : undefined;
}

/** One line of the SDK's message, capped (service messages are short; stacks and dumps are not). */
export function shortMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  const line = m.split('\n')[0].trim();
  return line.length > 240 ? `${line.slice(0, 240)}...` : line;
}

/** A socket-level failure anywhere in the error (or its cause / aggregated errors), as words. */
export function networkReason(err: unknown, depth = 0): string | undefined {
  if (depth > 4 || typeof err !== 'object' || err === null) return undefined;
  const code = field(err, 'code');
  if (typeof code === 'string' && NETWORK[code] !== undefined) {
    const address = field(err, 'address');
    const port = field(err, 'port');
    const where =
      typeof address === 'string' ? ` (${address}${typeof port === 'number' ? `:${port}` : ''})` : '';
    return `${NETWORK[code]}${where}`;
  }
  const name = field(err, 'name');
  if (name === 'TimeoutError' || (name === 'AbortError' && /timeout/i.test(shortMessage(err)))) {
    return 'timed out';
  }
  const errors = field(err, 'errors');
  if (Array.isArray(errors)) {
    for (const e of errors) {
      const r = networkReason(e, depth + 1);
      if (r !== undefined) return r;
    }
  }
  return networkReason(field(err, 'cause'), depth + 1);
}

/** Common HTTP statuses of object stores, as reasons. */
export function statusReason(status: number | undefined, detail: string): Described | undefined {
  switch (status) {
    case 401:
    case 403:
      return { reason: `access denied: check the credentials (${detail})`, code: 'UNAVAILABLE' };
    case 404:
      return { reason: `not found (${detail})`, code: 'NOT_FOUND' };
    case 412:
      return { reason: `the object changed since it was listed (${detail})`, code: 'UNAVAILABLE' };
    default:
      return undefined;
  }
}
