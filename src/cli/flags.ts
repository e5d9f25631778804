/**
 * The table of `tritonserver` flags Nereid understands. Each row names the flag, its argument kind, its
 * default and help text, and how it sets ServerOptions; parseFlags() turns argv into frozen ServerOptions
 * and --help is printed from the same table (docs/configuration.md is generated from it as well).
 * Flags Triton has that change nothing on this server (GPU pools, thread counts of Triton's own HTTP
 * library...) are accepted with a warning, so existing command lines keep working.
 */
import { invalidArg } from '../common/errors.js';
import type { RateLimitResourceOption, ServerOptions } from './options.js';

/**
 * How a flag's value is read. 'int-or-bool': an integer, or true/false for 1/0 (Triton's log-verbose);
 * 'list': the flag may repeat, each occurrence one string.
 */
type Kind = 'string' | 'int' | 'float' | 'bool' | 'int-or-bool' | 'list';
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Draft = Mutable<
  Omit<
    ServerOptions,
    'backendConfig' | 'modelRepositories' | 'loadModels' | 'metricsConfig' | 'rateLimitResources'
  >
> & {
  rateLimitResources: RateLimitResourceOption[];
  backendConfig: Map<string, Map<string, string>>;
  metricsConfig: Map<string, string>;
  modelRepositories: string[];
  loadModels: string[];
};

interface Flag {
  readonly name: string;
  readonly aliases?: readonly string[];
  readonly kind: Kind;
  readonly help: string;
  readonly defaultText?: string;
  /** Applies one occurrence. */
  readonly apply?: (d: Draft, value: string) => void;
  /**
   * Instead of apply: the flag is accepted (its value checked by kind) but changes nothing on this server;
   * the text says why and what Nereid does instead, for the one start-up warning a command line using it
   * gets.
   */
  readonly inert?: string;
}

function parseBool(flag: string, v: string): boolean {
  const s = v.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  throw invalidArg(`--${flag} expects a boolean, got '${v}'`);
}

/** Triton's ParseIntBoolOption: true/false (any case) for 1/0, else an integer. */
function parseIntOrBool(flag: string, v: string, min: number): number {
  const s = v.toLowerCase();
  if (s === 'true') return 1;
  if (s === 'false') return 0;
  return parseInt10(flag, v, min);
}

function parseFloat10(flag: string, v: string, min: number): number {
  if (!/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v)) {
    throw invalidArg(`--${flag} expects a number, got '${v}'`);
  }
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw invalidArg(`--${flag} must be at least ${min}, got '${v}'`);
  return n;
}

/** Checks an inert flag's value the way its kind would be read, so a typo is refused as Triton refuses it. */
function checkValue(flag: Flag, v: string): void {
  if (flag.kind === 'int') parseInt10(flag.name, v, Number.MIN_SAFE_INTEGER);
  else if (flag.kind === 'float') parseFloat10(flag.name, v, -Infinity);
  else if (flag.kind === 'bool') parseBool(flag.name, v);
  else if (flag.kind === 'int-or-bool') parseIntOrBool(flag.name, v, Number.MIN_SAFE_INTEGER);
}

function parseInt10(flag: string, v: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^-?\d+$/.test(v)) throw invalidArg(`--${flag} expects an integer, got '${v}'`);
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw invalidArg(`--${flag} must be between ${min} and ${max}, got '${v}'`);
  }
  return n;
}

const port = (flag: string, v: string): number => parseInt10(flag, v, 0, 65535);

/** Triton's ParseRateLimiterResourceOption: `<name>:<count>` or `<name>:<count>:<device>`. */
function parseRateLimitResource(v: string): RateLimitResourceOption {
  const parts = v.split(':');
  if (parts.length < 2 || parts.length > 3 || parts[0] === '') {
    throw invalidArg(
      `--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got ${v}`,
    );
  }
  return {
    name: parts[0],
    count: parseInt10('rate-limit-resource', parts[1], 0, 2 ** 31 - 1),
    device: parts.length === 3 ? parseInt10('rate-limit-resource', parts[2], 0, 2 ** 31 - 1) : -1,
  };
}

