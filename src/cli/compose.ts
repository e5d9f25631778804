/**
 * The composition root: builds the backends, the model loader, the repository manager, the server and the
 * frontends from frozen ServerOptions, and tears them down in order. Tests call startNereid() in-process
 * with port 0; the `nereid` command is a thin wrapper around it (main.ts).
 */
import { readFileSync } from 'node:fs';
import { builtinTestBackends } from '../backends/builtin/index.js';
import { JavascriptBackend } from '../backends/javascript/index.js';
import { OnnxRuntimeBackend } from '../backends/onnxruntime/index.js';
import { PythonBackend } from '../backends/python/index.js';
import type { Backend, ServerApi, ServerInferResponse } from '../backend-api/backend.js';
import { NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { VersionLookup } from '../core/ensemble/index.js';
import { ModelLoader } from '../core/model/loader.js';
import type { LoadedVersion } from '../core/repository/contract.js';
import { ModelRepositoryManager } from '../core/repository/index.js';
import { RateLimiter } from '../core/scheduling/rate-limiter.js';
import { RepositoryStorage } from '../core/storage/storage.js';
import { InferenceServer } from '../core/server.js';
import { StatsRegistry } from '../core/stats/registry.js';
import { SystemSharedMemoryManager } from '../core/shm/index.js';
import { createGrpcFrontend } from '../frontends/grpc/index.js';
import { createHttpFrontend } from '../frontends/http/index.js';
import { createMetricsFrontend, type MetricsFrontend } from '../frontends/metrics/index.js';
import type { ServerOptions } from './options.js';
import { modelTable } from './startup-table.js';

export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

export interface RunningNereid {
  readonly server: InferenceServer;
  readonly http: Endpoint | undefined;
  readonly grpc: Endpoint | undefined;
  /** The Prometheus endpoint (`GET /metrics`), when --allow-metrics. */
  readonly metrics: Endpoint | undefined;
  /** What the metrics frontend reads (an embedding attaches one later with it). */
  readonly statsRegistry: StatsRegistry;
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
  return [new OnnxRuntimeBackend(), new PythonBackend(), new JavascriptBackend(), ...builtinTestBackends()];
}

export async function startNereid(options: ServerOptions, log: Logger): Promise<RunningNereid> {
  // Clients see --id as the server's name (Triton's "triton" by default); the log says what runs.
  log.info(`Nereid ${packageVersion()} starting, server id '${options.id}'`);
  const statsRegistry = new StatsRegistry();
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
  );

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
    await closeStorage();
    throw new NereidError(
      'INTERNAL',
      `failed to load all models: ${failures.map((f) => `'${f.name}': ${f.reason}`).join('; ')}`,
    );
  }
  server.markStarted();

  let http: Endpoint | undefined;
  let httpFrontend: ReturnType<typeof createHttpFrontend> | undefined;
  let metrics: Endpoint | undefined;
  let metricsFrontend: MetricsFrontend | undefined;
  let grpc: Endpoint | undefined;
  let grpcFrontend: ReturnType<typeof createGrpcFrontend> | undefined;
  try {
    if (options.allowGrpc) {
      grpcFrontend = createGrpcFrontend(server, {
        address: options.grpcAddress,
        port: options.grpcPort,
        log,
      });
      grpc = await grpcFrontend.listen();
      log.info(`Started GRPCInferenceService at ${grpc.address}:${grpc.port}`);
    }
    if (options.allowHttp) {
      httpFrontend = createHttpFrontend(server, {
        address: options.httpAddress,
        port: options.httpPort,
        maxInputSize: options.httpMaxInputSize,
        log,
      });
      http = await httpFrontend.listen();
      log.info(`Started HTTPService at ${http.address}:${http.port}`);
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
      });
      metrics = await metricsFrontend.listen();
      log.info(`Started Metrics Service at ${metrics.address}:${metrics.port}`);
    }
  } catch (err) {
    await grpcFrontend?.close();
    await httpFrontend?.close();
    await metricsFrontend?.close();
    await repository.close();
    await closeStorage();
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
      await Promise.all([httpFrontend?.close(), grpcFrontend?.close()]);
      await repository.close();
      await closeStorage();
      // Like Triton, metrics stay scrapeable while models drain.
      await metricsFrontend?.close();
      await sharedMemory.close();
    })());
  return { server, http, grpc, metrics, statsRegistry, stop };
}
