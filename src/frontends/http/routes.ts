/**
 * One handler per KServe v2 / Triton route. Handlers only translate HTTP to InferenceServerApi calls and
 * back; they throw NereidError and the server's one funnel (errors.ts) turns that into the reply.
 */
import { invalidArg, unsupported } from '../../common/errors.js';
import {
  CUDA_IPC_HANDLE_BYTES,
  type InferenceResponse,
  type LoadOptions,
  type ResolvedModel,
  refuseDecoupled,
  resolveCall,
  runCall,
} from '../../core/index.js';
import { startHttpTrace } from './trace-edge.js';
import { CancelOnClose } from '../signal-pool.js';
import { decodeContentEncoding, chooseResponseCoding, encodeResponse, readBody } from './transport/body.js';
import { errorBody } from './transport/errors.js';
import { MODEL_VARIANT_HEADER, modelForVariant } from '../model-variant.js';
import { generate } from './generate.js';
import {
  encodeInferResponse,
  inferenceHeaderLength,
  type DecodedInferRequest,
  type OutputFormat,
} from './infer-codec.js';
import { jsonElementCount, SLICED_ANSWER_MIN_ELEMENTS } from './json-answer.js';
import { sendSlicedJsonAnswer } from './json-answer-send.js';
import { isJsonObject, type JsonIn, type JsonInObject } from './json.js';
import { openApiDocument } from './openapi.js';
import { deduceRawInput } from './raw-input.js';
import type { JsonTicket } from './json-pool.js';
import type { Reply, RouteContext } from './route-context.js';
import type { RouteName } from './router.js';

type Handler = (ctx: RouteContext) => Reply | Promise<Reply>;

const JSON_TYPE = { 'Content-Type': 'application/json' } as const;
// RFC 9512's media type for YAML.
const YAML_TYPE = { 'Content-Type': 'application/yaml' } as const;
const EMPTY_OK: Reply = { status: 200 };
const EMPTY_BAD: Reply = { status: 400 };

function json(value: unknown): Reply {
  return { status: 200, headers: JSON_TYPE, body: JSON.stringify(value) };
}

/** Reads, decompresses and parses an optional JSON body; undefined when the body is empty. */
async function readJsonBody(ctx: RouteContext): Promise<JsonIn | undefined> {
  const ticket = ctx.json.admit(ctx.req, false);
  try {
    const raw = await readBody(ctx.req, ctx.maxInputSize, undefined, ticket.onBytes);
    const body = await decodeContentEncoding(raw, ctx.req.headers['content-encoding'], ctx.maxInputSize);
    if (body.length === 0) return undefined;
    return await ctx.json.parse(body, ticket);
  } finally {
    ticket.release();
  }
}

function parametersOf(doc: JsonIn | undefined): JsonInObject | undefined {
  if (!isJsonObject(doc)) return undefined;
  const params = doc.parameters;
  if (params === undefined) return undefined;
  if (!isJsonObject(params))
    throw invalidArg("Unable to parse 'parameters': attempt to access JSON non-object as object");
  return params;
}

