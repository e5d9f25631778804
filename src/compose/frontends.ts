/**
 * The composition's network half: each frontend's options from the frozen ServerOptions, starting them in
 * Triton's order (gRPC, HTTP and its health port, OpenAI on its own port, metrics) with Triton's log
 * lines, and closing whichever started. compose.ts builds the core they serve and decides when to stop.
 */
import { readFileSync } from 'node:fs';
import { unavailable } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { InferenceServer, ResponseCache, StatsRegistry } from '../core/assembly.js';
import type { AccessLog } from '../frontends/access-log.js';
import {
  createGrpcFrontend,
  createThreadedGrpcFrontend,
  grpcThreadsRefusal,
  type GrpcFrontend,
  type GrpcFrontendOptions,
} from '../frontends/grpc/index.js';
import {
  createHealthListener,
  createHttpFrontend,
  createThreadedHttpFrontend,
  threadsRefusal,
  type HealthListener,
  type HttpFrontend,
  type HttpFrontendOptions,
} from '../frontends/http/index.js';
import { createMetricsFrontend, type MetricsFrontend } from '../frontends/metrics/index.js';
import {
  createOpenAiHandler,
  createOpenAiServer,
  isOpenAiPath,
  type OpenAiOptions,
  type OpenAiServer,
} from '../frontends/openai/index.js';
import { RequestCounts } from '../frontends/request-counts.js';
import { dashboardInfo, dashboardLogs, logSecrets } from './dashboard-info.js';
import type { ServerOptions } from './options.js';
import type { EndpointTls } from './tls-endpoints.js';

export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

/** What the frontends serve and share, built by compose.ts before any of them starts. */
export interface FrontendContext {
  readonly options: ServerOptions;
  readonly log: Logger;
  readonly server: InferenceServer;
  readonly statsRegistry: StatsRegistry;
  readonly responseCache: ResponseCache | undefined;
  readonly accessLog: AccessLog | undefined;
  readonly tls: EndpointTls;
  /** The package's version, for the dashboard. */
  readonly version: string;
  /** Date.now() when the start began, for the dashboard. */
  readonly startedAt: number;
}

