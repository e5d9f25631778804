/**
 * The composition: builds the backends, the model loader, the repository manager, the server and the
 * frontends from frozen ServerOptions, and tears them down in order. The one module both entry points use:
 * the `nereid` command (cli/main.ts) and the embedding API (embedded/server.ts); tests call startNereid()
 * in-process with port 0.
 */
import { readFileSync } from 'node:fs';
import { builtinTestBackends } from '../backends/builtin/index.js';
import { JavascriptBackend } from '../backends/javascript/index.js';
import { OnnxRuntimeBackend } from '../backends/onnxruntime/index.js';
import { PythonBackend } from '../backends/python/index.js';
import type { Backend, ServerApi, ServerInferResponse } from '../backend-api/backend.js';
import { NereidError, unavailable } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { createResponseCache, describeCacheConfig, type ResponseCache } from '../core/cache/index.js';
import type { VersionLookup } from '../core/ensemble/index.js';
import { InstanceBudget } from '../core/model/instance-budget.js';
import { ModelLoader } from '../core/model/loader.js';
import type { LoadedVersion } from '../core/repository/contract.js';
import { ModelRepositoryManager } from '../core/repository/index.js';
import { RateLimiter } from '../core/scheduling/rate-limiter.js';
import { RepositoryStorage } from '../core/storage/storage.js';
import { InferenceServer } from '../core/server.js';
import { StatsRegistry } from '../core/stats/registry.js';
import { SystemSharedMemoryManager } from '../core/shm/index.js';
import { AccessLog } from '../frontends/access-log.js';
import { createGrpcFrontend, type GrpcFrontendOptions } from '../frontends/grpc/index.js';
import { createHealthListener, createHttpFrontend, type HealthListener } from '../frontends/http/index.js';
import { createMetricsFrontend, type MetricsFrontend } from '../frontends/metrics/index.js';
import { dashboardInfo } from './dashboard-info.js';
import {
  createOpenAiHandler,
  createOpenAiServer,
  isOpenAiPath,
  type OpenAiOptions,
  type OpenAiServer,
} from '../frontends/openai/index.js';
import type { ServerOptions } from './options.js';
import { modelTable } from './startup-table.js';
import { EndpointTls, type TlsEndpoint } from './tls-endpoints.js';

export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

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

/**
 * The kernel caps a listen backlog at net.core.somaxconn (128 before Linux 5.4): say so once when
 * --http-backlog asks for more, since the cap is silent and shows only as dropped connections under load.
 */
function warnIfBacklogCapped(backlog: number, log: Logger): void {
  let somaxconn: number;
  try {
    somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
  } catch {
    return; // not Linux, or no /proc: nothing to say
  }
  if (Number.isSafeInteger(somaxconn) && somaxconn > 0 && somaxconn < backlog) {
    log.warn(
      `--http-backlog=${backlog} is capped by the kernel at net.core.somaxconn=${somaxconn}; raise it (sysctl -w net.core.somaxconn=${backlog}) for the larger listen queue to take effect`,
    );
  }
}

export function builtinBackends(): Backend[] {
  return [new OnnxRuntimeBackend(), new PythonBackend(), new JavascriptBackend(), ...builtinTestBackends()];
}

/** The gRPC frontend's transport settings from the command line (also used by the embedded server). */
export function grpcTransportOptions(
  options: ServerOptions,
): Omit<GrpcFrontendOptions, 'address' | 'port' | 'log'> {
  return {
    maxDecompressedSize: options.grpcMaxDecompressedSize,
    maxConcurrentStreams: options.grpcMaxConcurrentStreams,
    maxBufferedBytes: options.grpcMaxBufferedBytes,
    responseCompression: options.grpcInferResponseCompressionLevel,
    streamIdleTimeoutMs: options.grpcInferStreamIdleTimeoutMs,
    connection: {
      keepaliveTimeMs: options.grpcKeepaliveTimeMs,
      keepaliveTimeoutMs: options.grpcKeepaliveTimeoutMs,
      keepalivePermitWithoutCalls: options.grpcKeepalivePermitWithoutCalls,
      http2MaxPingsWithoutData: options.grpcHttp2MaxPingsWithoutData,
      http2MinRecvPingIntervalWithoutDataMs: options.grpcHttp2MinRecvPingIntervalWithoutDataMs,
      http2MaxPingStrikes: options.grpcHttp2MaxPingStrikes,
      maxConnectionAgeMs: options.grpcMaxConnectionAgeMs,
      maxConnectionAgeGraceMs: options.grpcMaxConnectionAgeGraceMs,
      maxConnectionIdleMs: options.grpcMaxConnectionIdleMs,
      maxConnectionBufferedBytes: options.grpcMaxConnectionBufferedBytes,
    },
  };
}

