/**
 * The OpenAI-compatible API (`/v1/...`) as one request handler, mounted on the HTTP port or served on a
 * port of its own (server.ts). It only translates: OpenAI JSON → InferenceServerApi calls (the ones the
 * generate endpoints use) → OpenAI JSON or SSE. Routes: GET /v1/models, GET /v1/models/{model},
 * POST /v1/completions, /v1/chat/completions, /v1/embeddings. The restricted-API category `openai`
 * (`--http-restricted-api openai:<key>=<value>`) guards all of them. Every failure leaves through one
 * funnel as OpenAI's `{"error": {...}}` (errors.ts); unexpected ones are logged once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../common/logger.js';
import type { InferenceServerApi, ResolvedModel } from '../../core/index.js';
import { decodeContentEncoding, readBody } from '../http/transport/body.js';
import { isAllowed, restrictionTable, type Restrictions } from '../restricted.js';
import { ChatTemplates } from './chat-template.js';
import type { ModelFacts } from './contract.js';
import { runEmbeddings } from './embeddings.js';
import { badRequest, modelNotFound, OpenAiRequestError, openAiErrorJson, toOpenAiError } from './errors.js';
import { runGeneration, type GenerationContext } from './generation.js';
import { parseChatRequest, parseCompletionRequest, parseEmbeddingRequest, parseJsonBody } from './request.js';

/** Triton's OpenAI frontend default for a request without max_tokens. */
export const DEFAULT_MAX_TOKENS = 16;
/** What one SSE reply may hold unsent before its request is cancelled (sse.ts). */
export const DEFAULT_MAX_BUFFERED_BYTES = 4 << 20;

export interface OpenAiOptions {
  /** Largest request body, before and after decompression (the HTTP port's --http-max-input-size). */
  readonly maxInputSize: number;
  /** max_tokens for a request that gives none (--openai-default-max-tokens). */
  readonly defaultMaxTokens?: number;
  /** --openai-max-buffered-bytes. */
  readonly maxBufferedBytes?: number;
  /** The --model-repository folders, where chat templates are looked up. */
  readonly repositories: readonly string[];
  /** --http-restricted-api: only the `openai` category applies here. */
  readonly restrictedApis?: Restrictions;
  readonly log: Logger;
}

export type OpenAiHandler = (req: IncomingMessage, res: ServerResponse, path: string) => void;

const JSON_HEADERS = { 'Content-Type': 'application/json' } as const;
const OWNER = 'nereid';