function rejectRepositoryName(ctx: RouteContext): void {
  if (ctx.match.repository !== undefined) {
    throw unsupported("'repository_name' specification is not supported");
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function loadOptions(params: JsonInObject | undefined): LoadOptions | undefined {
  if (params === undefined) return undefined;
  let config: string | undefined;
  let files: Map<string, Buffer> | undefined;
  for (const key of Object.keys(params)) {
    const v = params[key];
    if (typeof v !== 'string') {
      throw invalidArg(`Unable to parse '${key}': attempt to access JSON non-string as string`);
    }
    if (key === 'config') {
      config = v;
    } else if (key.startsWith('file:')) {
      if (v.length % 4 !== 0 || !BASE64.test(v)) throw invalidArg(`'${key}' is not valid base64`);
      (files ??= new Map()).set(key.slice('file:'.length), Buffer.from(v, 'base64'));
    } else {
      throw invalidArg(`unexpected load parameter '${key}': expected 'config' or 'file:<version>/<path>'`);
    }
  }
  if (config === undefined && files === undefined) return undefined;
  return { ...(config !== undefined && { config }), ...(files !== undefined && { files }) };
}

/** The model a /v2/models/<m>/... request names: <m>, or <m>.<variant> with the variant header. */
export function modelOf(ctx: RouteContext): string {
  return modelForVariant(ctx.match.model!, ctx.req.headers[MODEL_VARIANT_HEADER]);
}

function infer(ctx: RouteContext): Promise<Reply> {
  const model = modelOf(ctx);
  // One lookup for the whole request: the handle holds the version it resolved until inferOn releases it.
  // No async function of its own around inferOn (core/call.ts, performance rules).
  const handle = resolveCall(ctx.api, model, ctx.match.version);
  if (handle instanceof Promise) return handle.then((h) => inferOn(ctx, h, model));
  return inferOn(ctx, handle, model);
}

/** Runs one inference request on `handle`, and releases it whatever happens. */
async function inferOn(ctx: RouteContext, handle: ResolvedModel, model: string): Promise<Reply> {
  try {
    const { req, res } = ctx;
    ctx.resolvedVersion = handle.version;
    refuseDecoupled(handle, HTTP_DECOUPLED);
    const trace = startHttpTrace(ctx, model);
    // A large JSON document takes its share of the JSON workers' budget as its body arrives.
    const ticket = ctx.json.admit(req, true);
    let decoded: DecodedInferRequest;
    try {
      const body = await readInferBody(ctx, handle, ticket.onBytes);
      trace?.capture('HTTP_RECV_END');
      const d = decodeInferBody(ctx, handle, model, body, ticket);
      decoded = d instanceof Promise ? await d : d;
    } finally {
      ticket.release();
    }
    ctx.requestId = decoded.request.id;
    const cancel = new CancelOnClose(res);
    let response: InferenceResponse;
    try {
      const forwarded = ctx.forwardHeaders?.parameters(req.rawHeaders);
      const call = { signal: cancel.signal, trace, timings: ctx.timings, forwarded };
      response = await runCall(handle, decoded.request, call);
    } finally {
      cancel.done();
    }
    trace?.capture('INFER_RESPONSE_COMPLETE');
    const reply = inferReply(ctx, response, decoded.format);
    return reply instanceof Promise ? await reply : reply;
  } finally {
    handle.release();
  }
}

/** The HTTP frontend's wording for a decoupled model on a unary route (Triton's text). */
export const HTTP_DECOUPLED = "HTTP end point doesn't support models with decoupled transaction policy";

/**
 * An /infer body, decompressed. Not an async function: an uncompressed body (most) is readBody's own
 * promise, so inferOn's one await takes it (core/call.ts, performance rules).
 */
function readInferBody(
  ctx: RouteContext,
  handle: ResolvedModel,
  onBytes: ((bytes: number) => void) | undefined,
): Promise<Buffer> {
  const { req, maxInputSize } = ctx;
  const raw = readBody(req, maxInputSize, () => handle.sharesInputMemory, onBytes);
  const contentEncoding = req.headers['content-encoding'];
  if (contentEncoding === undefined) return raw;
  return raw.then((r) => decodeContentEncoding(r, contentEncoding, maxInputSize));
}

/** Decodes an /infer body: a raw binary input, or the JSON header (on a JSON worker when large: a promise). */
function decodeInferBody(
  ctx: RouteContext,
  handle: ResolvedModel,
  model: string,
  body: Buffer,
  ticket: JsonTicket,
): DecodedInferRequest | Promise<DecodedInferRequest> {
  ctx.bytesIn = body.length;
  const version = ctx.match.version;
  const headerLength = inferenceHeaderLength(ctx.req.headers['inference-header-content-length'], body.length);
  if (headerLength === 0) {
    const input = deduceRawInput(handle.configJson(), model, body);
    const request = {
      modelName: model,
      modelVersion: version ?? '',
      id: undefined,
      inputs: [input],
      outputs: undefined,
      parameters: undefined,
    };
    return { request, format: { defaultBinary: true, binary: new Map() } };
  }
  const options = { modelName: model, modelVersion: version, maxInputSize: ctx.maxInputSize };
  return ctx.json.decodeInfer(body, headerLength, options, ticket);
}

/** The /infer reply: JSON, JSON and binary outputs in one body, or a large JSON answer written in slices. */
function inferReply(
  ctx: RouteContext,
  response: InferenceResponse,
  format: OutputFormat,
): Reply | Promise<Reply> {
  const acceptEncoding = ctx.req.headers['accept-encoding'];
  const coding = acceptEncoding === undefined ? 'identity' : chooseResponseCoding(acceptEncoding);
  // A large JSON answer is formatted and written in slices, the event loop running between them.
  if (jsonElementCount(response, format) >= SLICED_ANSWER_MIN_ELEMENTS) {
    return sendSlicedJsonAnswer(ctx, response, format, coding, (headers, whole) =>
      compressed(headers, whole, coding as 'gzip' | 'deflate'),
    );
  }
  const encoded = encodeInferResponse(response, format);
  if (!encoded.hasBinary) {
    if (coding === 'identity') return { status: 200, headers: JSON_TYPE, body: encoded.json };
    return compressed(JSON_TYPE, Buffer.from(encoded.json, 'utf8'), coding);
  }
  // The JSON header and the binary outputs in one Buffer: one copy of the (usually small) outputs instead
  // of a Buffer for the header and a write per part.
  const headerBytes = Buffer.byteLength(encoded.json, 'utf8');
  let size = headerBytes;
  for (const b of encoded.binary) size += b.length;
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': headerBytes,
  };
  if (coding === 'identity' && size > BINARY_JOIN_MAX_BYTES) {
    // Large outputs are written as they are, not copied.
    return { status: 200, headers, body: [Buffer.from(encoded.json, 'utf8'), ...encoded.binary] };
  }
  const whole = Buffer.allocUnsafe(size);
  let at = whole.write(encoded.json, 0, 'utf8');
  for (const b of encoded.binary) at += b.copy(whole, at);
  return coding === 'identity' ? { status: 200, headers, body: whole } : compressed(headers, whole, coding);
}

/** Largest binary reply built as one Buffer (see inferOn); larger ones go out as their parts. */
const BINARY_JOIN_MAX_BYTES = 64 * 1024;

async function compressed(
  headers: Readonly<Record<string, string | number>>,
  whole: Buffer,
  coding: 'gzip' | 'deflate',
): Promise<Reply> {
  return {
    status: 200,
    headers: { ...headers, 'Content-Encoding': coding },
    body: await encodeResponse(whole, coding),
  };
}

async function repositoryIndex(ctx: RouteContext): Promise<Reply> {
  const doc = await readJsonBody(ctx);
  let ready = false;
  if (isJsonObject(doc) && doc.ready !== undefined) {
    if (typeof doc.ready !== 'boolean') throw invalidArg("Invalid value for 'ready': expected a boolean");
    ready = doc.ready;
  }
  // Triton's JSON: a model never loaded is just {name}; `version`, `state` and `reason` appear only when set.
  const entries = ctx.api.repositoryIndex(ready).map((e) => {
    const out: Record<string, string> = { name: e.name };
    if (e.version !== undefined) out.version = e.version;
    if (e.state !== 'UNKNOWN') out.state = e.state;
    if (e.reason) out.reason = e.reason;
    return out;
  });
  return json(entries);
}

async function repositoryLoad(ctx: RouteContext): Promise<Reply> {
  rejectRepositoryName(ctx);
  const options = loadOptions(parametersOf(await readJsonBody(ctx)));
  await ctx.api.loadModel(ctx.match.model!, options);
  return EMPTY_OK;
}

async function repositoryUnload(ctx: RouteContext): Promise<Reply> {
  rejectRepositoryName(ctx);
  const params = parametersOf(await readJsonBody(ctx));
  let unloadDependents = false;
  if (params?.unload_dependents !== undefined) {
    if (typeof params.unload_dependents !== 'boolean') {
      throw invalidArg("Unable to parse 'unload_dependents': attempt to access JSON non-boolean as boolean");
    }
    unloadDependents = params.unload_dependents;
  }
  await ctx.api.unloadModel(ctx.match.model!, { unloadDependents });
  return EMPTY_OK;
}

const MODEL_NOT_READY: Reply = {
  status: 400,
  headers: JSON_TYPE,
  body: errorBody('Model version not ready'),
};

async function logging(ctx: RouteContext): Promise<Reply> {
  if (ctx.req.method === 'GET') return json(ctx.api.logSettings());
  const doc = await readJsonBody(ctx);
  if (doc !== undefined && !isJsonObject(doc)) throw invalidArg('logging settings must be a JSON object');
  const update: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc ?? {})) {
    if (key === 'log_file') throw invalidArg("log_file can't be set while the server is running");
    if (!['log_info', 'log_warning', 'log_error', 'log_verbose_level', 'log_format'].includes(key)) {
      throw invalidArg(`unknown logging setting '${key}'`);
    }
    update[key] = typeof value === 'bigint' ? Number(value) : value;
  }
  return json(ctx.api.updateLogSettings(update));
}