export const FLAGS: readonly Flag[] = [
  {
    name: 'model-repository',
    aliases: ['model-store'],
    kind: 'list',
    help: 'A model repository: a local folder, or s3://[host:port/]bucket/path, gs://bucket/path, as://account/container/path (credentials from the environment, see docs/model-repository.md); repeat for several, local and remote mixed.',
    apply: (d, v) => d.modelRepositories.push(v),
  },
  {
    name: 'repository-download-concurrency',
    kind: 'int',
    defaultText: '8',
    help: 'Objects downloaded at once (connections) from each s3://, gs:// or as:// model repository when a model is copied to the local cache. Nereid only.',
    apply: (d, v) =>
      (d.repositoryDownloadConcurrency = parseInt10('repository-download-concurrency', v, 1, 256)),
  },
  {
    name: 'repository-max-object-bytes',
    kind: 'int',
    defaultText: String(64 * 1024 ** 3),
    help: 'Largest object copied from an object-store model repository; a model with a larger file fails to load, naming it. Nereid only.',
    apply: (d, v) => (d.repositoryMaxObjectBytes = parseInt10('repository-max-object-bytes', v, 1)),
  },
  {
    name: 'repository-max-list-entries',
    kind: 'int',
    defaultText: '100000',
    help: 'Most object keys one listing of an object-store model repository (a model folder, or the repository root) may return; more fails that listing. Nereid only.',
    apply: (d, v) => (d.repositoryMaxListEntries = parseInt10('repository-max-list-entries', v, 1)),
  },
  {
    name: 'repository-request-timeout-secs',
    kind: 'int',
    defaultText: '60',
    help: 'Seconds an object-store request may take, and a download may go without receiving a byte, before it fails. Nereid only.',
    apply: (d, v) =>
      (d.repositoryRequestTimeoutSecs = parseInt10('repository-request-timeout-secs', v, 1, 86400)),
  },
  {
    name: 'model-control-mode',
    kind: 'string',
    defaultText: 'none',
    help: 'none: load every model at start; poll: also rescan the repositories; explicit: load only --load-model and API requests.',
    apply: (d, v) => {
      if (v !== 'none' && v !== 'poll' && v !== 'explicit') {
        throw invalidArg(`--model-control-mode must be none, poll or explicit, got '${v}'`);
      }
      d.modelControlMode = v;
    },
  },
  {
    name: 'repository-poll-secs',
    kind: 'int',
    defaultText: '15',
    help: 'Seconds between repository scans in poll mode.',
    apply: (d, v) => (d.repositoryPollSecs = parseInt10('repository-poll-secs', v, 0)),
  },
  {
    name: 'load-model',
    kind: 'list',
    help: "Model to load at start in explicit mode; repeat for several; '*' loads all.",
    apply: (d, v) => d.loadModels.push(v),
  },
  {
    name: 'model-config-name',
    kind: 'string',
    help: 'Load <model>/configs/<name>.pbtxt instead of config.pbtxt where it exists.',
    apply: (d, v) => (d.modelConfigName = v),
  },
  {
    name: 'strict-readiness',
    kind: 'bool',
    defaultText: 'true',
    help: 'Ready only when the server and every model are ready.',
    apply: (d, v) => (d.strictReadiness = parseBool('strict-readiness', v)),
  },
  {
    name: 'model-readiness-poll-ms',
    kind: 'int',
    defaultText: '5000',
    help: "Milliseconds between asks of a loaded model's own readiness (a JavaScript model's isReady()); a model that answers false, fails or times out reports not ready (model ready, repository index, strict readiness) yet still takes requests. 0 = never ask. Nereid only.",
    apply: (d, v) => (d.modelReadinessPollMs = parseInt10('model-readiness-poll-ms', v, 0)),
  },
  {
    name: 'model-readiness-timeout-ms',
    kind: 'int',
    defaultText: '5000',
    help: 'Milliseconds a model may take to answer a readiness ask before it counts as not ready. Nereid only.',
    apply: (d, v) => (d.modelReadinessTimeoutMs = parseInt10('model-readiness-timeout-ms', v, 1)),
  },
  {
    name: 'exit-on-error',
    kind: 'bool',
    defaultText: 'true',
    help: 'Exit when a model fails to load at start.',
    apply: (d, v) => (d.exitOnError = parseBool('exit-on-error', v)),
  },
  {
    name: 'exit-timeout-secs',
    kind: 'int',
    defaultText: '30',
    help: 'Seconds to wait for in-flight requests on shutdown.',
    apply: (d, v) => (d.exitTimeoutSecs = parseInt10('exit-timeout-secs', v, 0)),
  },
  {
    name: 'exit-delay-secs',
    kind: 'int',
    defaultText: '0',
    help: 'Seconds between a SIGTERM/SIGINT and closing the listeners: server readiness fails at once while requests are still served (HTTP replies ask the client to reconnect), so a load balancer or Kubernetes stops routing here before connections are refused; in-flight requests then get --exit-timeout-secs. Nereid only.',
    apply: (d, v) => (d.exitDelaySecs = parseInt10('exit-delay-secs', v, 0)),
  },
  {
    name: 'disable-auto-complete-config',
    kind: 'bool',
    help: 'Do not let backends fill in missing parts of model configs.',
    apply: (d, v) => (d.disableAutoCompleteConfig = parseBool('disable-auto-complete-config', v)),
  },
  {
    name: 'strict-model-config',
    kind: 'bool',
    defaultText: 'false',
    help: 'Deprecated alias of --disable-auto-complete-config.',
    apply: (d, v) => (d.disableAutoCompleteConfig = parseBool('strict-model-config', v)),
  },
  {
    name: 'strict-gpu-kind',
    kind: 'bool',
    defaultText: 'false',
    help: "Refuse to load a model with a KIND_GPU instance group, with Triton's message (what Triton does on a machine without GPUs). By default such groups run on the CPU: a warning at load says so, and the model's config shows KIND_CPU. Nereid only.",
    apply: (d, v) => (d.strictGpuKind = parseBool('strict-gpu-kind', v)),
  },
  {
    name: 'model-load-thread-count',
    kind: 'int',
    defaultText: '4',
    help: 'Models loaded in parallel.',
    apply: (d, v) => (d.modelLoadThreadCount = parseInt10('model-load-thread-count', v, 1)),
  },
  {
    name: 'backend-config',
    kind: 'list',
    help: "Backend setting '<backend>,<key>=<value>'; backend 'default' applies to every backend.",
    apply: (d, v) => {
      const m = /^([^,]+),([^=]+)=(.*)$/.exec(v);
      if (!m) throw invalidArg(`--backend-config expects <backend>,<key>=<value>, got '${v}'`);
      const [, backend, key, value] = m;
      let entry = d.backendConfig.get(backend);
      if (!entry) d.backendConfig.set(backend, (entry = new Map<string, string>()));
      entry.set(key, value);
    },
  },
  {
    name: 'id',
    kind: 'string',
    defaultText: 'triton',
    help: "Server identifier: the name GET /v2 and gRPC ServerMetadata report (Triton's default, which Triton's clients and examples expect). That the server is Nereid shows in the HTTP Server header, the gRPC 'server' response metadata and the start-up log.",
    apply: (d, v) => (d.id = v),
  },
  {
    name: 'allow-http',
    kind: 'bool',
    defaultText: 'true',
    help: 'Serve HTTP/REST.',
    apply: (d, v) => (d.allowHttp = parseBool('allow-http', v)),
  },
  {
    name: 'http-address',
    kind: 'string',
    defaultText: '0.0.0.0',
    help: 'HTTP bind address.',
    apply: (d, v) => (d.httpAddress = v),
  },
  {
    name: 'http-port',
    kind: 'int',
    defaultText: '8000',
    help: 'HTTP port (0 picks a free one).',
    apply: (d, v) => (d.httpPort = port('http-port', v)),
  },
  {
    name: 'http-max-input-size',
    kind: 'int',
    defaultText: '67108864',
    help: 'Largest accepted HTTP request body, also after decompression.',
    apply: (d, v) => (d.httpMaxInputSize = parseInt10('http-max-input-size', v, 1)),
  },
  {
    name: 'allow-grpc',
    kind: 'bool',
    defaultText: 'true',
    help: 'Serve gRPC (when this build has the gRPC frontend).',
    apply: (d, v) => (d.allowGrpc = parseBool('allow-grpc', v)),
  },
  {
    name: 'grpc-address',
    kind: 'string',
    defaultText: '0.0.0.0',
    help: 'gRPC bind address.',
    apply: (d, v) => (d.grpcAddress = v),
  },
  {
    name: 'grpc-port',
    kind: 'int',
    defaultText: '8001',
    help: 'gRPC port (0 picks a free one).',
    apply: (d, v) => (d.grpcPort = port('grpc-port', v)),
  },
  {
    name: 'allow-metrics',
    kind: 'bool',
    defaultText: 'true',
    help: 'Serve Prometheus metrics (when this build has the metrics endpoint).',
    apply: (d, v) => (d.allowMetrics = parseBool('allow-metrics', v)),
  },
  {
    name: 'metrics-address',
    kind: 'string',
    help: 'Metrics bind address (defaults to the HTTP address).',
    apply: (d, v) => (d.metricsAddress = v),
  },
  {
    name: 'metrics-port',
    kind: 'int',
    defaultText: '8002',
    help: 'Metrics port (0 picks a free one).',
    apply: (d, v) => (d.metricsPort = port('metrics-port', v)),
  },
  {
    name: 'metrics-interval-ms',
    kind: 'float',
    defaultText: '2000',
    help: 'Interval of the periodically collected metrics, in milliseconds (fractions are rounded up).',
    apply: (d, v) =>
      (d.metricsIntervalMs = Math.max(1, Math.ceil(parseFloat10('metrics-interval-ms', v, 0)))),
  },
  {
    name: 'metrics-config',
    kind: 'list',
    help: "Metrics setting '<setting>=<value>'; repeat for several: counter_latencies=false, summary_latencies=true, summary_quantiles=<q>:<error>,..., histogram_latencies=true.",
    apply: (d, v) => {
      const eq = v.indexOf('=');
      const setting = eq < 0 ? '' : v.slice(0, eq);
      const value = eq < 0 ? '' : v.slice(eq + 1);
      if (!setting || !value || setting.includes(',')) {
        throw invalidArg(`--metrics-config option format is <setting>=<value>. Got ${v}`);
      }
      d.metricsConfig.set(setting, value);
    },
  },
  {
    name: 'allow-client-shm',
    kind: 'bool',
    defaultText: 'false',
    help: 'Let clients register, unregister and use system shared-memory regions (/dev/shm objects) for inference inputs and outputs.',
    apply: (d, v) => (d.allowClientShm = parseBool('allow-client-shm', v)),
  },
  {
    name: 'log-verbose',
    kind: 'int-or-bool',
    defaultText: '0',
    help: 'Verbose logging level (0 = off); true and false mean 1 and 0, as in Triton.',
    apply: (d, v) => (d.logVerbose = parseIntOrBool('log-verbose', v, 0)),
  },
  {
    name: 'log-info',
    kind: 'bool',
    defaultText: 'true',
    help: 'Log info messages.',
    apply: (d, v) => (d.logInfo = parseBool('log-info', v)),
  },
  {
    name: 'log-warning',
    kind: 'bool',
    defaultText: 'true',
    help: 'Log warnings.',
    apply: (d, v) => (d.logWarning = parseBool('log-warning', v)),
  },
  {
    name: 'log-error',
    kind: 'bool',
    defaultText: 'true',
    help: 'Log errors.',
    apply: (d, v) => (d.logError = parseBool('log-error', v)),
  },
  {
    name: 'log-format',
    kind: 'string',
    defaultText: 'default',
    help: "Log line format: 'default' or 'ISO8601'.",
    apply: (d, v) => {
      if (v !== 'default' && v !== 'ISO8601')
        throw invalidArg(`--log-format must be default or ISO8601, got '${v}'`);
      d.logFormat = v;
    },
  },
  {
    name: 'log-file',
    kind: 'string',
    help: 'Write the log to this file instead of stderr.',
    apply: (d, v) => (d.logFile = v),
  },
  {
    name: 'rate-limit',
    kind: 'string',
    defaultText: 'off',
    help: "Rate limiting: 'off' runs a batch as soon as an instance is free; 'execution_count' also waits for the resources in the instance group's rate_limiter config, and favours instances with fewer executions × priority.",
    apply: (d, v) => {
      const mode = v.toLowerCase();
      if (mode !== 'off' && mode !== 'execution_count') throw invalidArg('invalid argument for --rate-limit');
      d.rateLimit = mode;
    },
  },
  {
    name: 'rate-limit-resource',
    kind: 'list',
    help: "Count of a rate-limiter resource, '<name>:<count>[:<device>]'; repeat for several. Without a device it applies to every device; global resources take the largest count given. Default: the largest count any loaded instance needs (once any is given, resources not given have none).",
    apply: (d, v) => d.rateLimitResources.push(parseRateLimitResource(v)),
  },
  // Flags of Triton's parser (test/fixtures/tritonserver-flags.tsv lists them all) that cannot apply to this
  // server, or are not built yet: accepted, their values checked as Triton checks them, and each one given
  // on a command line gets one start-up warning saying why it changes nothing and what Nereid does instead.
  {
    name: 'model-load-retry-count',
    kind: 'int',
    help: 'Times to retry a model load that failed.',
    inert:
      'not implemented yet; a failed load is reported at once (load it again through the repository API)',
  },
  {
    name: 'model-namespacing',
    kind: 'bool',
    help: "Serve models with the same name from different repositories (Triton's namespacing).",
    inert: 'not implemented; a model name found in two repositories fails to load, as without namespacing',
  },
  {
    name: 'enable-peer-access',
    kind: 'bool',
    help: 'CUDA peer access between GPUs.',
    inert: 'no GPU support in this build',
  },
  {
    name: 'reuse-http-port',
    kind: 'bool',
    help: 'SO_REUSEPORT on the HTTP port.',
    inert: 'Node cannot set SO_REUSEPORT here; run one Nereid per port (or several behind a load balancer)',
  },
  {
    name: 'http-thread-count',
    kind: 'int',
    help: "Triton's HTTP handler thread count.",
    inert: 'Nereid serves HTTP on its event loop and runs models off it; there are no HTTP threads to size',
  },
  {
    name: 'http-header-forward-pattern',
    kind: 'string',
    help: 'Regular expression of HTTP headers forwarded to models as request parameters.',
    inert: 'not implemented yet; headers are not forwarded',
  },
  {
    name: 'http-restricted-api',
    kind: 'list',
    help: "Restrict HTTP API categories to requests carrying a header: '<category>,...:<key>=<value>'.",
    inert: 'not implemented yet; every API is open',
  },
  {
    name: 'reuse-grpc-port',
    kind: 'bool',
    help: 'SO_REUSEPORT on the gRPC port.',
    inert: 'Node cannot set SO_REUSEPORT here; run one Nereid per port (or several behind a load balancer)',
  },
  {
    name: 'grpc-header-forward-pattern',
    kind: 'string',
    help: 'Regular expression of gRPC metadata keys forwarded to models as request parameters.',
    inert: 'not implemented yet; metadata is not forwarded',
  },
  {
    name: 'grpc-infer-thread-count',
    kind: 'int',
    help: "Triton's gRPC inference handler thread count.",
    inert: 'Nereid serves gRPC on its event loop and runs models off it; there are no gRPC threads to size',
  },
  {
    name: 'grpc-infer-allocation-pool-size',
    kind: 'int',
    help: "Triton's pool of reusable gRPC inference request states.",
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-max-response-pool-size',
    kind: 'int',
    help: "Triton's bound on gRPC inference response objects held at once.",
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-use-ssl',
    kind: 'bool',
    help: 'Serve gRPC over TLS.',
    inert: 'not implemented yet; gRPC is served in clear text',
  },
  {
    name: 'grpc-use-ssl-mutual',
    kind: 'bool',
    help: 'Serve gRPC over TLS and require client certificates.',
    inert: 'not implemented yet; gRPC is served in clear text',
  },
  {
    name: 'grpc-server-cert',
    kind: 'string',
    help: 'PEM server certificate for gRPC TLS.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-server-key',
    kind: 'string',
    help: 'PEM server key for gRPC TLS.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-root-cert',
    kind: 'string',
    help: 'PEM root certificate for gRPC mutual TLS.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-infer-response-compression-level',
    kind: 'string',
    help: "Compression of gRPC inference responses: 'none', 'low', 'med' or 'high'.",
    inert: 'not implemented yet; responses are not compressed',
  },
  {
    name: 'grpc-keepalive-time',
    kind: 'int',
    help: 'Milliseconds between keepalive pings.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-keepalive-timeout',
    kind: 'int',
    help: 'Milliseconds to wait for a keepalive ping acknowledgement.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-keepalive-permit-without-calls',
    kind: 'bool',
    help: 'Allow keepalive pings without calls in flight.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-http2-max-pings-without-data',
    kind: 'int',
    help: 'Pings allowed without data in between.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-http2-min-recv-ping-interval-without-data',
    kind: 'int',
    help: 'Least milliseconds between pings received without data.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-http2-max-ping-strikes',
    kind: 'int',
    help: 'Bad pings tolerated before the connection is closed.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-max-connection-age',
    kind: 'int',
    help: 'Milliseconds a connection may live.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-max-connection-age-grace',
    kind: 'int',
    help: 'Milliseconds calls may finish after the maximum connection age.',
    inert: 'not implemented yet',
  },
  {
    name: 'grpc-restricted-protocol',
    kind: 'list',
    help: "Restrict gRPC protocol categories to calls carrying a metadata key: '<category>,...:<key>=<value>'.",
    inert: 'not implemented yet; every rpc is open',
  },
  {
    name: 'allow-sagemaker',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve the SageMaker endpoint.',
    inert: 'no SageMaker endpoint in this build; use the KServe v2 HTTP endpoint',
  },
  {
    name: 'sagemaker-port',
    kind: 'int',
    help: 'SageMaker port.',
    inert: 'no SageMaker endpoint in this build',
  },
  {
    name: 'sagemaker-safe-port-range',
    kind: 'string',
    help: 'Ports other endpoints may use beside SageMaker.',
    inert: 'no SageMaker endpoint in this build',
  },
  {
    name: 'sagemaker-thread-count',
    kind: 'int',
    help: 'SageMaker handler threads.',
    inert: 'no SageMaker endpoint in this build',
  },
  {
    name: 'allow-vertex-ai',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve the Vertex AI endpoint.',
    inert: 'no Vertex AI endpoint in this build; use the KServe v2 HTTP endpoint',
  },
  {
    name: 'vertex-ai-port',
    kind: 'int',
    help: 'Vertex AI port.',
    inert: 'no Vertex AI endpoint in this build',
  },
  {
    name: 'vertex-ai-thread-count',
    kind: 'int',
    help: 'Vertex AI handler threads.',
    inert: 'no Vertex AI endpoint in this build',
  },
  {
    name: 'vertex-ai-default-model',
    kind: 'string',
    help: 'Model for single-model Vertex AI requests.',
    inert: 'no Vertex AI endpoint in this build',
  },
  {
    name: 'allow-cpu-metrics',
    kind: 'bool',
    defaultText: 'true',
    help: 'Report host CPU utilization and memory (nv_cpu_*) on the metrics endpoint.',
    apply: (d, v) => (d.allowCpuMetrics = parseBool('allow-cpu-metrics', v)),
  },
  {
    name: 'allow-gpu-metrics',
    kind: 'bool',
    help: 'Report GPU metrics.',
    inert: 'no GPU support in this build; CPU metrics are reported (--allow-cpu-metrics)',
  },
  {
    name: 'trace-config',
    kind: 'list',
    help: "Trace setting '[<mode>,]<setting>=<value>' (mode triton or opentelemetry).",
    inert: 'not implemented yet; nothing is traced (the trace settings API still answers)',
  },
  {
    name: 'trace-file',
    kind: 'string',
    help: 'Deprecated: --trace-config triton,file=<path>.',
    inert: 'not implemented yet; nothing is traced',
  },
  {
    name: 'trace-level',
    kind: 'list',
    help: 'Deprecated: --trace-config level=<OFF|TIMESTAMPS|TENSORS>.',
    inert: 'not implemented yet; nothing is traced',
  },
  {
    name: 'trace-rate',
    kind: 'int',
    help: 'Deprecated: --trace-config rate=<n>.',
    inert: 'not implemented yet; nothing is traced',
  },
  {
    name: 'trace-count',
    kind: 'int',
    help: 'Deprecated: --trace-config count=<n>.',
    inert: 'not implemented yet; nothing is traced',
  },
  {
    name: 'trace-log-frequency',
    kind: 'int',
    help: 'Deprecated: --trace-config triton,log-frequency=<n>.',
    inert: 'not implemented yet; nothing is traced',
  },
  {
    name: 'cache-config',
    kind: 'list',
    help: "Response cache setting '<cache>,<key>=<value>' (local,size=<bytes> or redis,...).",
    inert: 'not implemented yet; responses are not cached',
  },
  {
    name: 'cache-directory',
    kind: 'string',
    help: 'Where Triton looks for cache libraries.',
    inert: 'caches are built into Nereid',
  },
  {
    name: 'response-cache-byte-size',
    kind: 'int',
    help: 'Deprecated: --cache-config local,size=<bytes>.',
    inert: 'not implemented yet; responses are not cached',
  },
  {
    name: 'pinned-memory-pool-byte-size',
    kind: 'int',
    help: 'Pinned host memory for GPU copies.',
    inert: 'no GPU support in this build',
  },
  {
    name: 'cuda-memory-pool-byte-size',
    kind: 'list',
    help: "CUDA memory pool '<device>:<bytes>'.",
    inert: 'no GPU support in this build',
  },
  {
    name: 'cuda-virtual-address-size',
    kind: 'list',
    help: "CUDA virtual address space '<device>:<bytes>'.",
    inert: 'no GPU support in this build',
  },
  {
    name: 'min-supported-compute-capability',
    kind: 'float',
    help: 'Least CUDA compute capability of a GPU to use.',
    inert: 'no GPU support in this build',
  },
  {
    name: 'buffer-manager-thread-count',
    kind: 'int',
    help: "Threads of Triton's buffer manager.",
    inert: 'Nereid has no buffer manager threads',
  },
  {
    name: 'host-policy',
    kind: 'list',
    help: "Host policy '<name>,<key>=<value>' (NUMA node, CPU cores).",
    inert: 'Nereid does not pin models to NUMA nodes or cores',
  },
  {
    name: 'model-load-gpu-limit',
    kind: 'list',
    help: "GPU memory fraction '<device>:<fraction>' for model loading.",
    inert: 'no GPU support in this build',
  },
  {
    name: 'backend-directory',
    kind: 'string',
    help: 'Where Triton looks for backend libraries.',
    inert: 'Nereid backends are built in',
  },
  {
    name: 'repoagent-directory',
    kind: 'string',
    help: 'Where Triton looks for repository agent libraries.',
    inert: 'Nereid has no repository agents',
  },
];

