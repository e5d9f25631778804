/**
 * ServerOptions: everything the command line can set, validated once and frozen. Options flow one way:
 * flags → ServerOptions → constructors. Only cli/ reads process.argv and the environment; the embedding
 * API (embedded/) builds flags from its options object instead.
 */
import type { LogFormat } from '../common/logger.js';
import type {
  LoadErrorStatus,
  ModelControlMode,
  ResponseCacheConfig,
  StorageOptions,
  TraceOptions,
} from '../core/assembly.js';
import type { CompressionLevel } from '../frontends/grpc/transport/compression.js';
import type { Restrictions } from '../frontends/restricted.js';

/**
 * Object-store settings that come from the environment, not flags (cli/storage-env.ts): credentials
 * (TRITON_CLOUD_CREDENTIAL_PATH or the providers' variables), the default S3 region, a GCS emulator
 * endpoint and the TRITON_*_MOUNT_DIRECTORY cache folders.
 */
export type CloudStorageSettings = Omit<StorageOptions, 'limits' | 'tempDirectory'>;

/** One `--rate-limit-resource=<name>:<count>[:<device>]`; device -1 = every device. */
export interface RateLimitResourceOption {
  readonly name: string;
  readonly count: number;
  readonly device: number;
}

export interface ServerOptions {
  readonly id: string;
  /** Local folders and `s3://`, `gs://`, `as://` URLs, as given. */
  readonly modelRepositories: readonly string[];
  /** `--repository-download-concurrency`: objects downloaded at once per object-store repository. */
  readonly repositoryDownloadConcurrency: number;
  /** `--repository-max-object-bytes`: the largest object copied from an object store. */
  readonly repositoryMaxObjectBytes: number;
  /** `--repository-max-list-entries`: the most keys one listing of an object store may return. */
  readonly repositoryMaxListEntries: number;
  /** `--repository-request-timeout-secs`: an object-store request (or a stalled download) fails after this. */
  readonly repositoryRequestTimeoutSecs: number;
  /** Filled from the environment by the `nereid` command; `{}` (the SDKs' defaults) otherwise. */
  readonly cloudStorage: CloudStorageSettings;
  readonly modelControlMode: ModelControlMode;
  readonly repositoryPollSecs: number;
  /**
   * `--watch` (Nereid only): poll mode driven by file events, for development: an edited model reloads at
   * once; a model that fails to load is retried only when its files change (docs/model-repository.md).
   */
  readonly watch: boolean;
  /** `--watch-max-directories` (Nereid only): the most folders `--watch` watches. */
  readonly watchMaxDirectories: number;
  readonly loadModels: readonly string[];
  /** `--max-loaded-models` (on-demand mode, Nereid only): most models loaded at once; 0 = no limit. */
  readonly maxLoadedModels: number;
  /** `--model-memory-budget` in bytes (on-demand mode, Nereid only): 0 = no budget. */
  readonly modelMemoryBudget: number;
  /** `--model-load-wait-secs` (on-demand mode, Nereid only): longest a request waits for its model. */
  readonly modelLoadWaitSecs: number;
  readonly modelConfigName: string;
  readonly strictReadiness: boolean;
  /** `--model-readiness-poll-ms`: pause between polls of a loaded model's own readiness (0 = never poll). */
  readonly modelReadinessPollMs: number;
  /** `--model-readiness-timeout-ms`: a readiness poll that takes longer counts as not ready. */
  readonly modelReadinessTimeoutMs: number;
  readonly exitOnError: boolean;
  /** `--max-instances-per-model`: instances one model may have across its loaded versions. */
  readonly maxInstancesPerModel: number;
  /** `--max-instances`: instances of every loaded model together (reloads count old and new versions). */
  readonly maxInstances: number;
  /** `--max-process-instances-per-model`: process-backed instances (Python stubs) of one model. */
  readonly maxProcessInstancesPerModel: number;
  /** `--max-process-instances`: process-backed instances of every loaded model together. */
  readonly maxProcessInstances: number;
  /**
   * `--model-unload-timeout-secs`: how long an unloading model version waits for its accepted requests
   * before it fails them and stops its instances (0 = wait as long as they take).
   */
  readonly modelUnloadTimeoutSecs: number;
  readonly exitTimeoutSecs: number;
  /**
   * `--exit-delay-secs`: on SIGTERM/SIGINT, seconds between turning not-ready and closing the listeners, so a
   * load balancer (Kubernetes' endpoints controller) stops routing here before connections are refused.
   */
  readonly exitDelaySecs: number;
  readonly disableAutoCompleteConfig: boolean;
  /** `--strict-gpu-kind`: refuse models with KIND_GPU instance groups (Triton without GPUs) instead of running them on the CPU. */
  readonly strictGpuKind: boolean;
  /**
   * `--strict-model-outputs`: a JavaScript or Python model's response naming an output its config does not
   * declare, or missing a requested one, fails the request (INTERNAL) instead of a warning logged once.
   */
  readonly strictModelOutputs: boolean;
  readonly modelLoadThreadCount: number;
  /** `--load-error-status`: a refused load request's status, Triton's INTERNAL or the client error's. */
  readonly loadErrorStatus: LoadErrorStatus;
  /** backend → key → value (`--backend-config=<backend>,<key>=<value>`; backend `default` applies to all). */
  readonly backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** `--backend-directory` folders (in order) searched for Python-based backends, `<dir>/<name>/model.py`. */
  readonly backendDirectories: readonly string[];
  /** `--backend-venv-directory`: where Python-based backends' venvs live (undefined: the default rules). */
  readonly backendVenvDirectory: string | undefined;
  readonly allowHttp: boolean;
  readonly httpAddress: string;
  readonly httpPort: number;
  readonly httpMaxInputSize: number;
  /** `--http-restricted-api`: HTTP categories that need a header, and which (frontends/restricted.ts). */
  readonly httpRestrictedApis: Restrictions;
  /** `--http-header-forward-pattern` as given (RE2, case-insensitive unless `(?-i)`); undefined = none. */
  readonly httpHeaderForwardPattern: string | undefined;
  /** `--http-max-json-size`: largest JSON document in a request. */
  readonly httpMaxJsonSize: number;
  /** `--http-json-worker-threshold`: JSON documents this large or larger are parsed on worker threads. */
  readonly httpJsonWorkerThreshold: number;
  /** `--http-json-worker-threads`: 0 = parse on the event loop. */
  readonly httpJsonWorkerThreads: number;
  /** --http-thread-count: HTTP protocol threads (frontends/http/threads); 0 = none. */
  readonly httpThreadCount: number;
  /** `--http-json-worker-bytes`: large JSON documents in flight at once, in bytes. */
  readonly httpJsonWorkerBytes: number;
  /** `--http-backlog`: the HTTP listen queue. */
  readonly httpBacklog: number;
  /** `--http-max-connections`: 0 = no cap. */
  readonly httpMaxConnections: number;
  /** `--http-max-connections-per-address`: 0 = no limit. */
  readonly httpMaxConnectionsPerAddress: number;
  /** `--http-health-port`: -1 = no health listener. */
  readonly httpHealthPort: number;
  /** `--allow-dashboard` (Nereid only): serve the operator's dashboard at /dashboard/ on the HTTP port. */
  readonly allowDashboard: boolean;
  /** `--allow-openai`: serve the OpenAI-compatible /v1 API (frontends/openai). */
  readonly allowOpenai: boolean;
  /** `--openai-port`: -1 = on the HTTP port; otherwise a listener of its own (0 picks a free port). */
  readonly openaiPort: number;
  /** `--openai-default-max-tokens`: max_tokens for a request that gives none. */
  readonly openaiDefaultMaxTokens: number;
  /** `--openai-max-buffered-bytes`: unsent bytes one SSE reply may hold before its request is cancelled. */
  readonly openaiMaxBufferedBytes: number;
  readonly allowGrpc: boolean;
  readonly grpcAddress: string;
  readonly grpcPort: number;
  /** `--grpc-infer-response-compression-level`. */
  readonly grpcInferResponseCompressionLevel: CompressionLevel;
  /** Triton's gRPC keepalive flags (`--grpc-keepalive-*`, `--grpc-http2-*`), in milliseconds. */
  readonly grpcKeepaliveTimeMs: number;
  readonly grpcKeepaliveTimeoutMs: number;
  readonly grpcKeepalivePermitWithoutCalls: boolean;
  readonly grpcHttp2MaxPingsWithoutData: number;
  readonly grpcHttp2MinRecvPingIntervalWithoutDataMs: number;
  readonly grpcHttp2MaxPingStrikes: number;
  /** `--grpc-max-connection-age` / `-grace`; 0 = unset, as in Triton. */
  readonly grpcMaxConnectionAgeMs: number;
  readonly grpcMaxConnectionAgeGraceMs: number;
  /** `--grpc-max-connection-idle`: no calls this long → GOAWAY; 0 = never. */
  readonly grpcMaxConnectionIdleMs: number;
  /** `--grpc-max-connections`: 0 = no cap. */
  readonly grpcMaxConnections: number;
  /** `--grpc-max-connections-per-address`: 0 = no limit. */
  readonly grpcMaxConnectionsPerAddress: number;
  /** `--grpc-request-read-timeout`: a unary request or a started message must arrive within it; 0 = none. */
  readonly grpcRequestReadTimeoutMs: number;
  /** `--grpc-max-concurrent-streams`: SETTINGS_MAX_CONCURRENT_STREAMS. */
  readonly grpcMaxConcurrentStreams: number;
  /** `--grpc-max-decompressed-size`: one request message after decompression. */
  readonly grpcMaxDecompressedSize: number;
  /** `--grpc-max-connection-buffered-bytes` / `--grpc-max-buffered-bytes`: request bytes still arriving. */
  readonly grpcMaxConnectionBufferedBytes: number;
  readonly grpcMaxBufferedBytes: number;
  /** `--grpc-infer-stream-idle-timeout`: a ModelStreamInfer waiting this long for a request ends; 0 = never. */
  readonly grpcInferStreamIdleTimeoutMs: number;
  /** `--max-undelivered-responses`: one request's unread responses before the model's send waits. */
  readonly maxUndeliveredResponses: number;
  /** `--response-idle-timeout`: a send waiting this long on a client reading nothing cancels it; 0 = never. */
  readonly responseIdleTimeoutMs: number;
  /** `--grpc-restricted-protocol`: gRPC categories that need a `triton-grpc-protocol-<key>` metadata key. */
  readonly grpcRestrictedProtocols: Restrictions;
  /** `--grpc-header-forward-pattern` as given; undefined = none. */
  readonly grpcHeaderForwardPattern: string | undefined;
  /** --grpc-infer-thread-count: gRPC protocol threads (frontends/grpc/threads); 0 = none (not given). */
  readonly grpcInferThreadCount: number;
  /** `--http-use-ssl` (Nereid only): serve HTTPS with httpServerCert / httpServerKey. */
  readonly httpUseSsl: boolean;
  /** `--http-use-ssl-mutual` (Nereid only): also require client certificates signed by httpRootCert. */
  readonly httpUseSslMutual: boolean;
  readonly httpServerCert: string;
  readonly httpServerKey: string;
  readonly httpRootCert: string;
  /** `--grpc-use-ssl`: serve gRPC over TLS with grpcServerCert / grpcServerKey. */
  readonly grpcUseSsl: boolean;
  /** `--grpc-use-ssl-mutual`: also require client certificates signed by grpcRootCert. */
  readonly grpcUseSslMutual: boolean;
  readonly grpcServerCert: string;
  readonly grpcServerKey: string;
  readonly grpcRootCert: string;
  /** `--tls-cert-poll-ms` (Nereid only): ms between looks at the certificate files for changes; 0 = SIGHUP only. */
  readonly tlsCertPollMs: number;
  readonly allowMetrics: boolean;
  readonly metricsAddress: string;
  readonly metricsPort: number;
  readonly metricsIntervalMs: number;
  /** `--metrics-config <setting>=<value>`: counter_latencies, summary_latencies, summary_quantiles, histogram_latencies. */
  readonly metricsConfig: ReadonlyMap<string, string>;
  /** `--allow-cpu-metrics`: report nv_cpu_* from /proc. */
  readonly allowCpuMetrics: boolean;
  /** `--allow-client-shm`: clients may register and use system shared memory. */
  readonly allowClientShm: boolean;
  readonly logVerbose: number;
  readonly logInfo: boolean;
  readonly logWarning: boolean;
  readonly logError: boolean;
  readonly logFormat: LogFormat;
  readonly logFile: string;
  /** `--rate-limit`: off, or execution_count (instances wait for their rate_limiter resources). */
  readonly rateLimit: 'off' | 'execution_count';
  /** `--rate-limit-resource` flags, in order. */
  readonly rateLimitResources: readonly RateLimitResourceOption[];
  /**
   * The response cache from `--cache-config` (or `--response-cache-byte-size`), checked and typed;
   * undefined = no cache (models' response_cache settings then change nothing).
   */
  readonly responseCache: ResponseCacheConfig | undefined;
  /** `--trace-config` and the older `--trace-*` flags. */
  readonly trace: TraceOptions;
  /** `--access-log`: '' = off, 'stdout', 'stderr' or a file path. */
  readonly accessLog: string;
}
