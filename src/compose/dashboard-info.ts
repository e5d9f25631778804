/**
 * What the dashboard's GET /dashboard/api/server says about this server: identity, uptime, the model
 * control mode, the repositories, what the metrics can give, and every option in effect — with the secrets
 * left out (docs/dashboard.md, "What the server page shows"). Every ServerOptions field has a rule in
 * OPTION_RULES, a table the compiler checks for completeness, so a field added later cannot be shown
 * without someone deciding that it may be.
 */
import { metricsSettings } from '../frontends/metrics/index.js';
import { HTTP_RESTRICTED_CATEGORIES, type Restrictions } from '../frontends/restricted.js';
import type { LogEntry } from '../common/log-ring.js';
import { FLAGS } from './flags.js';
import type { ServerOptions } from './options.js';

/**
 * - show: the value as it is (Maps become objects);
 * - presence: only whether it is set — the paths of TLS certificates and keys say where secret material
 *   lives, which an operator's page does not need to tell;
 * - header-names: restricted-API groups as category → header name; the header's value is a password and
 *   never leaves the server (the name is no secret: a refused request is told it).
 */
type Rule = 'show' | 'presence' | 'header-names';

const OPTION_RULES: Readonly<Record<keyof ServerOptions, Rule>> = {
  id: 'show',
  modelRepositories: 'show',
  modelControlMode: 'show',
  repositoryPollSecs: 'show',
  watch: 'show',
  watchMaxDirectories: 'show',
  loadModels: 'show',
  maxLoadedModels: 'show',
  modelMemoryBudget: 'show',
  modelLoadWaitSecs: 'show',
  modelConfigName: 'show',
  strictReadiness: 'show',
  modelReadinessPollMs: 'show',
  modelReadinessTimeoutMs: 'show',
  exitOnError: 'show',
  maxInstancesPerModel: 'show',
  maxInstances: 'show',
  maxProcessInstancesPerModel: 'show',
  maxProcessInstances: 'show',
  modelUnloadTimeoutSecs: 'show',
  exitTimeoutSecs: 'show',
  exitDelaySecs: 'show',
  disableAutoCompleteConfig: 'show',
  strictGpuKind: 'show',
  strictModelOutputs: 'show',
  loadErrorStatus: 'show',
  modelLoadThreadCount: 'show',
  backendConfig: 'show',
  backendDirectories: 'show',
  backendVenvDirectory: 'show',
  allowHttp: 'show',
  httpAddress: 'show',
  httpPort: 'show',
  httpMaxInputSize: 'show',
  httpRestrictedApis: 'header-names',
  httpHeaderForwardPattern: 'show',
  httpMaxJsonSize: 'show',
  httpJsonWorkerThreshold: 'show',
  httpJsonWorkerThreads: 'show',
  httpThreadCount: 'show',
  httpJsonWorkerBytes: 'show',
  httpBacklog: 'show',
  httpMaxConnections: 'show',
  httpMaxConnectionsPerAddress: 'show',
  httpHealthPort: 'show',
  allowDashboard: 'show',
  allowGrpc: 'show',
  grpcAddress: 'show',
  grpcPort: 'show',
  grpcInferResponseCompressionLevel: 'show',
  grpcKeepaliveTimeMs: 'show',
  grpcKeepaliveTimeoutMs: 'show',
  grpcKeepalivePermitWithoutCalls: 'show',
  grpcHttp2MaxPingsWithoutData: 'show',
  grpcHttp2MinRecvPingIntervalWithoutDataMs: 'show',
  grpcHttp2MaxPingStrikes: 'show',
  grpcMaxConnectionAgeMs: 'show',
  grpcMaxConnectionAgeGraceMs: 'show',
  grpcMaxConnectionIdleMs: 'show',
  grpcMaxConnections: 'show',
  grpcMaxConnectionsPerAddress: 'show',
  grpcRequestReadTimeoutMs: 'show',
  grpcMaxConcurrentStreams: 'show',
  grpcMaxDecompressedSize: 'show',
  grpcMaxConnectionBufferedBytes: 'show',
  grpcMaxBufferedBytes: 'show',
  grpcInferStreamIdleTimeoutMs: 'show',
  maxUndeliveredResponses: 'show',
  responseIdleTimeoutMs: 'show',
  grpcRestrictedProtocols: 'header-names',
  grpcHeaderForwardPattern: 'show',
  grpcInferThreadCount: 'show',
  httpUseSsl: 'show',
  httpUseSslMutual: 'show',
  httpServerCert: 'presence',
  httpServerKey: 'presence',
  httpRootCert: 'presence',
  grpcUseSsl: 'show',
  grpcUseSslMutual: 'show',
  grpcServerCert: 'presence',
  grpcServerKey: 'presence',
  grpcRootCert: 'presence',
  tlsCertPollMs: 'show',
  allowMetrics: 'show',
  metricsAddress: 'show',
  metricsPort: 'show',
  metricsIntervalMs: 'show',
  metricsConfig: 'show',
  allowCpuMetrics: 'show',
  allowClientShm: 'show',
  logVerbose: 'show',
  logInfo: 'show',
  logWarning: 'show',
  logError: 'show',
  logFormat: 'show',
  logFile: 'show',
  rateLimit: 'show',
  rateLimitResources: 'show',
  // A Redis cache's settings hold its password and TLS key paths: only whether a cache is on.
  responseCache: 'presence',
  repositoryDownloadConcurrency: 'show',
  repositoryMaxObjectBytes: 'show',
  repositoryMaxListEntries: 'show',
  repositoryRequestTimeoutSecs: 'show',
  // Bucket credentials (keys, tokens, the credential file's contents): only whether any are set.
  cloudStorage: 'presence',
  trace: 'show',
  accessLog: 'show',
  allowOpenai: 'show',
  openaiPort: 'show',
  openaiDefaultMaxTokens: 'show',
  openaiMaxBufferedBytes: 'show',
};

