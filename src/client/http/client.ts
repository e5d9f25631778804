/**
 * HttpClient: Triton's HTTP/REST protocol (KServe v2 plus Triton's extensions) from TypeScript, over a
 * keep-alive node:http agent. Inference uses the binary tensor data extension by default. Every failure
 * the server reports becomes a NereidClientError with the HTTP status and the server's message.
 */
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { NereidClientError } from '../errors.js';
import type { InferInput } from '../infer-input.js';
import type { InferResult } from '../infer-result.js';
import { versionString } from '../request.js';
import type {
  CallOptions,
  CudaSharedMemoryStatus,
  InferenceClient,
  InferOptions,
  LoadModelOptions,
  LogSettings,
  ModelConfigJson,
  ModelMetadata,
  ModelStatistics,
  RepositoryIndexEntry,
  RepositoryIndexOptions,
  ServerMetadata,
  SystemSharedMemoryStatus,
  TraceSettings,
  TraceSettingsUpdate,
  UnloadModelOptions,
} from '../types.js';
import { decodeInferResponse, encodeInferRequest, errorMessage } from './infer-codec.js';
import { toJsonText, type JsonOut } from './json.js';
import { SseParser } from './sse.js';
import { HttpTransport, type HttpTransportOptions, type TransportResponse } from './transport.js';
import { indexEntries, loadParameters, modelMetadata, serverMetadata, statistics } from '../answers.js';

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

export type HttpClientOptions = HttpTransportOptions;

export type Compression = 'gzip' | 'deflate';

export interface HttpInferOptions extends InferOptions {
  /** Compress the request body. */
  readonly requestCompression?: Compression;
  /** Ask the server to compress the response. */
  readonly responseCompression?: Compression;
}

/** The body of a generate / generate_stream request: input names and parameters as JSON values. */
export type GenerateRequest = Readonly<Record<string, JsonOut>>;

/** One generate response: a flat object with model_name, model_version, id, parameters and the outputs. */
export type GenerateResponse = Record<string, unknown>;

export interface GenerateOptions extends CallOptions {
  /** '' or omitted: the version the model's version policy picks. */
  readonly modelVersion?: string | number;
}

const enc = encodeURIComponent;

function modelPath(name: string, version?: string | number): string {
  if (typeof name !== 'string' || name === '') throw new TypeError('model name must be a non-empty string');
  const v = versionString(version);
  return `/v2/models/${enc(name)}${v === '' ? '' : `/versions/${enc(v)}`}`;
}

const regionPath = (region: string | undefined): string =>
  region === undefined || region === '' ? '' : `/region/${enc(region)}`;

export class HttpClient implements InferenceClient {
  readonly #transport: HttpTransport;

  /** `url`: `host:port` (as Triton's clients take it), or `http(s)://host:port[/base-path]`. */
  constructor(url: string, options: HttpClientOptions = {}) {
    this.#transport = new HttpTransport(url, options);
  }

  get url(): string {
    return this.#transport.url;
  }

