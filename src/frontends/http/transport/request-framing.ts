/**
 * Framing a strict HTTP/1.1 server refuses (issue 33, low items) that Node's parser lets through: a request
 * with two `Host` headers (RFC 9112 §3.2: answer 400), and a `Transfer-Encoding` other than plain `chunked`
 * (`gzip, chunked` would hand the handler a gzip stream it cannot know about; RFC 9112 §6.1 lets a server
 * refuse codings it does not understand). Both are answered 400 and the connection closed, since its
 * framing cannot be trusted.
 */
import type { IncomingMessage } from 'node:http';

/** The reason `req` is refused for its framing, or undefined (the common case: one short loop over rawHeaders). */
export function framingError(req: IncomingMessage): string | undefined {
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te !== 'chunked' && te.trim().toLowerCase() !== 'chunked') {
    return `unsupported Transfer-Encoding '${te}': only 'chunked' is accepted (send Content-Encoding for compressed bodies)`;
  }
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 4 && name.toLowerCase() === 'host' && ++hosts > 1) {
      return 'more than one Host header';
    }
  }
  return undefined;
}