async function traceSetting(ctx: RouteContext): Promise<Reply> {
  const model = ctx.match.model;
  if (ctx.req.method === 'GET') return json(ctx.api.traceSettings(model));
  const doc = await readJsonBody(ctx);
  if (doc !== undefined && !isJsonObject(doc)) throw invalidArg('trace settings must be a JSON object');
  const update: Record<string, string | string[] | null> = {};
  for (const [key, value] of Object.entries(doc ?? {})) {
    if (value === null || typeof value === 'string') update[key] = value;
    else if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string'))
      update[key] = value;
    // A number is taken as its decimal text only when that text is exact: JSON.parse has rounded integers
    // beyond 2^53 (9007199254740993 would become "9007199254740992") and 1e21 prints as "1e+21".
    else if (typeof value === 'number' && Number.isSafeInteger(value)) update[key] = String(value);
    else throw invalidArg(`trace setting '${key}' must be a string, a list of strings, an integer or null`);
  }
  return json(ctx.api.updateTraceSettings(model, update));
}

/** A register request's `offset` / `byte_size`: values beyond 2^53 pass rounded (the core refuses them). */
function registerSize(doc: JsonInObject, member: string): number | undefined {
  const v = doc[member];
  if (v === undefined) return undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'bigint' && v >= 0n) return Number(v);
  throw invalidArg(
    `Unable to parse '${member}': attempt to access JSON non-unsigned-integer as unsigned-integer`,
  );
}