function send(res: ServerResponse, status: number, body: string, extra: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...JSON_HEADERS, ...extra, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** True when `path` belongs to this API (the HTTP server's mount test). */
export function isOpenAiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

export function createOpenAiHandler(api: InferenceServerApi, options: OpenAiOptions): OpenAiHandler {
  const { log } = options;
  const routes = new OpenAiRoutes(api, options);
  const restriction = restrictionTable([['openai', 'openai'] as const], options.restrictedApis, 'http').get(
    'openai',
  );
  return (req, res, path) => {
    if (restriction !== undefined && !isAllowed(restriction, req.headers, req.rawHeaders)) {
      const hasBody =
        req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
      send(
        res,
        403,
        openAiErrorJson(restriction.message, 'permission_error'),
        hasBody ? { Connection: 'close' } : {},
      );
      return;
    }
    routes.route(req, res, path).catch((err: unknown) => {
      const e = toOpenAiError(err);
      if (e.unexpected) {
        const detail = err instanceof Error && err.stack !== undefined ? err.stack : String(err);
        log.error(`${req.method ?? ''} ${path}: unexpected error: ${detail}`);
      } else if (log.isVerbose()) {
        log.verbose(`${req.method ?? ''} ${path} failed: ${e.body}`);
      }
      if (res.headersSent) {
        res.destroy();
        return;
      }
      send(res, e.status, e.body);
    });
  };
}

/** The API's routes; every failure is thrown to createOpenAiHandler's one funnel. */
class OpenAiRoutes {
  private readonly templates: ChatTemplates;
  private readonly startedAt = Math.floor(Date.now() / 1000);

  constructor(
    private readonly api: InferenceServerApi,
    private readonly options: OpenAiOptions,
  ) {
    this.templates = new ChatTemplates(options.repositories);
  }

  async route(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const method = req.method ?? '';
    const segs = path.split('/'); // ['', 'v1', ...]
    if (segs[2] === 'models') {
      if (allowed(res, method, 'GET', path)) this.models(res, segs);
      return;
    }
    const action = segs.slice(2).join('/');
    if (action === 'completions' || action === 'chat/completions') {
      if (allowed(res, method, 'POST', path)) await this.generate(req, res, action);
      return;
    }
    if (action === 'embeddings') {
      if (!allowed(res, method, 'POST', path)) return;
      const r = parseEmbeddingRequest(await this.readJson(req));
      send(res, 200, await this.withModel(r.model, (facts) => runEmbeddings(res, facts, r)));
      return;
    }
    send(
      res,
      404,
      openAiErrorJson(`Unknown endpoint ${method} ${path}`, 'invalid_request_error', null, 'unknown_url'),
    );
  }

  /** GET /v1/models (the ready models) and /v1/models/{model}. */
  private models(res: ServerResponse, segs: readonly string[]): void {
    if (segs.length === 3) {
      const names = new Set<string>();
      for (const e of this.api.repositoryIndex(true)) if (e.state === 'READY') names.add(e.name);
      const data = [...names].sort().map((id) => this.modelObject(id));
      send(res, 200, JSON.stringify({ object: 'list', data }));
      return;
    }
    let name: string;
    try {
      name = decodeURIComponent(segs.slice(3).join('/'));
    } catch {
      throw badRequest('malformed percent-encoding in the model name', 'model');
    }
    if (!this.api.isModelReady(name)) throw modelNotFound(name);
    send(res, 200, JSON.stringify(this.modelObject(name)));
  }

  private modelObject(id: string): Record<string, unknown> {
    return { id, object: 'model', created: this.startedAt, owned_by: OWNER };
  }

  /** POST /v1/completions and /v1/chat/completions. */
  private async generate(
    req: IncomingMessage,
    res: ServerResponse,
    action: 'completions' | 'chat/completions',
  ): Promise<void> {
    const doc = await this.readJson(req);
    const ctx: GenerationContext = {
      api: this.api,
      req,
      res,
      defaultMaxTokens: this.options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS,
      maxBufferedBytes: this.options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    };
    let reply;
    if (action === 'completions') {
      const r = parseCompletionRequest(doc);
      reply = await this.withModel(r.model, (facts) =>
        runGeneration(ctx, 'completion', facts, r.prompt, r, r.echo),
      );
    } else {
      const r = parseChatRequest(doc);
      reply = await this.withModel(r.model, async (facts) => {
        // The tools are shown to the model unless tool_choice is 'none' (tools.ts).
        const shown = r.toolChoice.kind === 'none' ? [] : r.tools;
        const prompt = await this.templates.render(
          {
            model: r.model,
            configParameter: chatTemplateParameter(facts),
            modelTemplate: facts.model.chatTemplate,
          },
          r.messages,
          shown,
        );
        return runGeneration(ctx, 'chat', facts, prompt, r, false, r);
      });
    }
    if (reply !== undefined) send(res, reply.status, reply.body);
  }

  private async readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    const { maxInputSize } = this.options;
    const raw = await readBody(req, maxInputSize);
    const body = await decodeContentEncoding(raw, req.headers['content-encoding'], maxInputSize);
    return parseJsonBody(body);
  }

  /**
   * Resolves the model once for the request and runs `use` with its facts (their handle runs the request
   * on the version resolved, held until `use` ends); 404 (unknown) / 503 (known, not ready). Not
   * core/call.ts resolveCall: a failed on-demand load is the answer as it is, while a failed lookup
   * afterwards becomes OpenAI's 404 or 503, which only the repository index can tell apart.
   */
  private async withModel<T>(model: string, use: (facts: ModelFacts) => Promise<T>): Promise<T> {
    const { api } = this;
    let handle: ResolvedModel | undefined;
    // On-demand mode: a model of the repository that is not loaded loads now (its errors are the answer).
    const wait = api.whenServable?.(model);
    const since = wait === undefined ? undefined : await wait;
    try {
      handle = api.resolveModel(model, undefined, since);
    } catch {
      handle = undefined;
    }
    try {
      if (handle === undefined || !handle.isReady()) {
        const known = api.repositoryIndex(false).some((e) => e.name === model);
        if (!known) throw modelNotFound(model);
        throw new OpenAiRequestError('UNAVAILABLE', `model '${model}' is not ready`, 'model');
      }
      return await use(factsOf(model, handle));
    } finally {
      handle?.release();
    }
  }
}

/** False (and a 405 sent) when `method` is not the one `path` takes. */
function allowed(res: ServerResponse, method: string, wanted: 'GET' | 'POST', path: string): boolean {
  if (method === wanted) return true;
  send(res, 405, openAiErrorJson(`Method ${method} not allowed on ${path}`, 'invalid_request_error'), {
    Allow: wanted,
  });
  return false;
}

function factsOf(model: string, handle: ResolvedModel): ModelFacts {
  const meta = handle.metadata;
  const config = handle.configJson();
  const optionalInputs = new Set<string>();
  const inputs = Array.isArray(config.input) ? config.input : [];
  for (const i of inputs) {
    const o = i as { name?: unknown; optional?: unknown };
    if (o.optional === true && typeof o.name === 'string') optionalInputs.add(o.name);
  }
  return {
    name: model,
    inputs: meta.inputs,
    outputs: meta.outputs,
    optionalInputs,
    decoupled: handle.decoupled,
    backend: typeof config.backend === 'string' ? config.backend : '',
    model: handle,
  };
}

function chatTemplateParameter(facts: ModelFacts): string | undefined {
  const params = facts.model.configJson().parameters as
    Record<string, { string_value?: unknown }> | undefined;
  const v = params?.chat_template?.string_value;
  return typeof v === 'string' ? v : undefined;
}
