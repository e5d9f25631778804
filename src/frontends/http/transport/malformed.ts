/**
 * The answer to malformed HTTP (bad framing, oversized headers, a request too slow to arrive: the parser's
 * `clientError`), given by the main thread's server and by the protocol threads alike: a 400, 431 or 408
 * with Triton's JSON error body, then the connection closes. A socket that can no longer be written is
 * destroyed. Never throws.
 */
import type { Duplex } from 'node:stream';
import { errorBody } from './errors.js';

export function answerMalformed(err: NodeJS.ErrnoException, socket: Duplex, serverHeader: string): void {
  if (err.code === 'ECONNRESET' || !socket.writable || socket.destroyed) {
    socket.destroy();
    return;
  }
  const [status, reason] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout']
        : [400, 'Bad Request'];
  const body = errorBody(`malformed HTTP request: ${err.code ?? err.message}`);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nServer: ${serverHeader}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