/** A register request's unsigned member, with TritonJson's texts (Triton answers 500, Nereid 400). */
function registerUint(doc: JsonInObject, member: string): number {
  const v = doc[member];
  if (v === undefined) throw invalidArg(`attempt to access non-existing object member '${member}'`);
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'bigint' && v >= 0n) return Number(v);
  throw invalidArg('attempt to access JSON non-unsigned-integer as unsigned-integer');
}

/**
 * CUDA register, parsed as Triton's GPU build parses it (so a malformed request gets Triton's answer);
 * the core then refuses it: this server has no GPU (core/shm/cuda.ts).
 */
async function cudaSharedMemoryRegister(ctx: RouteContext): Promise<Reply> {
  const region = ctx.match.region;
  if (region === undefined) {
    // The core answers: client shm disabled, or Triton's "'region name' is necessary".
    ctx.api.registerCudaSharedMemory('', Buffer.alloc(0), 0, 0);
    return EMPTY_OK;
  }
  const doc = await readJsonBody(ctx);
  const body = isJsonObject(doc) ? doc : {};
  const rawHandle = body.raw_handle;
  if (rawHandle === undefined) throw invalidArg("Shared memory register request has no 'raw_handle' field");
  const b64 = isJsonObject(rawHandle) ? rawHandle.b64 : undefined;
  if (b64 === undefined) throw invalidArg("attempt to access non-existing object member 'b64'");
  if (typeof b64 !== 'string') throw invalidArg('attempt to access JSON non-string as string');
  const byteSize = registerUint(body, 'byte_size');
  const deviceId = registerUint(body, 'device_id');
  const handle = b64.length % 4 === 0 && BASE64.test(b64) ? Buffer.from(b64, 'base64') : undefined;
  if (handle?.length !== CUDA_IPC_HANDLE_BYTES) {
    throw invalidArg("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t");
  }
  ctx.api.registerCudaSharedMemory(region, handle, deviceId, byteSize);
  return EMPTY_OK;
}

