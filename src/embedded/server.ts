/**
 * Nereid inside an application: `const server = await Nereid.start({ modelRepository })` runs the whole
 * server in this process with no socket, `server.infer()` / `server.inferStream()` call models directly
 * (SDK Tensors in, InferenceResponse out), and HTTP, gRPC and metrics frontends can be attached and
 * detached at any time. Built on the same composition as the `nereid` command (compose/compose.ts), so a
 * model behaves the same whichever way it is reached. docs/embedding.md shows it end to end.
 */
import { grpcTransportOptions, startNereid, type Endpoint, type RunningNereid } from '../compose/compose.js';
import { parseFlags } from '../compose/flags.js';
import type { ServerOptions } from '../compose/options.js';
import { unsupported } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import {
  refuseDecoupled,
  resolveCall,
  runCall,
  streamCall,
  type CallContext,
  type InferenceServerApi,
  type ModelMetadata,
  type ModelStatistics,
  type RepositoryIndexEntry,
  type ResolvedModel,
} from '../core/index.js';
import { createGrpcFrontend } from '../frontends/grpc/index.js';
import { createHttpFrontend } from '../frontends/http/index.js';
import { createMetricsFrontend } from '../frontends/metrics/index.js';
import { TlsCredentials } from '../frontends/tls.js';
import type { InferenceResponse } from '../sdk/response.js';
import { fromCoreResponse, toCoreRequest, type InferRequest } from './convert.js';
import {
  loggerFor,
  startFlags,
  type ListenOptions,
  type NereidStartOptions,
  type SecureListenOptions,
  type TlsListenOptions,
} from './options.js';

interface Frontend {
  close(): Promise<void>;
}

/** How errors name the files of listenHttp()/listenGrpc()'s `tls`. */
const TLS_OPTION_NAMES = { cert: 'tls.certFile', key: 'tls.keyFile', rootCert: 'tls.rootCertFile' };

export interface ModelLoadOptions {
  /** A config (JSON text or object) that replaces config.pbtxt for this load. */
  readonly config?: string | object;
  /** `<version>/<path>` → content, loaded instead of the repository's files (needs `config`). */
  readonly files?: Readonly<Record<string, Uint8Array | string>>;
}

