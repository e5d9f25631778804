/**
 * gRPC message compression (https://github.com/grpc/grpc/blob/master/doc/compression.md): inflating
 * request messages sent under `grpc-encoding: gzip|deflate`, and compressing inference responses when the
 * server runs with `--grpc-infer-response-compression-level`.
 *
 * Inflation streams: the output is taken chunk by chunk, counted against a cap on the decompressed size
 * (far below the 2 GiB message limit: a few MB of gzip can claim gigabytes) and against the connection's
 * byte budget, and stops at the first chunk past either, so memory never exceeds the cap plus one chunk.
 *
 * The level → algorithm choice is gRPC core's (CompressionAlgorithmForLevel), which Triton relies on: of
 * the algorithms the client accepts, ranked gzip then deflate, `low` takes the first, `medium` the middle
 * one and `high` the last; with no gzip or deflate accepted the response goes uncompressed. gRPC core
 * deflates at zlib's default level whatever the level, and so does Nereid. As in gRPC core, a message that
 * does not shrink is sent uncompressed (the per-message flag says so).
 */
import type { Transform } from 'node:stream';
import { createDeflate, createGunzip, createGzip, createInflate } from 'node:zlib';
import type { ByteBudget } from './budget.js';
import { Reservation } from './budget.js';
import { GrpcStatusError, Status } from './status.js';

/** Request encodings we accept (`grpc-encoding`), advertised in `grpc-accept-encoding`. */
export const ACCEPT_ENCODING = 'identity,deflate,gzip';

export type Encoding = 'gzip' | 'deflate';

/** `--grpc-infer-response-compression-level`. */
export type CompressionLevel = 'none' | 'low' | 'medium' | 'high';

/** Default cap on one decompressed request message: the HTTP frontend's default body limit. */
export const DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024;

/** Output chunk of the inflater: large enough to keep per-chunk overhead low, small next to the cap. */
const INFLATE_CHUNK = 64 * 1024;

export function isSupportedEncoding(encoding: string): boolean {
  return encoding === 'identity' || encoding === 'gzip' || encoding === 'deflate';
}

/** Triton's parser: none/low/medium/high in any case (`med` accepted as shorthand). */
export function parseCompressionLevel(value: string): CompressionLevel | undefined {
  const v = value.toLowerCase();
  if (v === 'med') return 'medium';
  return v === 'none' || v === 'low' || v === 'medium' || v === 'high' ? v : undefined;
}

/** The response encoding for `level` given the client's `grpc-accept-encoding`; undefined: none. */
export function responseEncoding(
  level: CompressionLevel,
  acceptEncoding: string | undefined,
): Encoding | undefined {
  if (level === 'none' || acceptEncoding === undefined) return undefined;
  const accepted = new Set(acceptEncoding.split(',').map((s) => s.trim()));
  const ranked = (['gzip', 'deflate'] as const).filter((a) => accepted.has(a));
  if (ranked.length === 0) return undefined;
  if (level === 'low') return ranked[0];
  if (level === 'medium') return ranked[ranked.length >> 1];
  return ranked[ranked.length - 1];
}

/**
 * Decompresses one message sent with the compressed flag under `grpc-encoding`. Refuses with
 * RESOURCE_EXHAUSTED as soon as the output passes `maxSize` or the budget has no room; the output held
 * meanwhile is counted on the budget and given back when the message is handed on or refused.
 */
export function decompress(
  data: Buffer,
  encoding: string,
  maxSize: number,
  budget?: ByteBudget,
): Promise<Buffer> {
  if (encoding !== 'gzip' && encoding !== 'deflate') {
    return Promise.reject(new GrpcStatusError(Status.INTERNAL, 'compressed message without a grpc-encoding'));
  }
  const inflater =
    encoding === 'gzip'
      ? createGunzip({ chunkSize: INFLATE_CHUNK })
      : createInflate({ chunkSize: INFLATE_CHUNK });
  const held = new Reservation(budget);
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    let settled = false;
    const fail = (err: GrpcStatusError): void => {
      if (settled) return;
      settled = true;
      parts.length = 0;
      held.releaseAll();
      inflater.destroy();
      reject(err);
    };
    inflater.on('data', (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > maxSize) {
        fail(
          new GrpcStatusError(
            Status.RESOURCE_EXHAUSTED,
            `Received message larger than max (decompressed beyond ${maxSize} bytes)`,
          ),
        );
        return;
      }
      const refused = held.take(chunk.length);
      if (refused !== undefined) {
        fail(new GrpcStatusError(Status.RESOURCE_EXHAUSTED, refused.exhaustedMessage()));
        return;
      }
      parts.push(chunk);
    });
    inflater.on('error', (err: Error) =>
      fail(
        new GrpcStatusError(Status.INTERNAL, `failed to decompress a '${encoding}' message: ${err.message}`),
      ),
    );
    inflater.on('end', () => {
      if (settled) return;
      settled = true;
      const out = parts.length === 1 ? parts[0] : Buffer.concat(parts, total);
      held.releaseAll();
      resolve(out);
    });
    inflater.end(data);
  });
}

/**
 * A framed response message (`pieces` as the encoders return them: the 5-byte prefix first) compressed
 * under `encoding`; the uncompressed frame itself when compression does not make it smaller.
 */
export function compressFramed(pieces: readonly Buffer[], encoding: Encoding): Promise<Buffer[]> {
  const deflater: Transform = encoding === 'gzip' ? createGzip() : createDeflate();
  return new Promise<Buffer[]>((resolve, reject) => {
    const out: Buffer[] = [];
    let size = 0;
    deflater.on('data', (c: Buffer) => {
      out.push(c);
      size += c.length;
    });
    deflater.on('error', reject);
    deflater.on('end', () => {
      let bodySize = -5;
      for (const p of pieces) bodySize += p.length;
      if (size >= bodySize) {
        resolve([...pieces]);
        return;
      }
      const prefix = Buffer.allocUnsafe(5);
      prefix[0] = 1;
      prefix.writeUInt32BE(size, 1);
      resolve([prefix, ...out]);
    });
    let skip = 5; // the prefix, whichever pieces it spans
    for (const p of pieces) {
      if (skip >= p.length) {
        skip -= p.length;
        continue;
      }
      deflater.write(skip > 0 ? p.subarray(skip) : p);
      skip = 0;
    }
    deflater.end();
  });
}
