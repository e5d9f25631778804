/**
 * The composition: builds the backends, the model loader, the repository manager, the server and the
 * frontends from frozen ServerOptions, and tears them down in order. The one module both entry points use:
 * the `nereid` command (cli/main.ts) and the embedding API (embedded/server.ts); tests call startNereid()
 * in-process with port 0.
 */
import { readFileSync } from 'node:fs';
import { builtinTestBackends } from '../backends/builtin/index.js';
import { JavascriptBackend } from '../backends/javascript/index.js';
import { LlamacppBackend } from '../backends/llamacpp/index.js';
import { OnnxRuntimeBackend } from '../backends/onnxruntime/index.js';
import { PythonBackend, PythonBasedBackends, backendVenvRoot } from '../backends/python/index.js';
import type { Backend, ServerApi, ServerInferResponse } from '../backend-api/backend.js';
import { NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import {
  createResponseCache,
  describeCacheConfig,
  InferenceServer,
  InstanceBudget,
  ModelLoader,
  ModelRepositoryManager,
  RateLimiter,
  RepositoryStorage,
  type ResponseCache,
  setResponseLimits,
  StatsRegistry,
  SystemSharedMemoryManager,
  type VersionLookup,
} from '../core/assembly.js';
import { AccessLog } from '../frontends/access-log.js';
import { closeFrontends, startFrontends, type Endpoint, type StartedFrontends } from './frontends.js';
import type { ServerOptions } from './options.js';
import { watchStartup } from './startup-progress.js';
import { modelTable } from './startup-table.js';
import { EndpointTls, type TlsEndpoint } from './tls-endpoints.js';

export { grpcTransportOptions, type Endpoint } from './frontends.js';

export interface RunningNereid {
  readonly server: InferenceServer;
  readonly http: Endpoint | undefined;
  /** The --http-health-port listener, when given. */
  readonly httpHealth: Endpoint | undefined;
  /** The OpenAI-compatible API's own listener (--openai-port), when given; else it is on `http`. */
  readonly openai: Endpoint | undefined;
  readonly grpc: Endpoint | undefined;
  /** The Prometheus endpoint (`GET /metrics`), when --allow-metrics. */
  readonly metrics: Endpoint | undefined;
  /** What the metrics frontend reads (an embedding attaches one later with it). */
  readonly statsRegistry: StatsRegistry;
  /**
   * Re-reads the TLS certificate files of every TLS endpoint (SIGHUP): new connections get the new
   * certificate, open ones keep theirs; a failure keeps the old one and is logged. Empty without TLS.
   */
  reloadCertificates(why: string): Promise<{ endpoint: TlsEndpoint; reloaded: boolean }[]>;
  /**
   * Turns not-ready, keeps serving for --exit-delay-secs, then stops accepting, lets in-flight requests
   * finish and unloads every model. Calls after the first return the same promise.
   */
  stop(): Promise<void>;
}

export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export function builtinBackends(): Backend[] {
  return [
    new OnnxRuntimeBackend(),
    new PythonBackend(),
    new JavascriptBackend(),
    new LlamacppBackend(),
    ...builtinTestBackends(),
  ];
}

export async function startNereid(options: ServerOptions, log: Logger): Promise<RunningNereid> {
  // Clients see --id as the server's name (Triton's "triton" by default); the log says what runs.
  log.info(`Nereid ${packageVersion()} starting, server id '${options.id}'`);
  // Certificates are read and checked before any model loads: a TLS mistake fails the start at once.
  const tls = await EndpointTls.load(options, log);
  // Every request's response stream from here on holds at most this many unread responses.
  setResponseLimits({
    maxUndelivered: options.maxUndeliveredResponses,
    idleTimeoutMs: options.responseIdleTimeoutMs,
  });
  try {
    return await startServing(options, log, tls);
  } catch (err) {
    tls.close();
    throw err;
  }
}

/** The core's parts: the server that frontends serve, and what must be closed behind it. */
interface Core {
  readonly server: InferenceServer;
  readonly repository: ModelRepositoryManager;
  readonly sharedMemory: SystemSharedMemoryManager;
  /** Removes the object-store copies and stops removing them at process exit. */
  readonly closeStorage: () => Promise<void>;
}

/** The response cache exists before any model loads: models that enable it use it from their first request. */
async function openResponseCache(options: ServerOptions, log: Logger): Promise<ResponseCache | undefined> {
  if (options.responseCache === undefined) return undefined;
  const responseCache = await createResponseCache(options.responseCache, log);
  log.info(`Response cache: ${describeCacheConfig(options.responseCache)}`);
  return responseCache;
}

/**
 * What Python models call (BLS) and how they control the repository (pb_utils.load_model, unload_model,
 * is_model_ready): the server's own API, asked through `server()` since no model runs before it exists.
 * Repository control takes the repository API's own path, so it has its rules (explicit mode only).
 */
function modelServerApi(server: () => InferenceServer): ServerApi {
  return {
    infer: (request): AsyncIterable<ServerInferResponse> => server().infer(request),
    loadModel: (name, options = {}): Promise<void> => {
      // `file:<version>/<path>` names as Triton's load parameters take them (the prefix is optional here).
      const files = options.files
        ? new Map(Object.entries(options.files).map(([k, v]) => [k.replace(/^file:/, ''), v] as const))
        : undefined;
      return server().loadModel(name, {
        ...(options.config !== undefined && { config: options.config }),
        ...(files && { files }),
      });
    },
    unloadModel: (name, options): Promise<void> => server().unloadModel(name, options),
    isModelReady: (name, version): boolean => server().isModelReady(name, version),
  };
}

function createLoader(
  options: ServerOptions,
  log: Logger,
  statsRegistry: StatsRegistry,
  responseCache: ResponseCache | undefined,
  ensembleMembers: VersionLookup,
  serverApi: ServerApi,
): ModelLoader {
  return new ModelLoader({
    backends: builtinBackends(),
    backendCatalog: new PythonBasedBackends({
      backendDirectories: options.backendDirectories,
      venvRoot: backendVenvRoot(options.backendVenvDirectory, process.env),
    }),
    disableAutoComplete: options.disableAutoCompleteConfig,
    backendConfig: options.backendConfig,
    log,
    statsRegistry,
    ensembleMembers,
    // One rate limiter for the whole server: it arbitrates between the instances of every model.
    rateLimiter:
      options.rateLimit === 'execution_count' ? new RateLimiter(options.rateLimitResources) : undefined,
    serverApi,
    readinessPoll: { intervalMs: options.modelReadinessPollMs, timeoutMs: options.modelReadinessTimeoutMs },
    strictGpuKind: options.strictGpuKind,
    strictModelOutputs: options.strictModelOutputs,
    responseCache,
    instanceBudget: new InstanceBudget({
      perModel: options.maxInstancesPerModel,
      total: options.maxInstances,
      processPerModel: options.maxProcessInstancesPerModel,
      processTotal: options.maxProcessInstances,
    }),
    unloadTimeoutMs: options.modelUnloadTimeoutSecs * 1000,
    measureMemory: options.modelControlMode === 'on-demand',
  });
}

/**
 * Object-store repositories: credentials and endpoints from the environment (main.ts), limits from
 * flags. Downloaded copies are removed when their models unload, at stop, and at process exit.
 */
function openStorage(
  options: ServerOptions,
  log: Logger,
): {
  storage: RepositoryStorage;
  closeStorage: () => Promise<void>;
} {
  const storage = new RepositoryStorage({
    ...options.cloudStorage,
    progress: (line) => log.info(line),
    limits: {
      downloadConcurrency: options.repositoryDownloadConcurrency,
      maxObjectBytes: options.repositoryMaxObjectBytes,
      maxListEntries: options.repositoryMaxListEntries,
      requestTimeoutMs: options.repositoryRequestTimeoutSecs * 1000,
    },
  });
  const removeCopiesAtExit = (): void => storage.closeSync();
  process.on('exit', removeCopiesAtExit);
  const closeStorage = async (): Promise<void> => {
    process.off('exit', removeCopiesAtExit);
    await storage.close();
  };
  return { storage, closeStorage };
}

/** The loader, the repository manager around it and the inference server; no model is loaded yet. */
function buildCore(
  options: ServerOptions,
  log: Logger,
  statsRegistry: StatsRegistry,
  responseCache: ResponseCache | undefined,
): Core {
  // Ensembles find their steps in the repository, and Python models call the server: both are built
  // below around the loader, and nothing asks them before they exist.
  const ensembleMembers: VersionLookup = {
    getVersion: (name, version) => repository.getVersion(name, version),
  };
  const serverApi = modelServerApi(() => server);
  const loader = createLoader(options, log, statsRegistry, responseCache, ensembleMembers, serverApi);
  const { storage, closeStorage } = openStorage(options, log);
  const repository = new ModelRepositoryManager(
    {
      repositoryPaths: options.modelRepositories,
      storage,
      controlMode: options.modelControlMode,
      repositoryPollSecs: options.repositoryPollSecs,
      watch: options.watch,
      watchMaxDirectories: options.watchMaxDirectories,
      startupModels: options.loadModels,
      maxLoadedModels: options.maxLoadedModels,
      memoryBudgetBytes: options.modelMemoryBudget,
      loadWaitMs: options.modelLoadWaitSecs * 1000,
      modelConfigName: options.modelConfigName,
      modelLoadThreadCount: options.modelLoadThreadCount,
      loadErrorStatus: options.loadErrorStatus,
      log,
    },
    loader,
  );
  const sharedMemory = new SystemSharedMemoryManager({ allowClientShm: options.allowClientShm, log });
  const server = new InferenceServer(
    { name: options.id, version: packageVersion(), strictReadiness: options.strictReadiness },
    repository,
    log,
    options.logFile,
    sharedMemory,
    options.trace,
  );
  return { server, repository, sharedMemory, closeStorage };
}

/** Loads the startup models and prints their table; with --exit-on-error any failure fails the start. */
async function loadStartupModels(
  options: ServerOptions,
  log: Logger,
  core: Core,
  responseCache: ResponseCache | undefined,
): Promise<void> {
  const { repository, closeStorage } = core;
  let failures;
  const progress = watchStartup(
    () => repository.index(false),
    (line) => log.info(line),
  );
  try {
    failures = await repository.startup();
  } catch (err) {
    progress.stop();
    await repository.close();
    await closeStorage();
    throw err;
  }
  log.info(progress.stop());
  log.raw(modelTable(repository.index(false), process.stderr.isTTY ? process.stderr.columns : undefined));
  if (failures.length > 0 && options.exitOnError) {
    await repository.close();
    await responseCache?.close();
    await closeStorage();
    throw new NereidError(
      'INTERNAL',
      `failed to load all models: ${failures.map((f) => `'${f.name}': ${f.reason}`).join('; ')}`,
    );
  }
}

/**
 * The stop sequence: not ready (serving --exit-delay-secs longer), listeners closed with in-flight
 * requests finished, models unloaded, then traces, metrics and the health port last. Runs once.
 */
function stopper(
  options: ServerOptions,
  log: Logger,
  tls: EndpointTls,
  core: Core,
  fe: StartedFrontends,
  responseCache: ResponseCache | undefined,
  accessLog: AccessLog | undefined,
): () => Promise<void> {
  const { server, repository, sharedMemory, closeStorage } = core;
  let stopping: Promise<void> | undefined;
  return (): Promise<void> =>
    (stopping ??= (async () => {
      // Readiness fails from here on. With --exit-delay-secs the listeners stay open for that long, serving
      // as before, so the replica leaves its load balancer (Kubernetes' endpoints) before it refuses anyone.
      server.markStopping();
      if (options.exitDelaySecs > 0) {
        fe.httpFrontend?.drain();
        log.info(
          `Not ready; still serving for ${options.exitDelaySecs} s (--exit-delay-secs) before closing`,
        );
        await new Promise((resolve) => setTimeout(resolve, options.exitDelaySecs * 1000));
      }
      tls.close();
      await Promise.all([fe.httpFrontend?.close(), fe.grpcFrontend?.close(), fe.openaiServer?.close()]);
      await repository.close();
      await closeStorage();
      // Every request has ended: the trace files get their last traces, spans are exported.
      await server.tracer.close();
      await accessLog?.close();
      // Like Triton, metrics stay scrapeable while models drain.
      await fe.metricsFrontend?.close();
      await responseCache?.close();
      // Probes keep their answers (not ready) until the very end.
      await fe.healthListener?.close();
      await sharedMemory.close();
    })());
}

async function startServing(options: ServerOptions, log: Logger, tls: EndpointTls): Promise<RunningNereid> {
  const startedAt = Date.now();
  const responseCache = await openResponseCache(options, log);
  const statsRegistry = new StatsRegistry({ responseCache: responseCache !== undefined });
  const core = buildCore(options, log, statsRegistry, responseCache);
  const { server, repository, closeStorage } = core;
  // The OpenTelemetry SDK is loaded here only in that mode; nothing is loaded with tracing off.
  await server.tracer.init();
  const accessLog = options.accessLog ? AccessLog.open(options.accessLog, log) : undefined;
  await loadStartupModels(options, log, core, responseCache);
  server.markStarted();

  const fe: StartedFrontends = {};
  const ctx = { options, log, server, statsRegistry, responseCache, accessLog, tls, startedAt };
  try {
    await startFrontends({ ...ctx, version: packageVersion() }, fe);
  } catch (err) {
    await closeFrontends(fe);
    await repository.close();
    await responseCache?.close();
    await closeStorage();
    await server.tracer.close();
    await accessLog?.close();
    throw err;
  }
  return {
    server,
    http: fe.http,
    httpHealth: fe.httpHealth,
    openai: fe.openai,
    grpc: fe.grpc,
    metrics: fe.metrics,
    statsRegistry,
    reloadCertificates: (why: string) => tls.reload(why),
    stop: stopper(options, log, tls, core, fe, responseCache, accessLog),
  };
}