async function systemSharedMemoryRegister(ctx: RouteContext): Promise<Reply> {
  const region = ctx.match.region;
  // No region in the path: the core answers (client shm disabled, or Triton's "region name is necessary").
  if (region === undefined) {
    await ctx.api.registerSystemSharedMemory('', '', 0, 0);
    return EMPTY_OK;
  }
  const doc = await readJsonBody(ctx);
  const body = isJsonObject(doc) ? doc : {};
  const key = body.key;
  if (key === undefined) throw invalidArg("Shared memory register request has no 'key' field");
  if (typeof key !== 'string')
    throw invalidArg("Unable to parse 'key': attempt to access JSON non-string as string");
  const offset = registerSize(body, 'offset') ?? 0;
  const byteSize = registerSize(body, 'byte_size');
  if (byteSize === undefined) throw invalidArg("Shared memory register request has no 'byte_size' field");
  await ctx.api.registerSystemSharedMemory(region, key, offset, byteSize);
  return EMPTY_OK;
}

export const HANDLERS: Readonly<Record<RouteName, Handler>> = {
  serverMetadata: (ctx) => json(ctx.api.serverMetadata()),
  serverLive: (ctx) => (ctx.api.isLive() ? EMPTY_OK : EMPTY_BAD),
  serverReady: (ctx) => (ctx.api.isReady() ? EMPTY_OK : EMPTY_BAD),
  modelMetadata: (ctx) => json(ctx.api.modelMetadata(modelOf(ctx), ctx.match.version)),
  modelReady: (ctx) => (ctx.api.isModelReady(modelOf(ctx), ctx.match.version) ? EMPTY_OK : MODEL_NOT_READY),
  modelConfig: (ctx) => json(ctx.api.modelConfigJson(modelOf(ctx), ctx.match.version)),
  modelInfer: infer,
  modelGenerate: (ctx) => generate(ctx, false),
  modelGenerateStream: (ctx) => generate(ctx, true),
  modelStats: (ctx) => json({ model_stats: ctx.api.modelStatistics(ctx.match.model, ctx.match.version) }),
  allModelStats: (ctx) => json({ model_stats: ctx.api.modelStatistics() }),
  repositoryIndex,
  repositoryLoad,
  repositoryUnload,
  logging,
  traceSetting,
  cudaSharedMemoryStatus: (ctx) => json(ctx.api.cudaSharedMemoryStatus(ctx.match.region)),
  cudaSharedMemoryRegister,
  cudaSharedMemoryUnregister: (ctx) => {
    ctx.api.unregisterCudaSharedMemory(ctx.match.region);
    return EMPTY_OK;
  },
  systemSharedMemoryStatus: (ctx) => json(ctx.api.systemSharedMemoryStatus(ctx.match.region)),
  systemSharedMemoryRegister,
  systemSharedMemoryUnregister: async (ctx) => {
    await ctx.api.unregisterSystemSharedMemory(ctx.match.region);
    return EMPTY_OK;
  },
  dashboardPage: (ctx) => ctx.dashboard!.page(ctx.match.file, ctx.req.headers['if-none-match']),
  dashboardServer: (ctx) => ctx.dashboard!.server(),
  dashboardMetrics: (ctx) => ctx.dashboard!.metrics(),
  dashboardLogs: (ctx) => ctx.dashboard!.logs(),
  openApi: async () => ({ status: 200, headers: YAML_TYPE, body: await openApiDocument() }),
};
