/**
 * What an HTTP protocol thread writes itself (worker.ts): an inference answer encoded as routes.ts encodes
 * it, and an error (malformed HTTP is answered by transport/malformed.ts, as on the main thread).
 */
import type { ServerResponse } from 'node:http';
import type { InferenceResponse } from '../../../core/index.js';
import { encodeInferResponse, type DecodedInferRequest } from '../infer-codec.js';
import { chooseResponseCoding, encodeResponse } from '../transport/body.js';
import { errorBody } from '../transport/errors.js';

const JSON_TYPE = 'application/json';

/** Largest binary reply built as one Buffer (as routes.ts); larger ones go out as their parts. */
const BINARY_JOIN_MAX_BYTES = 64 * 1024;

export interface ReplyOptions {
  /** The Server header's product token. */
  readonly serverHeader: string;
  /** Ask the client to close the connection (the thread is draining, or the body was not read). */
  readonly closeConnection: boolean;
}

/** One whole answer with its Content-Length; nothing when the response has begun or gone. */
export function writeReply(
  res: ServerResponse,
  status: number,
  headers: readonly (string | number)[],
  body: string | Buffer | readonly Buffer[],
  options: ReplyOptions,
): void {
  if (res.headersSent || res.destroyed) return;
  let length = 0;
  if (typeof body === 'string') length = Buffer.byteLength(body);
  else if (Buffer.isBuffer(body)) length = body.length;
  else for (const b of body) length += b.length;
  const raw: (string | number)[] = ['Server', options.serverHeader, ...headers, 'Content-Length', length];
  if (options.closeConnection) raw.push('Connection', 'close');
  res.writeHead(status, raw);
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    res.end(body);
    return;
  }
  res.cork();
  for (const b of body) res.write(b);
  res.end();
}

/** A JSON error body (Triton's `{"error": ...}`). */
export function writeError(res: ServerResponse, status: number, body: string, options: ReplyOptions): void {
  writeReply(res, status, ['Content-Type', JSON_TYPE], body, options);
}

export function writeErrorMessage(
  res: ServerResponse,
  status: number,
  message: string,
  options: ReplyOptions,
): void {
  writeError(res, status, errorBody(message), options);
}

/** The main thread's answer to one decoded request, encoded (and compressed when asked) as routes.ts does. */
export async function writeInferAnswer(
  res: ServerResponse,
  decoded: DecodedInferRequest,
  response: InferenceResponse,
  acceptEncoding: string | undefined,
  options: ReplyOptions,
): Promise<void> {
  const coding = acceptEncoding === undefined ? 'identity' : chooseResponseCoding(acceptEncoding);
  const encoded = encodeInferResponse(response, decoded.format);
  if (!encoded.hasBinary) {
    if (coding === 'identity')
      return writeReply(res, 200, ['Content-Type', JSON_TYPE], encoded.json, options);
    const z = await encodeResponse(Buffer.from(encoded.json, 'utf8'), coding);
    return writeReply(res, 200, ['Content-Type', JSON_TYPE, 'Content-Encoding', coding], z, options);
  }
  const headerBytes = Buffer.byteLength(encoded.json, 'utf8');
  let size = headerBytes;
  for (const b of encoded.binary) size += b.length;
  const headers = [
    'Content-Type',
    'application/octet-stream',
    'Inference-Header-Content-Length',
    headerBytes,
  ];
  if (coding === 'identity' && size > BINARY_JOIN_MAX_BYTES) {
    return writeReply(res, 200, headers, [Buffer.from(encoded.json, 'utf8'), ...encoded.binary], options);
  }
  const whole = Buffer.allocUnsafe(size);
  let at = whole.write(encoded.json, 0, 'utf8');
  for (const b of encoded.binary) at += b.copy(whole, at);
  if (coding === 'identity') return writeReply(res, 200, headers, whole, options);
  const z = await encodeResponse(whole, coding);
  return writeReply(res, 200, [...headers, 'Content-Encoding', coding], z, options);
}