/** Category → header name, in Triton's category order; values are dropped here and nowhere else. */
function headerNames(r: Restrictions): Record<string, string> {
  const out: Record<string, string> = {};
  for (const category of HTTP_RESTRICTED_CATEGORIES) {
    const restriction = r[category];
    if (restriction !== undefined) out[category] = restriction.header;
  }
  return out;
}

/** JSON-friendly: Maps (nested too) become objects; everything else in ServerOptions already is. */
function plain(value: unknown): unknown {
  if (value instanceof Map) {
    return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), plain(v)]));
  }
  return value;
}

/** The options in effect, by ServerOptions field name, each through its rule. */
export function visibleOptions(options: ServerOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(OPTION_RULES) as (keyof ServerOptions)[]) {
    const value = options[key];
    switch (OPTION_RULES[key]) {
      case 'show':
        out[key] = plain(value);
        break;
      case 'presence':
        out[key] = value ? '(set)' : '';
        break;
      case 'header-names':
        out[key] = headerNames(value as Restrictions);
        break;
    }
  }
  return out;
}

/**
 * The command-line flag that sets each option, as the operator typed it: the field name in kebab case
 * (without a trailing `-ms` when the flag takes milliseconds under a plain name), else the exceptions
 * below; an option no single flag sets (bucket credentials come from the environment) gets a description.
 */
const FLAG_EXCEPTIONS: Partial<Record<keyof ServerOptions, string>> = {
  modelRepositories: '--model-repository',
  backendDirectories: '--backend-directory',
  loadModels: '--load-model',
  httpRestrictedApis: '--http-restricted-api',
  grpcRestrictedProtocols: '--grpc-restricted-protocol',
  rateLimitResources: '--rate-limit-resource',
  responseCache: '--cache-config',
  trace: '--trace-config',
  cloudStorage: '(cloud credentials from the environment)',
};

export function optionFlags(options: ServerOptions): Record<string, string> {
  const names = new Set(FLAGS.flatMap((f) => [f.name, ...(f.aliases ?? [])]));
  const out: Record<string, string> = {};
  for (const key of Object.keys(visibleOptions(options)) as (keyof ServerOptions)[]) {
    const kebab = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const exception = FLAG_EXCEPTIONS[key];
    if (exception !== undefined) out[key] = exception;
    else if (names.has(kebab)) out[key] = `--${kebab}`;
    else if (names.has(kebab.replace(/-ms$/, ''))) out[key] = `--${kebab.replace(/-ms$/, '')}`;
    else out[key] = key;
  }
  return out;
}

export interface ServerInfoSource {
  readonly options: ServerOptions;
  /** Nereid's version (package.json). */
  readonly version: string;
  /** When the server started serving (ms since the epoch). */
  readonly startedAt: number;
}

/** The document of GET /dashboard/api/server, made fresh for each request (uptime moves). */
export function dashboardInfo(source: ServerInfoSource, now = Date.now()): object {
  const { options } = source;
  const metrics = metricsSettings(options.metricsConfig);
  return {
    product: 'nereid',
    version: source.version,
    id: options.id,
    startedAt: new Date(source.startedAt).toISOString(),
    uptimeSeconds: Math.max(0, (now - source.startedAt) / 1000),
    modelControlMode: options.modelControlMode,
    repositories: options.modelRepositories,
    metrics: {
      enabled: options.allowMetrics,
      summaryLatencies: metrics.summaryLatencies,
      histogramLatencies: metrics.histogramLatencies,
      quantiles: metrics.quantiles.map((q) => q.quantile),
    },
    restrictedApis: headerNames(options.httpRestrictedApis),
    options: visibleOptions(options),
    optionFlags: optionFlags(options),
  };
}

/**
 * The strings a log line must never show on the page: the restricted-API header values (HTTP and gRPC),
 * which are passwords. A line holding one has it replaced, wherever it stands.
 */
export function logSecrets(options: ServerOptions): string[] {
  const out: string[] = [];
  for (const r of [options.httpRestrictedApis, options.grpcRestrictedProtocols]) {
    for (const restriction of Object.values(r ?? {})) {
      if (restriction !== undefined && restriction.value.length > 0) out.push(restriction.value);
    }
  }
  // Longest first, so a secret that contains another is replaced whole.
  return [...new Set(out)].sort((a, b) => b.length - a.length);
}

/** `key=value` and `key: value` pairs whose key names a credential, as a URL or config may carry them. */
const CREDENTIAL =
  /\b(password|passwd|secret|token|api[_-]?key|authorization)(["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi;

/** The log's last lines for GET /dashboard/api/logs, with the secrets above and credential pairs masked. */
export function dashboardLogs(lines: readonly LogEntry[], secrets: readonly string[]): LogEntry[] {
  return lines.map((e) => {
    let message = e.message;
    for (const s of secrets) message = message.split(s).join('[redacted]');
    message = message.replace(CREDENTIAL, '$1$2[redacted]');
    return message === e.message ? e : { ...e, message };
  });
}
