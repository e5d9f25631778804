/**
 * Writes a large JSON inference answer (json-answer.ts) without holding the event loop or the whole text:
 *
 * - all JSON (no binary part): the status and headers go first, then the body with chunked transfer
 *   encoding, one slice at a time; after each slice the writer waits for the socket to drain when it is
 *   over its high-water mark (a client that reads slowly slows the formatting down; one that reads nothing
 *   holds one slice and the socket buffers), and otherwise for the next loop turn, so health checks and
 *   other requests run between slices. A compressed answer goes through a streaming gzip/deflate the same
 *   way. A client that leaves stops the writing.
 * - with binary parts: Inference-Header-Content-Length must be sent before the header, so the header's
 *   text is formatted slice by slice (the loop runs between slices) into Buffers, bounded by the JSON
 *   answer limit, then sent with its binary parts as an ordinary reply.
 */
import type { ServerResponse } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createDeflate, createGzip, type Deflate, type Gzip } from 'node:zlib';
import type { InferenceResponse } from '../../core/index.js';
import { drainOrClose } from '../drain.js';
import type { ResponseCoding } from './transport/body.js';
import { jsonTooLarge, MAX_JSON_RESPONSE_BYTES, type OutputFormat } from './infer-codec.js';
import { jsonAnswerPieces, planJsonAnswer, type JsonAnswerPlan } from './json-answer.js';
import type { Reply, RouteContext } from './route-context.js';

const turn = (): Promise<void> => nextTurn();

/**
 * Answers `response` in slices. Returns the Reply to send (binary parts), or a Reply whose body the
 * function already wrote (then ctx.streamedBytes is set and the server only logs it).
 */
export async function sendSlicedJsonAnswer(
  ctx: RouteContext,
  response: InferenceResponse,
  format: OutputFormat,
  coding: ResponseCoding,
  compress: (headers: Readonly<Record<string, string | number>>, whole: Buffer) => Promise<Reply>,
): Promise<Reply> {
  const plan = await planJsonAnswer(response, format, MAX_JSON_RESPONSE_BYTES, turn);
  if (plan.hasBinary) return headerWithBinary(plan, coding, compress);
  await streamJson(ctx, plan, coding);
  return { status: 200 };
}

async function headerWithBinary(
  plan: JsonAnswerPlan,
  coding: ResponseCoding,
  compress: (headers: Readonly<Record<string, string | number>>, whole: Buffer) => Promise<Reply>,
): Promise<Reply> {
  const parts: Buffer[] = [];
  let headerBytes = 0;
  for (const piece of jsonAnswerPieces(plan)) {
    const b = Buffer.from(piece, 'utf8');
    headerBytes += b.length;
    if (headerBytes > MAX_JSON_RESPONSE_BYTES) {
      throw jsonTooLarge(
        plan.outputs.find((o) => o.form === 'json')?.tensor.name ?? '',
        MAX_JSON_RESPONSE_BYTES,
      );
    }
    parts.push(b);
    await turn();
  }
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': headerBytes,
  };
  if (coding === 'identity') return { status: 200, headers, body: [...parts, ...plan.binary] };
  return compress(headers, Buffer.concat([...parts, ...plan.binary]));
}

async function streamJson(ctx: RouteContext, plan: JsonAnswerPlan, coding: ResponseCoding): Promise<void> {
  const { res, trace } = ctx;
  ctx.streamedBytes = 0;
  trace?.capture('HTTP_SEND_START');
  const headers: (string | number)[] = ['Server', ctx.serverHeader, 'Content-Type', 'application/json'];
  if (coding !== 'identity') headers.push('Content-Encoding', coding);
  res.writeHead(200, headers);
  const sink = coding === 'identity' ? res : compressor(res, coding, ctx);
  try {
    for (const piece of jsonAnswerPieces(plan)) {
      if (res.destroyed) return; // the client left: stop formatting
      if (sink === res) ctx.streamedBytes += Buffer.byteLength(piece, 'utf8');
      if (!sink.write(piece)) await drainOrClose(sink);
      // Always a loop turn too: with a fast reader 'drain' comes back from the write itself (Node flushes a
      // corked socket in a tick), so waiting for it alone would format the whole answer in microtasks.
      await turn();
    }
    if (res.destroyed) return;
    await endOf(sink, res);
    trace?.capture('HTTP_SEND_END');
  } catch (err) {
    // Past the headers an answer cannot become an error reply: cut the connection so the client sees it.
    res.destroy();
    throw err;
  }
}

/** A streaming compressor piped into `res`, counting the compressed bytes; destroyed if the client leaves. */
function compressor(res: ServerResponse, coding: 'gzip' | 'deflate', ctx: RouteContext): Gzip | Deflate {
  const z = coding === 'gzip' ? createGzip() : createDeflate();
  z.on('data', (chunk: Buffer) => {
    ctx.streamedBytes! += chunk.length;
  });
  z.pipe(res);
  res.once('close', () => z.destroy());
  return z;
}

/** Ends the body (through the compressor when there is one); resolves once it is written or the client left. */
function endOf(sink: NodeJS.WritableStream, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('finish', done);
      res.off('close', done);
      resolve();
    };
    res.on('finish', done);
    res.on('close', done);
    sink.end();
    // When the server is closing, the connection goes too so close() can finish (as generate_stream does).
    const server = (res.socket as { server?: { listening?: boolean } } | null)?.server;
    if (server?.listening === false) res.once('finish', () => res.socket?.destroy());
  });
}
