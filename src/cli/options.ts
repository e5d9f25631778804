/**
 * ServerOptions: everything the command line can set, validated once and frozen. Options flow one way:
 * flags → ServerOptions → constructors. Only cli/ reads process.argv and the environment.
 */
import type { LogFormat } from '../common/logger.js';
import type { ResponseCacheConfig } from '../core/cache/index.js';

export type ModelControlMode = 'none' | 'poll' | 'explicit';

/** One `--rate-limit-resource=<name>:<count>[:<device>]`; device -1 = every device. */
export interface RateLimitResourceOption {
  readonly name: string;
  readonly count: number;
  readonly device: number;
}

export interface ServerOptions {
  readonly id: string;
  readonly modelRepositories: readonly string[];
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
  /**
   * The response cache from `--cache-config` (or `--response-cache-byte-size`), checked and typed;
   * undefined = no cache (models' response_cache settings then change nothing).
   */
  readonly responseCache: ResponseCacheConfig | undefined;
}
