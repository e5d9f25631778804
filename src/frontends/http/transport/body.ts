/**
 * Request bodies and content codings: reads a body into one Buffer (sized from Content-Length, no copy
 * when it arrives in one chunk, shared memory when large), enforces --http-max-input-size before and
 * while reading and again after decompression, and picks / applies the response coding from
 * Accept-Encoding the way Triton does.
 */
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { cancelled, invalidArg, NereidError, unsupported } from '../../../common/errors.js';

const EMPTY = Buffer.alloc(0);

/**
 * Bodies from this size on, for a model that reads shared memory in place (a JavaScript model's worker
 * thread, ResolvedModel.sharesInputMemory), are read into a SharedArrayBuffer: the worker then sees
 * the request's tensors (views into the body) without a copy. Every other body is an ordinary buffer: a
 * fresh SharedArrayBuffer is zero-filled, new pages each time (measured: 600 KB bodies over HTTP, 1.2-1.3x
 * the requests/s with ordinary buffers for the onnxruntime and built-in identity models), and those
 * backends copy what they keep anyway.
 */
const SHARED_BODY_MIN_BYTES = 64 * 1024;

const tooLargeErrors = new WeakSet<NereidError>();

/** The error for a body over the limit; the server then closes the connection instead of draining it. */
export function bodyTooLarge(size: number | undefined, limit: number): NereidError {
  const what = size === undefined ? 'request body' : `request body size of ${size} bytes`;
  const err = invalidArg(
    `${what} exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
  );
  tooLargeErrors.add(err);
  return err;
}

/**
 * Marks an error answered before the request body was read (a size or capacity refusal from the headers):
 * like bodyTooLarge's, the server then closes the connection instead of draining the body.
 */
export function refusedBeforeBody(err: NereidError): NereidError {
  tooLargeErrors.add(err);
  return err;
}

/** True for errors made by bodyTooLarge or marked by refusedBeforeBody: the connection is closed. */
export function isBodyTooLarge(err: unknown): boolean {
  return err instanceof NereidError && tooLargeErrors.has(err);
}

/**
 * A body buffer in shared memory, placed so that the binary tensor data after the JSON inference header
 * starts 8-byte aligned: a model can then view it as Float64Array/BigInt64Array and smaller types without
 * copying it into place first.
 */
function sharedBody(req: IncomingMessage, size: number): Buffer {
  const header = Number(req.headers['inference-header-content-length']);
  const pad = Number.isSafeInteger(header) && header >= 0 && header <= size ? (8 - (header % 8)) % 8 : 0;
  return Buffer.from(new SharedArrayBuffer(size + pad), pad, size);
}

/** The declared Content-Length, or undefined (chunked). Node's parser has already validated the digits. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const v = req.headers['content-length'];
  return v === undefined ? undefined : Number(v);
}

/**
 * Reads the whole body. Rejects with INVALID_ARG (see bodyTooLarge) past `limit`, and with CANCELLED when the
 * client goes away before sending all of it. `shared`: asked only for a large body, whether it goes into a
 * SharedArrayBuffer (see SHARED_BODY_MIN_BYTES), so small requests never pay for the question.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  shared: () => boolean = () => false,
  onBytes?: (bytes: number) => void,
): Promise<Buffer> {
  const expected = declaredLength(req);
  if (expected !== undefined && expected > limit) return Promise.reject(bodyTooLarge(expected, limit));
  // A request whose start waited for a turn (turn-budget.ts) may be complete with its body still buffered
  // in the stream: only a stream that has ended has nothing left to read.
  if (expected === 0 || req.readableEnded) return Promise.resolve(EMPTY);

  return new Promise<Buffer>((resolve, reject) => {
    let single: Buffer | undefined;
    let whole: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let received = 0;
    let settled = false;

    const finish = (err: NereidError | undefined, value?: Buffer): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
      if (err !== undefined) reject(err);
      else resolve(value!);
    };

    const onData = (chunk: Buffer): void => {
      if (onBytes !== undefined) {
        // A budget charged as bytes arrive (json-pool.ts) may refuse this one.
        try {
          onBytes(chunk.length);
        } catch (err) {
          return finish(NereidError.from(err));
        }
      }
      if (expected !== undefined) {
        if (received === 0 && chunk.length === expected) {
          single = chunk; // the common small-body case: keep the chunk itself
        } else {
          if (whole === undefined) {
            whole =
              expected >= SHARED_BODY_MIN_BYTES && shared()
                ? sharedBody(req, expected)
                : Buffer.allocUnsafe(expected);
            if (single !== undefined) single.copy(whole, 0);
            single = undefined;
          }
          if (received + chunk.length > expected) return finish(bodyTooLarge(undefined, limit));
          chunk.copy(whole, received);
        }
      } else {
        if (received + chunk.length > limit) return finish(bodyTooLarge(undefined, limit));
        (chunks ??= []).push(chunk);
      }
      received += chunk.length;
    };

    const onEnd = (): void => {
      if (expected !== undefined) {
        if (received !== expected)
          return finish(cancelled('client closed the connection before sending the whole request body'));
        return finish(undefined, single ?? whole ?? EMPTY);
      }
      if (chunks === undefined) return finish(undefined, EMPTY);
      finish(undefined, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
    };

    const onGone = (): void => {
      if (!req.complete)
        finish(cancelled('client closed the connection before sending the whole request body'));
    };

    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

const unzip = promisify(zlib.unzip);
const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

/** Applies the request's Content-Encoding (gzip, deflate, identity); the result is bounded by `limit`. */
export async function decodeContentEncoding(
  body: Buffer,
  contentEncoding: string | undefined,
  limit: number,
): Promise<Buffer> {
  if (contentEncoding === undefined || contentEncoding === '' || contentEncoding === 'identity') return body;
  const coding = contentEncoding.trim().toLowerCase();
  if (coding === 'identity') return body;
  if (coding !== 'gzip' && coding !== 'deflate') throw unsupported('Unsupported compression type');
  try {
    // unzip detects the gzip or zlib wrapper itself, as Triton's inflateInit2(15 | 32) does.
    return await unzip(body, { maxOutputLength: limit });
  } catch (err) {
    if (err instanceof RangeError) {
      throw invalidArg(
        `Decompressed data size exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
      );
    }
    const reason = err instanceof Error ? err.message : String(err);
    throw invalidArg(`failed to decompress the request body (${coding}): ${reason}`);
  }
}

export type ResponseCoding = 'identity' | 'gzip' | 'deflate';

/**
 * Triton's choice from Accept-Encoding: the listed identity/gzip/deflate with the highest q-value (first
 * wins a tie); q=0 or an unknown coding never wins; nothing usable → identity.
 */
export function chooseResponseCoding(acceptEncoding: string | undefined): ResponseCoding {
  if (acceptEncoding === undefined || acceptEncoding === '') return 'identity';
  let best: ResponseCoding = 'identity';
  let bestWeight = 0;
  for (const entry of acceptEncoding.split(',')) {
    const [rawType, ...params] = entry.split(';');
    const type = rawType.trim().toLowerCase();
    if (type !== 'identity' && type !== 'gzip' && type !== 'deflate') continue;
    let weight = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k.trim().toLowerCase() === 'q') weight = Number(v);
    }
    if (Number.isFinite(weight) && weight > bestWeight) {
      best = type;
      bestWeight = weight;
    }
  }
  return best;
}

/** Compresses a response body (off the event loop, in libuv's pool). */
export function encodeResponse(body: Buffer, coding: 'gzip' | 'deflate'): Promise<Buffer> {
  return coding === 'gzip' ? gzip(body) : deflate(body);
}
