/**
 * ServerOptions: everything the command line can set, validated once and frozen. Options flow one way:
 * flags → ServerOptions → constructors. Only cli/ reads process.argv and the environment.
 */
import type { LogFormat } from '../common/logger.js';
import type { StorageOptions } from '../core/storage/storage.js';

/**
 * Object-store settings that come from the environment, not flags (cli/storage-env.ts): credentials
 * (TRITON_CLOUD_CREDENTIAL_PATH or the providers' variables), the default S3 region, a GCS emulator
 * endpoint and the TRITON_*_MOUNT_DIRECTORY cache folders.
 */
export type CloudStorageSettings = Omit<StorageOptions, 'limits' | 'tempDirectory'>;

export type ModelControlMode = 'none' | 'poll' | 'explicit';

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
  readonly loadModels: readonly string[];
  readonly modelConfigName: string;
  readonly strictReadiness: boolean;
  /** `--model-readiness-poll-ms`: pause between polls of a loaded model's own readiness (0 = never poll). */
  readonly modelReadinessPollMs: number;
  /** `--model-readiness-timeout-ms`: a readiness poll that takes longer counts as not ready. */
  readonly modelReadinessTimeoutMs: number;
  readonly exitOnError: boolean;
  readonly exitTimeoutSecs: number;
  /**
   * `--exit-delay-secs`: on SIGTERM/SIGINT, seconds between turning not-ready and closing the listeners, so a
   * load balancer (Kubernetes' endpoints controller) stops routing here before connections are refused.
   */
  readonly exitDelaySecs: number;
  readonly disableAutoCompleteConfig: boolean;
  /** `--strict-gpu-kind`: refuse models with KIND_GPU instance groups (Triton without GPUs) instead of running them on the CPU. */
  readonly strictGpuKind: boolean;
  readonly modelLoadThreadCount: number;
  /** backend → key → value (`--backend-config=<backend>,<key>=<value>`; backend `default` applies to all). */
  readonly backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>;
  readonly allowHttp: boolean;
  readonly httpAddress: string;
  readonly httpPort: number;
  readonly httpMaxInputSize: number;
  readonly allowGrpc: boolean;
  readonly grpcAddress: string;
  readonly grpcPort: number;
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
}
