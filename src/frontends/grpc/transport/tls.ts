/**
 * The node:http2 server the gRPC frontend runs on: clear text, or TLS with the endpoint's credentials
 * (../tls.ts: certificate, mutual TLS, reloads). On a TLS port a client without TLS is not just dropped: its
 * connection goes to a clear-text HTTP/2 session that answers every call with UNAVAILABLE and a message
 * saying to use TLS, then goes away.
 */
import http2, { type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { divertClearText, type TlsCredentials } from '../../tls.js';
import { encodeGrpcMessage } from './framing.js';
import { Status } from './status.js';

export const CLEAR_TEXT_MESSAGE =
  'this port serves gRPC over TLS only: connect with TLS (tritonclient.grpc: ssl=True, root_certificates=<CA file>)';

/** How long a clear-text connection to a TLS port may stay without a call. */
const CLEAR_TEXT_IDLE_MS = 10_000;

/** A clear-text server, or with `tls` a TLS one (ALPN h2) that gets each new certificate. */
export function createGrpcHttp2Server(
  options: http2.ServerOptions,
  tls: TlsCredentials | undefined,
): http2.Http2Server | http2.Http2SecureServer {
  if (tls === undefined) return http2.createServer(options);
  const server = http2.createSecureServer({ ...options, ...tls.serverOptions() });
  tls.attach(server);
  divertClearText(server, clearTextGrpcResponder());
  return server;
}

/** Answers clear-text gRPC connections handed to it; each closes once its calls are answered. */
export function clearTextGrpcResponder(message = CLEAR_TEXT_MESSAGE): (socket: Socket) => void {
  const server = http2.createServer({ settings: { enablePush: false } });
  server.on('session', (session: ServerHttp2Session) => {
    session.on('error', () => {
      // A client that breaks the connection: nothing to answer.
    });
    session.setTimeout(CLEAR_TEXT_IDLE_MS, () => session.destroy());
  });
  server.on('stream', (stream: ServerHttp2Stream) => {
    stream.on('error', () => {
      // Reset by the client.
    });
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(Status.UNAVAILABLE),
        'grpc-message': encodeGrpcMessage(message),
      },
      { endStream: true },
    );
    // Answered: the connection goes away (calls already under way on it still get their answer).
    stream.session?.close();
  });
  return (socket) => server.emit('connection', socket);
}