export async function startNereid(options: ServerOptions, log: Logger): Promise<RunningNereid> {
  // Clients see --id as the server's name (Triton's "triton" by default); the log says what runs.
  log.info(`Nereid ${packageVersion()} starting, server id '${options.id}'`);
  // Certificates are read and checked before any model loads: a TLS mistake fails the start at once.
  const tls = await EndpointTls.load(options, log);
  try {
    return await startServing(options, log, tls);
  } catch (err) {
    tls.close();
    throw err;
  }
}

async function startServing(options: ServerOptions, log: Logger, tls: EndpointTls): Promise<RunningNereid> {
  const startedAt = Date.now();
  // The response cache exists before any model loads: models that enable it use it from their first request.
  let responseCache: ResponseCache | undefined;
  if (options.responseCache !== undefined) {
    responseCache = await createResponseCache(options.responseCache, log);
    log.info(`Response cache: ${describeCacheConfig(options.responseCache)}`);
  }
  const statsRegistry = new StatsRegistry({ responseCache: responseCache !== undefined });
  // One rate limiter for the whole server: it arbitrates between the instances of every model.
  const rateLimiter =
    options.rateLimit === 'execution_count' ? new RateLimiter(options.rateLimitResources) : undefined;
  // Ensembles find their steps in the repository, which is built below around the loader.
  const ensembleMembers: VersionLookup = {
    getVersion: (name, version): LoadedVersion => repository.getVersion(name, version),
  };
  // Python models call other models (BLS) and control the repository (pb_utils.load_model, unload_model,
  // is_model_ready) through the server built below; no model runs before it exists. Repository control
  // takes the repository API's own path, so it has its rules (explicit model control mode only).
  const serverApi: ServerApi = {
    infer: (request): AsyncIterable<ServerInferResponse> => server.infer(request),
    loadModel: (name, options = {}): Promise<void> => {
      // `file:<version>/<path>` names as Triton's load parameters take them (the prefix is optional here).
      const files = options.files
        ? new Map(Object.entries(options.files).map(([k, v]) => [k.replace(/^file:/, ''), v] as const))
        : undefined;
      return server.loadModel(name, {
        ...(options.config !== undefined && { config: options.config }),
        ...(files && { files }),
      });
    },
    unloadModel: (name, options): Promise<void> => server.unloadModel(name, options),
    isModelReady: (name, version): boolean => server.isModelReady(name, version),
  };
  const loader = new ModelLoader({
    backends: builtinBackends(),
    disableAutoComplete: options.disableAutoCompleteConfig,
    backendConfig: options.backendConfig,
    log,
    statsRegistry,
    ensembleMembers,
    rateLimiter,
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
  });
  // Object-store repositories: credentials and endpoints from the environment (main.ts), limits from
  // flags. Downloaded copies are removed when their models unload, at stop, and at process exit.
  const storage = new RepositoryStorage({
    ...options.cloudStorage,
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
  const repository = new ModelRepositoryManager(
    {
      repositoryPaths: options.modelRepositories,
      storage,
      controlMode: options.modelControlMode,
      repositoryPollSecs: options.repositoryPollSecs,
      watch: options.watch,
      watchMaxDirectories: options.watchMaxDirectories,
      startupModels: options.loadModels,
      modelConfigName: options.modelConfigName,
      modelLoadThreadCount: options.modelLoadThreadCount,
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
  // The OpenTelemetry SDK is loaded here only in that mode; nothing is loaded with tracing off.
  await server.tracer.init();
  const accessLog = options.accessLog ? AccessLog.open(options.accessLog, log) : undefined;

  let failures;
  try {
    failures = await repository.startup();
  } catch (err) {
    await repository.close();
    await closeStorage();
    throw err;
  }
  log.raw(modelTable(repository.index(false)));
  if (failures.length > 0 && options.exitOnError) {
    await repository.close();
    await responseCache?.close();
    await closeStorage();
    throw new NereidError(
      'INTERNAL',
      `failed to load all models: ${failures.map((f) => `'${f.name}': ${f.reason}`).join('; ')}`,
    );
  }
  server.markStarted();

  let http: Endpoint | undefined;
  let httpFrontend: ReturnType<typeof createHttpFrontend> | undefined;
  let httpHealth: Endpoint | undefined;
  let healthListener: HealthListener | undefined;
  let metrics: Endpoint | undefined;
  let metricsFrontend: MetricsFrontend | undefined;
  let grpc: Endpoint | undefined;
  let grpcFrontend: ReturnType<typeof createGrpcFrontend> | undefined;
  let openai: Endpoint | undefined;
  let openaiServer: OpenAiServer | undefined;
  const openaiOptions: OpenAiOptions = {
    maxInputSize: options.httpMaxInputSize,
    defaultMaxTokens: options.openaiDefaultMaxTokens,
    maxBufferedBytes: options.openaiMaxBufferedBytes,
    repositories: options.modelRepositories,
    restrictedApis: options.httpRestrictedApis,
    log,
  };
  // On the HTTP port unless it has a port of its own (or is off).
  const openaiMount =
    options.allowOpenai && options.openaiPort < 0
      ? { claims: isOpenAiPath, handle: createOpenAiHandler(server, openaiOptions) }
      : undefined;
  try {
    if (options.allowGrpc) {
      grpcFrontend = createGrpcFrontend(server, {
        address: options.grpcAddress,
        port: options.grpcPort,
        restrictedProtocols: options.grpcRestrictedProtocols,
        headerForwardPattern: options.grpcHeaderForwardPattern,
        log,
        accessLog,
        ...grpcTransportOptions(options),
        tls: tls.get('grpc'),
      });
      grpc = await grpcFrontend.listen();
      log.info(`Started GRPCInferenceService at ${grpc.address}:${grpc.port}`);
    }
    if (options.allowHttp) {
      httpFrontend = createHttpFrontend(server, {
        address: options.httpAddress,
        port: options.httpPort,
        maxInputSize: options.httpMaxInputSize,
        restrictedApis: options.httpRestrictedApis,
        headerForwardPattern: options.httpHeaderForwardPattern,
        backlog: options.httpBacklog,
        maxConnections: options.httpMaxConnections,
        json: {
          maxJsonSize: options.httpMaxJsonSize,
          workerThreshold: options.httpJsonWorkerThreshold,
          workerThreads: options.httpJsonWorkerThreads,
          workerBytes: options.httpJsonWorkerBytes,
        },
        log,
        accessLog,
        tls: tls.get('http'),
        // The metrics frontend starts after this one; the page asks for metrics only once both serve.
        dashboard: options.allowDashboard
          ? {
              info: () => dashboardInfo({ options, version: packageVersion(), startedAt }),
              metrics: options.allowMetrics
                ? () => metricsFrontend?.scrape() ?? Promise.reject(unavailable('metrics are not up yet'))
                : undefined,
            }
          : undefined,
        ...(openaiMount !== undefined && { mount: openaiMount }),
      });
      http = await httpFrontend.listen();
      log.info(`Started HTTPService at ${http.address}:${http.port}`);
      warnIfBacklogCapped(options.httpBacklog, log);
      if (options.httpHealthPort >= 0) {
        healthListener = createHealthListener(server, {
          address: options.httpAddress,
          port: options.httpHealthPort,
          backlog: options.httpBacklog,
          log,
        });
        httpHealth = await healthListener.listen();
        log.info(`Started HTTP health service at ${httpHealth.address}:${httpHealth.port}`);
      }
    }
    if (options.allowOpenai && options.openaiPort >= 0) {
      openaiServer = createOpenAiServer(server, {
        ...openaiOptions,
        address: options.httpAddress,
        port: options.openaiPort,
        tls: tls.get('http'),
      });
      openai = await openaiServer.listen();
      log.info(`Started OpenAI-compatible service at ${openai.address}:${openai.port}`);
    }
    if (options.allowMetrics) {
      metricsFrontend = createMetricsFrontend(statsRegistry, {
        address: options.metricsAddress,
        port: options.metricsPort,
        log,
        intervalMs: options.metricsIntervalMs,
        config: options.metricsConfig,
        cpuMetrics: options.allowCpuMetrics,
        customMetrics: (timeoutMs) => server.customMetrics(timeoutMs),
        cacheMetrics: responseCache && (() => responseCache.metrics()),
      });
      metrics = await metricsFrontend.listen();
      log.info(`Started Metrics Service at ${metrics.address}:${metrics.port}`);
    }
  } catch (err) {
    await grpcFrontend?.close();
    await healthListener?.close();
    await httpFrontend?.close();
    await openaiServer?.close();
    await metricsFrontend?.close();
    await repository.close();
    await responseCache?.close();
    await closeStorage();
    await server.tracer.close();
    await accessLog?.close();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // Readiness fails from here on. With --exit-delay-secs the listeners stay open for that long, serving
      // as before, so the replica leaves its load balancer (Kubernetes' endpoints) before it refuses anyone.
      server.markStopping();
      if (options.exitDelaySecs > 0) {
        httpFrontend?.drain();
        log.info(
          `Not ready; still serving for ${options.exitDelaySecs} s (--exit-delay-secs) before closing`,
        );
        await new Promise((resolve) => setTimeout(resolve, options.exitDelaySecs * 1000));
      }
      tls.close();
      await Promise.all([httpFrontend?.close(), grpcFrontend?.close(), openaiServer?.close()]);
      await repository.close();
      await closeStorage();
      // Every request has ended: the trace files get their last traces, spans are exported.
      await server.tracer.close();
      await accessLog?.close();
      // Like Triton, metrics stay scrapeable while models drain.
      await metricsFrontend?.close();
      await responseCache?.close();
      // Probes keep their answers (not ready) until the very end.
      await healthListener?.close();
      await sharedMemory.close();
    })());
  const reloadCertificates = (why: string) => tls.reload(why);
  return { server, http, httpHealth, openai, grpc, metrics, statsRegistry, reloadCertificates, stop };
}