  async isServerLive(options?: CallOptions): Promise<boolean> {
    return (await this.#get('/v2/health/live', options)).status === 200;
  }

  async isServerReady(options?: CallOptions): Promise<boolean> {
    return (await this.#get('/v2/health/ready', options)).status === 200;
  }

  async isModelReady(name: string, version?: string | number, options?: CallOptions): Promise<boolean> {
    return (await this.#get(`${modelPath(name, version)}/ready`, options)).status === 200;
  }

  async serverMetadata(options?: CallOptions): Promise<ServerMetadata> {
    return serverMetadata(await this.#json('GET', '/v2', undefined, options));
  }

  async modelMetadata(
    name: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelMetadata> {
    return modelMetadata(await this.#json('GET', modelPath(name, version), undefined, options));
  }

  async modelConfig(
    name: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelConfigJson> {
    const doc = await this.#json('GET', `${modelPath(name, version)}/config`, undefined, options);
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
      throw new NereidClientError('malformed response from the server: the model config is not an object');
    }
    return doc as ModelConfigJson;
  }

  async infer(
    model: string,
    inputs: readonly InferInput[],
    options: HttpInferOptions = {},
  ): Promise<InferResult> {
    const path = `${modelPath(model, options.modelVersion)}/infer`;
    const request = encodeInferRequest(inputs, options);
    const headers: Record<string, string | number> = {
      'Content-Type': request.headerLength === undefined ? 'application/json' : 'application/octet-stream',
    };
    if (request.headerLength !== undefined) headers['Inference-Header-Content-Length'] = request.headerLength;
    let chunks = request.chunks;
    let byteLength = request.byteLength;
    if (options.requestCompression !== undefined) {
      const whole = Buffer.concat(chunks, byteLength);
      const packed = options.requestCompression === 'gzip' ? await gzip(whole) : await deflate(whole);
      chunks = [packed];
      byteLength = packed.length;
      headers['Content-Encoding'] = options.requestCompression;
    }
    if (options.responseCompression !== undefined) headers['Accept-Encoding'] = options.responseCompression;
    const res = await this.#transport.request({
      method: 'POST',
      path,
      body: chunks,
      byteLength,
      headers: { ...headers, ...options.headers },
      signal: options.signal,
    });
    this.#check(res);
    const len = res.headers['inference-header-content-length'];
    return decodeInferResponse(res.body, len === undefined ? undefined : Number(len), res.status);
  }

  /**
   * Triton's generate extension: `POST …/generate` with one JSON object (inputs by name, other keys as
   * parameters), answered by one flat JSON object. A server error throws NereidClientError.
   */
  async generate(
    model: string,
    request: GenerateRequest,
    options: GenerateOptions = {},
  ): Promise<GenerateResponse> {
    const path = `${modelPath(model, options.modelVersion)}/generate`;
    return objectOf<GenerateResponse>(
      await this.#json('POST', path, request, options),
      'the generate response',
    );
  }

  /**
   * `POST …/generate_stream`: each server-sent event as it arrives, parsed (a decoupled model's responses;
   * the flag-only final one is never sent). An event carrying `error` — a failure after the request was
   * accepted, possibly after other events — throws NereidClientError with its message (and the reply's
   * status when the failure came first, before any event). `options.signal` aborts the call (the loop
   * throws the signal's reason); leaving the loop early closes the connection, which cancels the request
   * on the server.
   */
  async *generateStream(
    model: string,
    request: GenerateRequest,
    options: GenerateOptions = {},
  ): AsyncGenerator<GenerateResponse, void, undefined> {
    const path = `${modelPath(model, options.modelVersion)}/generate_stream`;
    const res = await this.#transport.stream({
      method: 'POST',
      path,
      body: [Buffer.from(toJsonText(request), 'utf8')],
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...options.headers },
      signal: options.signal,
    });
    let finished = false;
    try {
      const type = String(res.headers['content-type'] ?? '');
      if (!type.startsWith('text/event-stream')) {
        // Refused before the stream began: an ordinary JSON error reply (or, from a proxy, anything).
        const chunks: Buffer[] = [];
        for await (const c of res.body) chunks.push(c);
        finished = true;
        const body = Buffer.concat(chunks);
        if (res.status >= 200 && res.status < 300) {
          throw new NereidClientError(
            `malformed response from the server: generate_stream answered '${type}', not text/event-stream`,
            { status: res.status },
          );
        }
        throw new NereidClientError(errorMessage(body, res.statusText), { status: res.status });
      }
      const status = res.status >= 200 && res.status < 300 ? undefined : res.status;
      const parser = new SseParser();
      for await (const chunk of res.body) {
        for (const data of parser.push(chunk)) {
          let doc: unknown;
          try {
            doc = JSON.parse(data) as unknown;
          } catch {
            throw new NereidClientError('malformed response from the server: an event is not JSON', {
              status: res.status,
            });
          }
          const event = objectOf<GenerateResponse>(doc, 'a generate_stream event');
          if (typeof event.error === 'string') throw new NereidClientError(event.error, { status });
          yield event;
        }
      }
      finished = true;
      if (parser.end()) {
        throw new NereidClientError('the connection closed in the middle of a generate_stream event');
      }
    } finally {
      // Left early (break, throw, abort): close the connection so the server cancels the request.
      if (!finished) res.destroy();
    }
  }

  async modelStatistics(
    name?: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelStatistics[]> {
    const path = name === undefined || name === '' ? '/v2/models/stats' : `${modelPath(name, version)}/stats`;
    return statistics(await this.#json('GET', path, undefined, options));
  }

  async repositoryIndex(options: RepositoryIndexOptions = {}): Promise<RepositoryIndexEntry[]> {
    const body = options.ready === undefined ? undefined : { ready: options.ready };
    return indexEntries(await this.#json('POST', '/v2/repository/index', body, options));
  }

  async loadModel(name: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters = loadParameters(options, (b) => Buffer.from(b).toString('base64'));
    const body = Object.keys(parameters).length > 0 ? { parameters } : undefined;
    await this.#call('POST', `/v2/repository/models/${enc(checkName(name))}/load`, body, options);
  }

  async unloadModel(name: string, options: UnloadModelOptions = {}): Promise<void> {
    const body = { parameters: { unload_dependents: options.unloadDependents ?? false } };
    await this.#call('POST', `/v2/repository/models/${enc(checkName(name))}/unload`, body, options);
  }

  async systemSharedMemoryStatus(
    region?: string,
    options?: CallOptions,
  ): Promise<SystemSharedMemoryStatus[]> {
    const doc = await this.#json(
      'GET',
      `/v2/systemsharedmemory${regionPath(region)}/status`,
      undefined,
      options,
    );
    return arrayOf<SystemSharedMemoryStatus>(doc, 'shared-memory status');
  }

  async registerSystemSharedMemory(
    region: string,
    key: string,
    byteSize: number,
    offset = 0,
    options?: CallOptions,
  ): Promise<void> {
    const body = { key, offset, byte_size: byteSize };
    await this.#call(
      'POST',
      `/v2/systemsharedmemory/region/${enc(checkName(region))}/register`,
      body,
      options,
    );
  }

  async unregisterSystemSharedMemory(region?: string, options?: CallOptions): Promise<void> {
    await this.#call('POST', `/v2/systemsharedmemory${regionPath(region)}/unregister`, undefined, options);
  }

  async cudaSharedMemoryStatus(region?: string, options?: CallOptions): Promise<CudaSharedMemoryStatus[]> {
    const doc = await this.#json(
      'GET',
      `/v2/cudasharedmemory${regionPath(region)}/status`,
      undefined,
      options,
    );
    return arrayOf<CudaSharedMemoryStatus>(doc, 'shared-memory status');
  }

  async registerCudaSharedMemory(
    region: string,
    rawHandle: Uint8Array,
    deviceId: number,
    byteSize: number,
    options?: CallOptions,
  ): Promise<void> {
    const body = {
      raw_handle: { b64: Buffer.from(rawHandle).toString('base64') },
      device_id: deviceId,
      byte_size: byteSize,
    };
    await this.#call('POST', `/v2/cudasharedmemory/region/${enc(checkName(region))}/register`, body, options);
  }

  async unregisterCudaSharedMemory(region?: string, options?: CallOptions): Promise<void> {
    await this.#call('POST', `/v2/cudasharedmemory${regionPath(region)}/unregister`, undefined, options);
  }

  async logSettings(options?: CallOptions): Promise<LogSettings> {
    return objectOf<LogSettings>(await this.#json('GET', '/v2/logging', undefined, options), 'log settings');
  }

  async updateLogSettings(settings: Readonly<LogSettings>, options?: CallOptions): Promise<LogSettings> {
    return objectOf<LogSettings>(await this.#json('POST', '/v2/logging', settings, options), 'log settings');
  }

  async traceSettings(model?: string, options?: CallOptions): Promise<TraceSettings> {
    const doc = await this.#json('GET', tracePath(model), undefined, options);
    return objectOf<TraceSettings>(doc, 'trace settings');
  }

  async updateTraceSettings(
    settings: Readonly<TraceSettingsUpdate>,
    model?: string,
    options?: CallOptions,
  ): Promise<TraceSettings> {
    const body: Record<string, JsonOut> = {};
    for (const [k, v] of Object.entries(settings)) body[k] = typeof v === 'number' ? String(v) : v;
    return objectOf<TraceSettings>(
      await this.#json('POST', tracePath(model), body, options),
      'trace settings',
    );
  }

  close(): void {
    this.#transport.close();
  }

  #get(path: string, options: CallOptions | undefined): Promise<TransportResponse> {
    return this.#transport.request({
      method: 'GET',
      path,
      headers: options?.headers,
      signal: options?.signal,
    });
  }