const BY_NAME = new Map<string, Flag>();
for (const f of FLAGS) {
  BY_NAME.set(f.name, f);
  for (const a of f.aliases ?? []) BY_NAME.set(a, f);
}

export function defaultDraft(): Draft {
  return {
    id: 'triton',
    modelRepositories: [],
    repositoryDownloadConcurrency: 8,
    repositoryMaxObjectBytes: 64 * 1024 ** 3,
    repositoryMaxListEntries: 100_000,
    repositoryRequestTimeoutSecs: 60,
    cloudStorage: {},
    modelControlMode: 'none',
    repositoryPollSecs: 15,
    loadModels: [],
    modelConfigName: '',
    strictReadiness: true,
    modelReadinessPollMs: 5000,
    modelReadinessTimeoutMs: 5000,
    exitOnError: true,
    exitTimeoutSecs: 30,
    exitDelaySecs: 0,
    disableAutoCompleteConfig: false,
    strictGpuKind: false,
    modelLoadThreadCount: 4,
    backendConfig: new Map(),
    allowHttp: true,
    httpAddress: '0.0.0.0',
    httpPort: 8000,
    httpMaxInputSize: 64 * 1024 * 1024,
    allowGrpc: true,
    grpcAddress: '0.0.0.0',
    grpcPort: 8001,
    allowMetrics: true,
    metricsAddress: '',
    metricsPort: 8002,
    metricsIntervalMs: 2000,
    metricsConfig: new Map(),
    allowCpuMetrics: true,
    allowClientShm: false,
    logVerbose: 0,
    logInfo: true,
    logWarning: true,
    logError: true,
    logFormat: 'default',
    logFile: '',
    rateLimit: 'off',
    rateLimitResources: [],
  };
}

