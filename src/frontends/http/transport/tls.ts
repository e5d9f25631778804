/**
 * The node:http server the HTTP frontend runs on: clear text, or HTTPS with the endpoint's credentials
 * (../tls.ts: certificate, mutual TLS, reloads). Nereid only: Triton has no TLS on its HTTP port. On an
 * HTTPS port a client speaking plain HTTP gets `400` with the usual `{"error": ...}` body saying to use
 * https, rather than a failed handshake.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { divertClearText, type TlsCredentials } from '../../tls.js';
import { errorBody } from './errors.js';

export const CLEAR_TEXT_MESSAGE =
  'this port serves HTTPS only: use https:// (tritonclient.http: ssl=True, ssl_options={"ca_certs": <CA file>})';

/** How long the rest of a clear-text request is read (and dropped) before the connection is cut. */
const CLEAR_TEXT_DRAIN_MS = 10_000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A clear-text server, or with `tls` an HTTPS one (ALPN http/1.1) that gets each new certificate. */
export function createHttpServer(
  options: http.ServerOptions,
  handler: Handler,
  tls: TlsCredentials | undefined,
): http.Server {
  if (tls === undefined) return http.createServer(options, handler);
  const server = https.createServer(
    { ...options, ...tls.serverOptions(), ALPNProtocols: ['http/1.1'] },
    handler,
  );
  tls.attach(server);
  divertClearText(server, answerClearTextHttp);
  return server;
}

export function answerClearTextHttp(socket: Socket): void {
  const body = errorBody(CLEAR_TEXT_MESSAGE);
  socket.on('error', () => socket.destroy());
  socket.setTimeout(CLEAR_TEXT_DRAIN_MS, () => socket.destroy());
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Whatever else the client sends is read and dropped, so it sees the answer rather than a reset.
  socket.resume();
}
