/**
 * The generate extension: POST /v2/models/{m}[/versions/{v}]/generate and /generate_stream, with Triton's
 * semantics. /generate answers one JSON object and fails unless the model produced exactly one response
 * (a decoupled model's flag-only final does not count). /generate_stream answers Server-Sent Events, one
 * `data: {json}\n\n` per response, for any model. Errors before the request is accepted are ordinary JSON
 * error replies; once accepted, a failure is an `{"error": ...}` event, under the failure's status when it
 * is the first thing to report, under 200 after an event went out. A client that goes away cancels the
 * request (queued: removed; running: its signal aborts). Both are traced (HTTP_RECV_*, and for a stream
 * HTTP_SEND_START at its first byte and HTTP_SEND_END once ended, INFER_RESPONSE_COMPLETE per response)
 * and access-logged as an infer request is.
 */
import { MODEL_VARIANT_HEADER, modelForVariant } from '../model-variant.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { internal, NereidError } from '../../common/errors.js';
import { drainOrClose } from '../drain.js';
import {
  type DecodedRequest,
  type InferenceResponse,
  type RequestTrace,
  type ResolvedModel,
  resolveCall,
  streamCall,
} from '../../core/index.js';
import { CancelOnClose } from '../signal-pool.js';
import { startHttpTrace } from './trace-edge.js';
import { decodeContentEncoding, readBody } from './transport/body.js';
import { errorBody, httpStatusOf } from './transport/errors.js';
import { generateResponseJson, type GenerateRequestParts } from './generate-codec.js';
import type { Reply, RouteContext } from './route-context.js';

const JSON_TYPE = { 'Content-Type': 'application/json' } as const;
const SSE_TYPE = { 'Content-Type': 'text/event-stream; charset=utf-8' } as const;

/** Returned once the handler has written the reply itself (the server then sends nothing more). */
const STREAMED: Reply = { status: 200 };

export const EXACTLY_ONE_RESPONSE =
  'generate expects model to produce exactly 1 response, use generate stream for model that generates ' +
  'various number of responses';

const event = (json: string): string => `data: ${json}\n\n`;

/** The error event's text, and whether the error is a bug the server's funnel should log. */
function errorEvent(err: unknown): { status: number; text: string; unexpected: boolean } {
  if (err instanceof NereidError) {
    return { status: httpStatusOf(err.code), text: event(errorBody(err.message)), unexpected: false };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { status: 500, text: event(errorBody(`internal error: ${message}`)), unexpected: true };
}

/** Ends a streamed reply; when the server is closing, the connection goes too so close() can finish. */
function finish(req: IncomingMessage, res: ServerResponse): void {
  res.end(() => {
    const server = (req.socket as { server?: { listening?: boolean } }).server;
    if (server?.listening === false) req.socket.destroy();
  });
}

async function stream(
  ctx: RouteContext,
  responses: AsyncIterable<InferenceResponse>,
  countable: (r: InferenceResponse) => boolean,
): Promise<void> {
  const { req, res, trace } = ctx;
  ctx.streamedBytes = 0;
  const it = responses[Symbol.asyncIterator]();
  let started = false;
  const start = (status: number): void => {
    started = true;
    trace?.capture('HTTP_SEND_START');
    res.writeHead(status, SSE_TYPE);
  };
  const write = (text: string): boolean => {
    ctx.streamedBytes! += Buffer.byteLength(text);
    return res.write(text);
  };
  const end = (): void => {
    finish(req, res);
    trace?.capture('HTTP_SEND_END');
  };
  try {
    for (;;) {
      const next = await it.next();
      if (res.destroyed) return; // the client is gone; its request was cancelled
      if (next.done === true) break;
      trace?.capture('INFER_RESPONSE_COMPLETE');
      if (!started) start(200);
      if (!countable(next.value)) continue;
      if (!write(event(generateResponseJson(next.value)))) await drainOrClose(res);
    }
  } catch (err) {
    if (res.destroyed) return;
    const e = errorEvent(err);
    if (!started) start(e.status);
    write(e.text);
    end();
    if (e.unexpected) throw err; // the funnel logs it; the reply is already complete
    return;
  }
  if (!started) start(200);
  end();
}

export async function generate(ctx: RouteContext, streaming: boolean): Promise<Reply> {
  const model = modelForVariant(ctx.match.model!, ctx.req.headers[MODEL_VARIANT_HEADER]);
  // One lookup for the whole request: the handle holds the version it resolved until released.
  const resolved = resolveCall(ctx.api, model, ctx.match.version);
  const handle = resolved instanceof Promise ? await resolved : resolved;
  ctx.resolvedVersion = handle.version;
  try {
    return await generateOn(ctx, handle, streaming, model);
  } finally {
    handle.release();
  }
}

async function generateOn(
  ctx: RouteContext,
  handle: ResolvedModel,
  streaming: boolean,
  model: string,
): Promise<Reply> {
  const { req } = ctx;
  const trace = startHttpTrace(ctx, model);
  const ticket = ctx.json.admit(req, false);
  let parts: GenerateRequestParts;
  try {
    const raw = await readBody(req, ctx.maxInputSize, undefined, ticket.onBytes);
    const body = await decodeContentEncoding(raw, req.headers['content-encoding'], ctx.maxInputSize);
    trace?.capture('HTTP_RECV_END');
    ctx.bytesIn = body.length;
    parts = await ctx.json.parseGenerate(body, handle.metadata, ctx.maxInputSize, ticket);
  } finally {
    ticket.release();
  }
  ctx.requestId = parts.id;
  const cancel = new CancelOnClose(ctx.res, false);
  try {
    const call = { signal: cancel.signal, trace, timings: ctx.timings, forwarded: undefined };
    // Validation errors throw here, before anything was accepted: they are plain JSON error replies.
    const responses = streamCall(handle, generateRequest(model, ctx.match.version, parts), call);
    const countable = handle.decoupled ? isReportable : everyResponse;
    if (!streaming) return await oneResponse(responses, countable, trace);
    await stream(ctx, responses, countable);
    return STREAMED;
  } finally {
    cancel.done();
  }
}

/** The request a /generate body makes (the model's default outputs). */
function generateRequest(
  model: string,
  version: string | undefined,
  parts: GenerateRequestParts,
): DecodedRequest {
  return {
    modelName: model,
    modelVersion: version ?? '',
    id: parts.id,
    inputs: parts.inputs,
    outputs: undefined,
    parameters: parts.parameters,
  };
}

/** A decoupled model's flag-only final response carries nothing to report. */
const isReportable = (r: InferenceResponse): boolean =>
  !r.final || r.outputs.length > 0 || Object.keys(r.parameters).length > 0;
const everyResponse = (): boolean => true;

/** /generate: the model's one reportable response, else Triton's EXACTLY_ONE_RESPONSE error. */
async function oneResponse(
  responses: AsyncIterable<InferenceResponse>,
  countable: (r: InferenceResponse) => boolean,
  trace: RequestTrace | undefined,
): Promise<Reply> {
  let first: InferenceResponse | undefined;
  let count = 0;
  for await (const r of responses) {
    trace?.capture('INFER_RESPONSE_COMPLETE');
    if (!countable(r)) continue;
    first ??= r;
    count++;
  }
  if (count !== 1 || first === undefined) throw internal(EXACTLY_ONE_RESPONSE);
  return { status: 200, headers: JSON_TYPE, body: generateResponseJson(first) };
}