export interface ParsedCommandLine {
  readonly options: ServerOptions;
  readonly help: boolean;
  readonly version: boolean;
  /** Flags accepted for compatibility that have no effect here. */
  readonly ignored: readonly string[];
  /** One start-up warning per inert flag given: why it changes nothing and what Nereid does instead. */
  readonly warnings: readonly string[];
}

/** Parses `--flag=value`, `--flag value` and bare boolean `--flag` forms. Throws INVALID_ARG. */
export function parseFlags(argv: readonly string[]): ParsedCommandLine {
  const d = defaultDraft();
  const ignored: string[] = [];
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (arg === '--version') {
      version = true;
      continue;
    }
    if (!arg.startsWith('--')) throw invalidArg(`unexpected argument '${arg}'`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    const flag = BY_NAME.get(name);
    if (!flag) throw invalidArg(`unrecognized option '--${name}' (see --help)`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (flag.kind === 'bool' && (i + 1 >= argv.length || argv[i + 1].startsWith('--'))) value = 'true';
    else if (i + 1 < argv.length) value = argv[++i];
    else throw invalidArg(`option '--${name}' requires a value`);
    if (flag.apply) {
      flag.apply(d, value);
    } else {
      checkValue(flag, value);
      if (!ignored.includes(`--${flag.name}`)) ignored.push(`--${flag.name}`);
    }
  }
  const warnings = ignored.map(
    (f) =>
      `${f} is accepted for compatibility and changes nothing: ${BY_NAME.get(f.slice(2))?.inert ?? 'no effect here'}`,
  );
  if (!help && !version) validate(d);
  if (!d.metricsAddress) d.metricsAddress = d.allowHttp ? d.httpAddress : '0.0.0.0';
  const options: ServerOptions = Object.freeze({
    ...d,
    modelRepositories: Object.freeze([...d.modelRepositories]),
    loadModels: Object.freeze([...d.loadModels]),
    rateLimitResources: Object.freeze(d.rateLimitResources.map((r) => Object.freeze(r))),
    backendConfig: d.backendConfig,
  });
  return { options, help, version, ignored, warnings };
}

function validate(d: Draft): void {
  if (d.modelRepositories.length === 0) throw invalidArg('--model-repository must be specified');
  if (d.loadModels.length > 0 && d.modelControlMode !== 'explicit') {
    throw invalidArg('--load-model can only be used with --model-control-mode=explicit');
  }
  if (d.loadModels.includes('*') && d.loadModels.length > 1) {
    throw invalidArg("Wildcard model name '*' must be the ONLY startup model if specified at all.");
  }
}

const ARG_NAMES: Readonly<Record<Kind, string>> = {
  string: 'string',
  int: 'int',
  float: 'number',
  bool: 'bool',
  'int-or-bool': 'int|bool',
  list: 'string',
};

/** --help text, generated from the table. */
export function helpText(): string {
  const lines = ['Usage: nereid [options]', '', 'Options (tritonserver-compatible):'];
  for (const f of FLAGS) {
    const arg = `=<${ARG_NAMES[f.kind]}>`;
    const def = f.defaultText !== undefined ? ` (default: ${f.defaultText})` : '';
    const names = [f.name, ...(f.aliases ?? [])].map((n) => `--${n}${arg}`).join(', ');
    lines.push(`  ${names}`);
    lines.push(`      ${f.help}${def}${f.apply ? '' : ` [accepted, no effect: ${f.inert ?? ''}]`}`);
  }
  return lines.join('\n');
}