/** The frontends that have started (filled in as each one listens, so a failure closes exactly those). */
export interface StartedFrontends {
  http?: Endpoint;
  httpFrontend?: HttpFrontend;
  httpHealth?: Endpoint;
  healthListener?: HealthListener;
  metrics?: Endpoint;
  metricsFrontend?: MetricsFrontend;
  grpc?: Endpoint;
  grpcFrontend?: GrpcFrontend;
  openai?: Endpoint;
  openaiServer?: OpenAiServer;
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

/** The gRPC frontend's transport settings from the command line (also used by the embedded server). */
export function grpcTransportOptions(
  options: ServerOptions,
): Omit<GrpcFrontendOptions, 'address' | 'port' | 'log'> {
  return {
    maxDecompressedSize: options.grpcMaxDecompressedSize,
    maxConcurrentStreams: options.grpcMaxConcurrentStreams,
    maxConnections: options.grpcMaxConnections,
    maxConnectionsPerAddress: options.grpcMaxConnectionsPerAddress,
    requestReadTimeoutMs: options.grpcRequestReadTimeoutMs,
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

function grpcFrontendOptions(ctx: FrontendContext, requestCounts?: RequestCounts): GrpcFrontendOptions {
  const { options } = ctx;
  return {
    ...(requestCounts && { requestCounts }),
    address: options.grpcAddress,
    port: options.grpcPort,
    restrictedProtocols: options.grpcRestrictedProtocols,
    headerForwardPattern: options.grpcHeaderForwardPattern,
    log: ctx.log,
    accessLog: ctx.accessLog,
    ...grpcTransportOptions(options),
    tls: ctx.tls.get('grpc'),
  };
}

function openAiOptions(ctx: FrontendContext): OpenAiOptions {
  const { options } = ctx;
  return {
    maxInputSize: options.httpMaxInputSize,
    defaultMaxTokens: options.openaiDefaultMaxTokens,
    maxBufferedBytes: options.openaiMaxBufferedBytes,
    repositories: options.modelRepositories,
    restrictedApis: options.httpRestrictedApis,
    log: ctx.log,
  };
}

/**
 * The HTTP frontend's options. `metricsText` is the running metrics frontend's scrape, asked lazily: the
 * metrics frontend starts after this one, and the page asks for metrics only once both serve.
 */
function httpFrontendOptions(
  ctx: FrontendContext,
  metricsText: () => Promise<string>,
  requestCounts?: RequestCounts,
): HttpFrontendOptions {
  const { options } = ctx;
  // The OpenAI API is on the HTTP port unless it has a port of its own (or is off).
  const openaiMount =
    options.allowOpenai && options.openaiPort < 0
      ? { claims: isOpenAiPath, handle: createOpenAiHandler(ctx.server, openAiOptions(ctx)) }
      : undefined;
  return {
    address: options.httpAddress,
    port: options.httpPort,
    maxInputSize: options.httpMaxInputSize,
    restrictedApis: options.httpRestrictedApis,
    headerForwardPattern: options.httpHeaderForwardPattern,
    backlog: options.httpBacklog,
    maxConnections: options.httpMaxConnections,
    maxConnectionsPerAddress: options.httpMaxConnectionsPerAddress,
    json: {
      maxJsonSize: options.httpMaxJsonSize,
      workerThreshold: options.httpJsonWorkerThreshold,
      workerThreads: options.httpJsonWorkerThreads,
      workerBytes: options.httpJsonWorkerBytes,
    },
    log: ctx.log,
    accessLog: ctx.accessLog,
    tls: ctx.tls.get('http'),
    dashboard: options.allowDashboard
      ? {
          info: () => dashboardInfo({ options, version: ctx.version, startedAt: ctx.startedAt }),
          metrics: options.allowMetrics ? metricsText : undefined,
          logs: (
            (secrets) => () =>
              dashboardLogs(ctx.log.recent.lines(), secrets)
          )(logSecrets(options)),
        }
      : undefined,
    ...(openaiMount !== undefined && { mount: openaiMount }),
    ...(requestCounts && { requestCounts }),
  };
}

/** The gRPC frontend, its protocol on --grpc-infer-thread-count threads when this Node and the port allow. */
async function startGrpc(
  ctx: FrontendContext,
  started: StartedFrontends,
  requestCounts: RequestCounts | undefined,
): Promise<void> {
  const { options, log, server } = ctx;
  const grpcOptions = grpcFrontendOptions(ctx, requestCounts);
  const threads = options.grpcInferThreadCount;
  const refusal = threads > 0 ? grpcThreadsRefusal(grpcOptions) : undefined;
  if (refusal !== undefined) log.warn(refusal);
  const threaded = threads > 0 && refusal === undefined;
  started.grpcFrontend = threaded
    ? createThreadedGrpcFrontend(server, grpcOptions, threads)
    : createGrpcFrontend(server, grpcOptions);
  const grpc = await started.grpcFrontend.listen();
  started.grpc = grpc;
  log.info(`Started GRPCInferenceService at ${grpc.address}:${grpc.port}`);
  if (threaded) log.info(`gRPC protocol work on ${threads} threads (--grpc-infer-thread-count)`);
}

/** The HTTP frontend and, with --http-health-port, the health listener beside it. */
async function startHttp(
  ctx: FrontendContext,
  started: StartedFrontends,
  requestCounts: RequestCounts | undefined,
): Promise<void> {
  const { options, log } = ctx;
  const metricsText = (): Promise<string> =>
    started.metricsFrontend?.scrape() ?? Promise.reject(unavailable('metrics are not up yet'));
  const httpOptions = httpFrontendOptions(ctx, metricsText, requestCounts);
  const refusal = options.httpThreadCount > 0 ? threadsRefusal(httpOptions) : undefined;
  if (refusal !== undefined) log.warn(refusal);
  started.httpFrontend =
    options.httpThreadCount > 0 && refusal === undefined
      ? createThreadedHttpFrontend(ctx.server, httpOptions, options.httpThreadCount)
      : createHttpFrontend(ctx.server, httpOptions);
  const http = await started.httpFrontend.listen();
  started.http = http;
  log.info(`Started HTTPService at ${http.address}:${http.port}`);
  if (options.httpThreadCount > 0 && refusal === undefined) {
    log.info(`HTTP protocol work on ${options.httpThreadCount} threads (--http-thread-count)`);
  }
  warnIfBacklogCapped(options.httpBacklog, log);
  if (options.httpHealthPort >= 0) {
    started.healthListener = createHealthListener(ctx.server, {
      address: options.httpAddress,
      port: options.httpHealthPort,
      backlog: options.httpBacklog,
      log,
    });
    const health = await started.healthListener.listen();
    started.httpHealth = health;
    log.info(`Started HTTP health service at ${health.address}:${health.port}`);
  }
}

/**
 * Starts every frontend the options switch on, recording each in `started` as it listens; on a failure
 * the caller closes what `started` holds (closeFrontends).
 */
export async function startFrontends(ctx: FrontendContext, started: StartedFrontends): Promise<void> {
  const { options, log, server } = ctx;
  // Requests by endpoint and status, counted by the HTTP and gRPC frontends for the metrics frontend.
  const requestCounts = options.allowMetrics ? new RequestCounts() : undefined;
  if (options.allowGrpc) await startGrpc(ctx, started, requestCounts);
  if (options.allowHttp) await startHttp(ctx, started, requestCounts);
  if (options.allowOpenai && options.openaiPort >= 0) {
    started.openaiServer = createOpenAiServer(server, {
      ...openAiOptions(ctx),
      address: options.httpAddress,
      port: options.openaiPort,
      tls: ctx.tls.get('http'),
    });
    const openai = await started.openaiServer.listen();
    started.openai = openai;
    log.info(`Started OpenAI-compatible service at ${openai.address}:${openai.port}`);
  }
  if (options.allowMetrics) {
    const responseCache = ctx.responseCache;
    started.metricsFrontend = createMetricsFrontend(ctx.statsRegistry, {
      address: options.metricsAddress,
      port: options.metricsPort,
      log,
      intervalMs: options.metricsIntervalMs,
      config: options.metricsConfig,
      cpuMetrics: options.allowCpuMetrics,
      customMetrics: (timeoutMs) => server.customMetrics(timeoutMs),
      cacheMetrics: responseCache && (() => responseCache.metrics()),
      operator: () => ({
        build: { version: ctx.version, nodeVersion: process.version },
        models: server.repositoryIndex(false).map((e) => ({
          model: e.name,
          version: e.version ?? '',
          state: e.state,
        })),
        instances: server.modelInstanceCounts(),
        onDemand: server.onDemandStatus(),
        ...(requestCounts && { requests: requestCounts.snapshot() }),
      }),
    });
    const metrics = await started.metricsFrontend.listen();
    started.metrics = metrics;
    log.info(`Started Metrics Service at ${metrics.address}:${metrics.port}`);
  }
}

/** After a failed start: closes whichever frontends started, one after the other. */
export async function closeFrontends(started: StartedFrontends): Promise<void> {
  await started.grpcFrontend?.close();
  await started.healthListener?.close();
  await started.httpFrontend?.close();
  await started.openaiServer?.close();
  await started.metricsFrontend?.close();
}