  async #call(
    method: 'GET' | 'POST',
    path: string,
    body: JsonOut | undefined,
    options: CallOptions | undefined,
  ): Promise<TransportResponse> {
    const payload = body === undefined ? undefined : [Buffer.from(toJsonText(body), 'utf8')];
    const res = await this.#transport.request({
      method,
      path,
      body: payload ?? (method === 'POST' ? [] : undefined),
      headers: payload ? { 'Content-Type': 'application/json', ...options?.headers } : options?.headers,
      signal: options?.signal,
    });
    this.#check(res);
    return res;
  }

  async #json(
    method: 'GET' | 'POST',
    path: string,
    body: JsonOut | undefined,
    options: CallOptions | undefined,
  ): Promise<unknown> {
    const res = await this.#call(method, path, body, options);
    try {
      return JSON.parse(res.body.toString('utf8')) as unknown;
    } catch {
      throw new NereidClientError(
        `malformed response from the server: ${method} ${path} did not answer JSON`,
        {
          status: res.status,
        },
      );
    }
  }

  #check(res: TransportResponse): void {
    if (res.status >= 200 && res.status < 300) return;
    throw new NereidClientError(errorMessage(res.body, res.statusText), { status: res.status });
  }
}

function checkName(name: string): string {
  if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
  return name;
}

function tracePath(model: string | undefined): string {
  return model === undefined || model === '' ? '/v2/trace/setting' : `/v2/models/${enc(model)}/trace/setting`;
}

function arrayOf<T>(doc: unknown, what: string): T[] {
  if (!Array.isArray(doc))
    throw new NereidClientError(`malformed response from the server: ${what} is not an array`);
  return doc as T[];
}

function objectOf<T>(doc: unknown, what: string): T {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new NereidClientError(`malformed response from the server: ${what} is not an object`);
  }
  return doc as T;
}