export class NereidServer {
  private readonly frontends = new Map<
    'http' | 'grpc' | 'metrics',
    { endpoint: Endpoint; frontend: Frontend; tls?: TlsCredentials }
  >();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly running: RunningNereid,
    private readonly options: ServerOptions,
    private readonly log: Logger,
  ) {}

  /** Starts a server: loads the models, then serves the frontends asked for (none by default). */
  static async start(options: NereidStartOptions): Promise<NereidServer> {
    const { options: serverOptions } = parseFlags(startFlags(options));
    const log = loggerFor(options.log);
    const running = await startNereid(serverOptions, log);
    return new NereidServer(running, serverOptions, log);
  }

  /** The whole data plane (metadata, statistics, shared memory, log and trace settings, ...). */
  get api(): InferenceServerApi {
    return this.running.server;
  }

  /** Where each attached frontend listens. */
  get http(): Endpoint | undefined {
    return this.running.http ?? this.frontends.get('http')?.endpoint;
  }
  get grpc(): Endpoint | undefined {
    return this.running.grpc ?? this.frontends.get('grpc')?.endpoint;
  }
  get metrics(): Endpoint | undefined {
    return this.running.metrics ?? this.frontends.get('metrics')?.endpoint;
  }

  /**
   * Runs one request on a model that answers once (not decoupled) and resolves with its response;
   * rejects with a NereidError (the same codes and messages HTTP and gRPC clients get). A decoupled model
   * is UNSUPPORTED here, as on HTTP /infer: inferStream() gives its responses.
   */
  async infer(request: InferRequest): Promise<InferenceResponse> {
    const resolved = resolveCall(this.running.server, request.model, versionText(request.version));
    const model = resolved instanceof Promise ? await resolved : resolved;
    try {
      refuseDecoupled(model, EMBEDDED_DECOUPLED);
      const core = toCoreRequest(request, () => model.metadata);
      // No signal of our own when the caller gave none: the core uses a shared never-aborted one, and its
      // schedulers remove the listeners they add at dispatch (a new AbortSignal costs more than the rest of
      // a small request's bookkeeping).
      return fromCoreResponse(await runCall(model, core, embeddedCall(request.signal)));
    } finally {
      model.release();
    }
  }

  /**
   * Every response of a request (decoupled models: 0..n, the last with `final` set; other models: the
   * one), as they come. `request.signal` cancels it; so does leaving the loop early (break, return,
   * throw): the model sees its request cancelled (a generator model's finally blocks run). Responses the
   * loop has not taken yet wait in the request's response queue, as they do for HTTP and gRPC streams.
   */
  async *inferStream(request: InferRequest): AsyncGenerator<InferenceResponse, void, undefined> {
    // On-demand mode: the model loads first (the wait is the request's queue time).
    const wait = this.running.server.whenServable(request.model, versionText(request.version));
    const since = wait === undefined ? undefined : await wait;
    const controller = new AbortController();
    const outer = request.signal;
    const forward = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    else outer?.addEventListener('abort', forward, { once: true });
    const model = this.modelFor(request, since);
    let ended = false;
    try {
      // The request is converted before the model is looked up (a malformed request fails first).
      const core = toCoreRequest(request, () => model.get().metadata);
      for await (const r of streamCall(model.get(), core, embeddedCall(controller.signal))) {
        const response = fromCoreResponse(r);
        if (response.final) ended = true;
        yield response;
      }
      ended = true;
    } finally {
      outer?.removeEventListener('abort', forward);
      // The caller left before the final response: nobody reads the rest, so the request is cancelled.
      if (!ended) controller.abort();
      model.release();
    }
  }

  /**
   * The request's model handle, resolved once on first use (so a malformed request fails as it did before
   * any lookup) and held until released.
   */
  private modelFor(request: InferRequest, since?: bigint): { get(): ResolvedModel; release(): void } {
    let handle: ResolvedModel | undefined;
    const version = versionText(request.version);
    return {
      get: () => (handle ??= this.running.server.resolveModel(request.model, version, since)),
      release: () => handle?.release(),
    };
  }

  isReady(): boolean {
    return this.running.server.isReady();
  }

  isModelReady(name: string, version?: string | number): boolean {
    return this.running.server.isModelReady(name, version === undefined ? undefined : String(version));
  }

  modelMetadata(name: string, version?: string | number): ModelMetadata {
    return this.running.server.modelMetadata(name, version === undefined ? undefined : String(version));
  }

  /** The model config as Triton's JSON. */
  modelConfig(name: string, version?: string | number): object {
    return this.running.server.modelConfigJson(name, version === undefined ? undefined : String(version));
  }

  statistics(name?: string): ModelStatistics[] {
    return this.running.server.modelStatistics(name);
  }

  repositoryIndex(readyOnly = false): RepositoryIndexEntry[] {
    return this.running.server.repositoryIndex(readyOnly);
  }

  /** Loads (or reloads) a model; with --model-control-mode=explicit. */
  load(name: string, options: ModelLoadOptions = {}): Promise<void> {
    const load: { config?: string; files?: ReadonlyMap<string, Buffer> } = {};
    if (options.config !== undefined) {
      load.config = typeof options.config === 'string' ? options.config : JSON.stringify(options.config);
    }
    if (options.files) {
      load.files = new Map(
        Object.entries(options.files).map(([k, v]) => [
          k,
          typeof v === 'string' ? Buffer.from(v) : Buffer.from(v.buffer, v.byteOffset, v.byteLength),
        ]),
      );
    }
    return this.running.server.loadModel(name, load);
  }

  unload(name: string, options: { unloadDependents?: boolean } = {}): Promise<void> {
    return this.running.server.unloadModel(name, options);
  }

  /**
   * Serves KServe v2 HTTP on this server (port 0 = a free one), HTTPS with `tls`; resolves with where it
   * listens. A TLS file that is missing or wrong rejects with INVALID_ARG naming it.
   */
  async listenHttp(options: SecureListenOptions = {}): Promise<Endpoint> {
    return this.attach(
      'http',
      (tls) =>
        createHttpFrontend(this.running.server, {
          address: options.address ?? '127.0.0.1',
          port: options.port ?? 0,
          maxInputSize: this.options.httpMaxInputSize,
          restrictedApis: this.options.httpRestrictedApis,
          headerForwardPattern: this.options.httpHeaderForwardPattern,
          log: this.log,
          tls,
        }),
      options.tls,
    );
  }

  /** Serves gRPC on this server (port 0 = a free one), over TLS with `tls`; resolves with where it listens. */
  async listenGrpc(options: SecureListenOptions = {}): Promise<Endpoint> {
    return this.attach(
      'grpc',
      (tls) =>
        createGrpcFrontend(this.running.server, {
          address: options.address ?? '127.0.0.1',
          port: options.port ?? 0,
          restrictedProtocols: this.options.grpcRestrictedProtocols,
          headerForwardPattern: this.options.grpcHeaderForwardPattern,
          log: this.log,
          ...grpcTransportOptions(this.options),
          tls,
        }),
      options.tls,
    );
  }

  /**
   * Re-reads the certificate files of every TLS endpoint (what SIGHUP does to the `nereid` command; they are
   * also followed for changes): new connections get the new certificate, open ones keep theirs. Resolves
   * false when some endpoint kept its old certificate (the reason is logged).
   */
  async reloadCertificates(): Promise<boolean> {
    let all = true;
    for (const r of await this.running.reloadCertificates('reload requested')) all &&= r.reloaded;
    for (const f of this.frontends.values()) {
      if (f.tls) all = (await f.tls.reload('reload requested')) && all;
    }
    return all;
  }

  async listenMetrics(options: ListenOptions = {}): Promise<Endpoint> {
    return this.attach('metrics', () =>
      createMetricsFrontend(this.running.statsRegistry, {
        address: options.address ?? '127.0.0.1',
        port: options.port ?? 0,
        log: this.log,
        intervalMs: this.options.metricsIntervalMs,
        config: this.options.metricsConfig,
        cpuMetrics: this.options.allowCpuMetrics,
        customMetrics: (timeoutMs) => this.running.server.customMetrics(timeoutMs),
      }),
    );
  }

  /** Stops a frontend attached with listen*() (in-flight requests finish first). */
  async stopListening(kind: 'http' | 'grpc' | 'metrics'): Promise<void> {
    const f = this.frontends.get(kind);
    this.frontends.delete(kind);
    f?.tls?.close();
    await f?.frontend.close();
  }

  /** Stops every frontend, lets in-flight requests finish and unloads every model. Idempotent. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      await Promise.all([...this.frontends.keys()].map((k) => this.stopListening(k)));
      await this.running.stop();
    })());
  }

  private async attach(
    kind: 'http' | 'grpc' | 'metrics',
    create: (tls: TlsCredentials | undefined) => Frontend & { listen(): Promise<Endpoint> },
    tlsOptions?: TlsListenOptions,
  ): Promise<Endpoint> {
    if (this.closing) throw unsupported('the server is closing');
    if (this.frontends.has(kind) || this.running[kind])
      throw unsupported(`the ${kind} frontend is already listening`);
    const tls = tlsOptions
      ? await TlsCredentials.load({
          files: {
            certFile: tlsOptions.certFile,
            keyFile: tlsOptions.keyFile,
            rootCertFile: tlsOptions.rootCertFile,
            mutual: tlsOptions.mutual ?? false,
          },
          names: TLS_OPTION_NAMES,
          label: kind.toUpperCase(),
          log: this.log,
          pollIntervalMs: this.options.tlsCertPollMs,
        })
      : undefined;
    try {
      const frontend = create(tls);
      const endpoint = await frontend.listen();
      this.frontends.set(kind, { endpoint, frontend, tls });
      return endpoint;
    } catch (err) {
      tls?.close();
      throw err;
    }
  }
}

/** How infer() refuses a decoupled model (inferStream() serves it). */
const EMBEDDED_DECOUPLED = (model: string): string =>
  `model '${model}' is decoupled (0..n responses per request): call inferStream() for its responses`;

/** An in-process call: cancelled by its signal (if any), not traced, logged or forwarded. */
const embeddedCall = (signal: AbortSignal | undefined): CallContext => ({
  signal,
  trace: undefined,
  timings: undefined,
  forwarded: undefined,
});

const versionText = (version: string | number | undefined): string | undefined =>
  version === undefined ? undefined : String(version);

/** `Nereid.start(options)`: the entry point of the in-process API. */
export const Nereid = {
  start: (options: NereidStartOptions): Promise<NereidServer> => NereidServer.start(options),
};
