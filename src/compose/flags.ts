/**
 * The table of `tritonserver` flags Nereid understands. Each row names the flag, its argument kind, its
 * default and help text, and how it sets ServerOptions; parseFlags() turns argv into frozen ServerOptions
 * and --help is printed from the same table (docs/configuration.md is generated from it as well).
 * Flags Triton has that change nothing on this server (GPU pools, thread counts of Triton's own HTTP
 * library...) are accepted with a warning, so existing command lines keep working.
 */
import { invalidArg } from '../common/errors.js';
import { isLogFormat } from '../common/logger.js';
import { nearestName } from '../common/nearest-name.js';

export { editDistance } from '../common/nearest-name.js';
import {
  type CacheSetting,
  defaultInstanceLimits,
  isObjectStoreUrl,
  parseCacheSetting,
  parseSize,
  resolveCacheConfig,
} from '../core/assembly.js';
import { parseCompressionLevel } from '../frontends/grpc/transport/compression.js';
import { compileForwardPattern } from '../frontends/header-forward.js';
import type { RateLimitResourceOption, ServerOptions } from './options.js';
import { parseRestrictedOption, restrictionWarnings, type RestrictionDraft } from './restricted-flags.js';
import {
  buildTraceOptions,
  emptyTraceDraft,
  parseTraceConfig,
  traceWarnings,
  type TraceDraft,
} from './trace-flags.js';

/**
 * How a flag's value is read. 'int-or-bool': an integer, or true/false for 1/0 (Triton's log-verbose);
 * 'list': the flag may repeat, each occurrence one string.
 */
type Kind = 'string' | 'int' | 'float' | 'bool' | 'int-or-bool' | 'list';
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Draft = Mutable<
  Omit<
    ServerOptions,
    | 'backendConfig'
    | 'backendDirectories'
    | 'modelRepositories'
    | 'loadModels'
    | 'metricsConfig'
    | 'rateLimitResources'
    | 'responseCache'
    | 'httpRestrictedApis'
    | 'grpcRestrictedProtocols'
    | 'trace'
  >
> & {
  traceDraft: TraceDraft;
  httpRestrictedApis: RestrictionDraft;
  grpcRestrictedProtocols: RestrictionDraft;
  rateLimitResources: RateLimitResourceOption[];
  backendConfig: Map<string, Map<string, string>>;
  backendDirectories: string[];
  metricsConfig: Map<string, string>;
  modelRepositories: string[];
  loadModels: string[];
  /** --cache-config occurrences in order, and --response-cache-byte-size; resolved into responseCache. */
  cacheSettings: CacheSetting[];
  responseCacheByteSize: string | undefined;
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
  /** For an inert flag: checks its value as Triton's parser does (instead of by kind alone). */
  readonly check?: (value: string) => void;
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
    help: 'none: load every model at start; poll: also rescan the repositories; explicit: load only --load-model and API requests; on-demand (Nereid only): load a model on its first request and unload the least recently used idle ones to stay within --max-loaded-models and --model-memory-budget (--load-model ones are pinned).',
    apply: (d, v) => {
      if (v !== 'none' && v !== 'poll' && v !== 'explicit' && v !== 'on-demand') {
        throw invalidArg(`--model-control-mode must be none, poll, explicit or on-demand, got '${v}'`);
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
    name: 'watch',
    kind: 'bool',
    defaultText: 'false',
    help: 'Development: watch the local model repositories and reload a model as soon as its files change (poll mode driven by file events; implies --model-control-mode=poll and, unless given, --exit-on-error=false). A model that fails to load keeps its last good version serving and is retried only when its files change again. Not for object-store repositories. Nereid only.',
    apply: (d, v) => (d.watch = parseBool('watch', v)),
  },
  {
    name: 'watch-max-directories',
    kind: 'int',
    defaultText: '1024',
    help: 'The most folders --watch watches (repository roots and model folders first); changes in the others are seen by the periodic poll only. Nereid only.',
    apply: (d, v) => (d.watchMaxDirectories = parseInt10('watch-max-directories', v, 1, 1_000_000)),
  },
  {
    name: 'load-model',
    kind: 'list',
    help: "Model to load at start in explicit mode (in on-demand mode: loaded at start and pinned, never unloaded to make room); repeat for several; '*' loads all (explicit mode).",
    apply: (d, v) => d.loadModels.push(v),
  },
  {
    name: 'max-loaded-models',
    kind: 'int',
    defaultText: '0',
    help: 'On-demand mode: the most models loaded at once (pinned ones count); a load beyond it first unloads the least recently used idle model. 0 = no limit. Nereid only.',
    apply: (d, v) => (d.maxLoadedModels = parseInt10('max-loaded-models', v, 0)),
  },
  {
    name: 'model-memory-budget',
    kind: 'string',
    defaultText: '0',
    help: "On-demand mode: the most memory loaded models may hold, measured per model (its Python stubs' RSS, or the server's RSS growth across its load): bytes, or a size such as 512MB, 2GB, 1.5GiB. A load that would pass it first unloads the least recently used idle models. 0 = no budget. Nereid only.",
    apply: (d, v) => {
      const n = parseSize(v);
      if (n === undefined) {
        throw invalidArg(
          `--model-memory-budget must be a size such as 512MB, 2GB or a number of bytes, got '${v}'`,
        );
      }
      d.modelMemoryBudget = n;
    },
  },
  {
    name: 'model-load-wait-secs',
    kind: 'int',
    defaultText: '60',
    help: "On-demand mode: the longest a request waits for its model to load (or for room to load it); then it fails with UNAVAILABLE (HTTP 503) and the load goes on. The wait counts as the request's queue time. 0 = no limit. Nereid only.",
    apply: (d, v) => (d.modelLoadWaitSecs = parseInt10('model-load-wait-secs', v, 0, 86400)),
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
    name: 'strict-model-outputs',
    kind: 'bool',
    defaultText: 'false',
    help: "What happens when a model returns an output its config does not declare, (not decoupled) leaves out an output the request asked for, or returns one with another datatype or shape than its config's. false: the response goes out as Triton sends it (without the undeclared or missing output; the other datatype or shape as the model made it) and a warning is logged the first time per model version and output. true: the request fails with INTERNAL (500), as a model's other mistakes do. Named after Triton's --strict-model-config and --strict-readiness; Triton itself has no such check. Nereid only.",
    apply: (d, v) => (d.strictModelOutputs = parseBool('strict-model-outputs', v)),
  },
  {
    name: 'load-error-status',
    kind: 'string',
    defaultText: 'triton',
    help: "The status of a load request refused before any model loads: a config override that is not JSON, a bad file: parameter, a model no repository has. 'triton': INTERNAL (HTTP 500), Triton's answer, which its client examples and QA tests check. 'client-error': the client's mistake as such, INVALID_ARG (400) or NOT_FOUND (404) (docs/from-triton.md). Nereid only.",
    apply: (d, v) => {
      if (v !== 'triton' && v !== 'client-error')
        throw invalidArg(`--load-error-status must be triton or client-error, got '${v}'`);
      d.loadErrorStatus = v;
    },
  },
  {
    name: 'model-load-thread-count',
    kind: 'int',
    defaultText: '4',
    help: 'Models loaded in parallel.',
    apply: (d, v) => (d.modelLoadThreadCount = parseInt10('model-load-thread-count', v, 1)),
  },
  {
    name: 'max-instances-per-model',
    kind: 'int',
    defaultText: 'max(32, 4 × CPUs)',
    help: 'Most instances one model may have across the versions it loads (each instance_group count, for every version); a load asking for more is refused with INVALID_ARG before any instance starts. Nereid only.',
    apply: (d, v) => (d.maxInstancesPerModel = parseInt10('max-instances-per-model', v, 1)),
  },
  {
    name: 'max-instances',
    kind: 'int',
    defaultText: 'max(128, memory / 32 MiB)',
    help: 'Most instances of every loaded model together; while a reload swaps versions, the old and the new ones both count. A load that would exceed it is refused with INVALID_ARG. Nereid only.',
    apply: (d, v) => (d.maxInstances = parseInt10('max-instances', v, 1)),
  },
  {
    name: 'max-process-instances-per-model',
    kind: 'int',
    defaultText: 'max(16, 2 × CPUs)',
    help: 'Most instances one model may have when each is a process of its own (Python stubs). Nereid only.',
    apply: (d, v) => (d.maxProcessInstancesPerModel = parseInt10('max-process-instances-per-model', v, 1)),
  },
  {
    name: 'max-process-instances',
    kind: 'int',
    defaultText: 'max(64, memory / 128 MiB)',
    help: 'Most process-backed instances (Python stubs) of every loaded model together. Nereid only.',
    apply: (d, v) => (d.maxProcessInstances = parseInt10('max-process-instances', v, 1)),
  },
  {
    name: 'model-unload-timeout-secs',
    kind: 'int',
    defaultText: '30',
    help: 'Seconds an unloading model version (an unload, the old version of a reload, shutdown) waits for its accepted requests; then the rest fail with UNAVAILABLE and its instances are stopped, so a hung model cannot block an unload. 0 = wait as long as they take. Nereid only.',
    apply: (d, v) => (d.modelUnloadTimeoutSecs = parseInt10('model-unload-timeout-secs', v, 0)),
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
    name: 'backend-directory',
    kind: 'list',
    help: "A folder of Python-based backends: a model with backend 'NAME' that is not built in runs <folder>/NAME/model.py (docs/backends.md). Repeat for several, searched in order, then Nereid's own backends (python/backends: fil, ...). Triton's folder of backend libraries: its native libraries are not loaded.",
    apply: (d, v) => d.backendDirectories.push(v),
  },
  {
    name: 'backend-venv-directory',
    kind: 'string',
    defaultText: '$NEREID_BACKEND_VENVS, else .cache/backends in a checkout, else ~/.cache/nereid/backends',
    help: "Where the Python-based backends' venvs are (made by 'npx nereid backends install NAME', one per backend and requirements.txt). Nereid only.",
    apply: (d, v) => (d.backendVenvDirectory = v),
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
  // TLS on the HTTP port is Nereid's own (Triton has none and suggests a proxy); the flags mirror the gRPC ones.
  {
    name: 'http-use-ssl',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve HTTPS on the HTTP port with --http-server-cert and --http-server-key. Nereid only (Triton has no TLS on HTTP); docs/security.md#tls.',
    apply: (d, v) => (d.httpUseSsl = parseBool('http-use-ssl', v)),
  },
  {
    name: 'http-use-ssl-mutual',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve HTTPS and require client certificates signed by --http-root-cert. Giving it at all, even =false, turns HTTPS on, as --grpc-use-ssl-mutual does in Triton. Nereid only.',
    apply: (d, v) => {
      d.httpUseSslMutual = parseBool('http-use-ssl-mutual', v);
      d.httpUseSsl = true;
    },
  },
  {
    name: 'http-server-cert',
    kind: 'string',
    help: 'PEM file of the HTTPS server certificate (its own first, then intermediates); re-read on SIGHUP and when it changes. Nereid only.',
    apply: (d, v) => (d.httpServerCert = v),
  },
  {
    name: 'http-server-key',
    kind: 'string',
    help: 'PEM file of the HTTPS server key (unencrypted). Nereid only.',
    apply: (d, v) => (d.httpServerKey = v),
  },
  {
    name: 'http-root-cert',
    kind: 'string',
    help: 'PEM file of the CA certificate(s) that sign client certificates, for --http-use-ssl-mutual. Nereid only.',
    apply: (d, v) => (d.httpRootCert = v),
  },
  {
    name: 'http-max-json-size',
    kind: 'int',
    defaultText: '67108864',
    help: "Largest JSON document in an HTTP request (an inference request's JSON part, or a whole JSON body); a larger one gets 400, from its declared size before the body is read when it can be. Send large tensors as binary data. Nereid only.",
    apply: (d, v) => (d.httpMaxJsonSize = parseInt10('http-max-json-size', v, 1)),
  },
  {
    name: 'http-json-worker-threshold',
    kind: 'int',
    defaultText: '65536',
    help: 'JSON documents of this many bytes or more are parsed on worker threads, off the event loop (smaller ones are parsed in place, where a thread hop would cost more than it saves). Nereid only.',
    apply: (d, v) => (d.httpJsonWorkerThreshold = parseInt10('http-json-worker-threshold', v, 0)),
  },
  {
    name: 'http-json-worker-threads',
    kind: 'int',
    defaultText: '1',
    help: 'Threads parsing large JSON documents (started when needed, stopped after 30 s idle). A document whose parse could need more than 16 × --http-max-json-size of memory (many arrays or objects) is refused with 400 before it is parsed. 0 parses every document on the event loop. Nereid only.',
    apply: (d, v) => (d.httpJsonWorkerThreads = parseInt10('http-json-worker-threads', v, 0, 256)),
  },
  {
    name: 'http-json-worker-bytes',
    kind: 'int',
    defaultText: '268435456',
    help: 'Total size of the large JSON documents in flight at once (being received, waiting for a thread or being parsed); charged with the bytes that arrived (not the declared length), the request whose bytes would pass it is refused with 503 and its connection closed (one document is always admitted). Nereid only.',
    apply: (d, v) => (d.httpJsonWorkerBytes = parseInt10('http-json-worker-bytes', v, 1)),
  },
  {
    name: 'http-backlog',
    kind: 'int',
    defaultText: '4096',
    help: "The HTTP port's listen queue (connections the kernel has accepted and the server has not yet taken); the kernel caps it at net.core.somaxconn, and a start-up warning says so when that is lower. Nereid only.",
    apply: (d, v) => (d.httpBacklog = parseInt10('http-backlog', v, 1, 2 ** 31 - 1)),
  },
  {
    name: 'http-max-connections',
    kind: 'int',
    defaultText: '8192',
    help: 'HTTP connections held open at once; requests on a connection over the limit get 503 with Connection: close (health checks are still answered). 0 = no limit. Nereid only.',
    apply: (d, v) => (d.httpMaxConnections = parseInt10('http-max-connections', v, 0)),
  },
  {
    name: 'http-max-connections-per-address',
    kind: 'int',
    defaultText: '2048',
    help: 'HTTP connections one client address (an IPv4 address, or an IPv6 /64) may hold open at once, so one address cannot take the whole --http-max-connections; requests on a connection over it get 503 with Connection: close (health checks are still answered). Clients behind one proxy share its address: raise it for such a proxy. 0 = no limit. Nereid only.',
    apply: (d, v) => (d.httpMaxConnectionsPerAddress = parseInt10('http-max-connections-per-address', v, 0)),
  },
  {
    name: 'http-health-port',
    kind: 'int',
    defaultText: 'off',
    help: 'Also serve GET /v2/health/live and /v2/health/ready on this port (at --http-address), from a thread of their own: probes there are answered at once however loaded the HTTP port is. 0 picks a free port. Nereid only.',
    apply: (d, v) => (d.httpHealthPort = port('http-health-port', v)),
  },
  {
    name: 'allow-dashboard',
    kind: 'bool',
    defaultText: 'true',
    help: "Serve the operator's web dashboard at /dashboard/ on the HTTP port (docs/dashboard.md); false answers 404 there. Its restricted-API category is 'dashboard' (--http-restricted-api). Nereid only.",
    apply: (d, v) => (d.allowDashboard = parseBool('allow-dashboard', v)),
  },
  {
    name: 'allow-openai',
    kind: 'bool',
    defaultText: 'true',
    help: 'Serve the OpenAI-compatible API (GET /v1/models, POST /v1/completions, /v1/chat/completions, /v1/embeddings; docs/openai.md), on the HTTP port unless --openai-port moves it. Guarded by the restricted-API category openai. Nereid only (Triton serves it from a separate Python frontend).',
    apply: (d, v) => (d.allowOpenai = parseBool('allow-openai', v)),
  },
  {
    name: 'openai-port',
    kind: 'int',
    defaultText: 'the HTTP port',
    help: "Serve the OpenAI-compatible API on this port of its own (at --http-address, with the HTTP port's TLS settings) instead of on the HTTP port. 0 picks a free port. Nereid only.",
    apply: (d, v) => (d.openaiPort = port('openai-port', v)),
  },
  {
    name: 'openai-default-max-tokens',
    kind: 'int',
    defaultText: '16',
    help: "max_tokens for an OpenAI completion or chat request that sets neither max_tokens nor max_completion_tokens (Triton's OpenAI frontend default). Nereid only.",
    apply: (d, v) => (d.openaiDefaultMaxTokens = parseInt10('openai-default-max-tokens', v, 1, 2 ** 31 - 1)),
  },
  {
    name: 'openai-max-buffered-bytes',
    kind: 'int',
    defaultText: '4194304',
    help: 'Bytes of one streamed (SSE) OpenAI reply that the client has not read yet; a reader that falls further behind has its stream cut and its request cancelled, so a slow client holds bounded memory. Nereid only.',
    apply: (d, v) => (d.openaiMaxBufferedBytes = parseInt10('openai-max-buffered-bytes', v, 1024)),
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
    name: 'grpc-use-ssl',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve gRPC over TLS with --grpc-server-cert and --grpc-server-key; docs/security.md#tls.',
    apply: (d, v) => (d.grpcUseSsl = parseBool('grpc-use-ssl', v)),
  },
  {
    name: 'grpc-use-ssl-mutual',
    kind: 'bool',
    defaultText: 'false',
    help: 'Serve gRPC over TLS and require client certificates signed by --grpc-root-cert. As in Triton, giving it at all (even =false) turns TLS on.',
    apply: (d, v) => {
      d.grpcUseSslMutual = parseBool('grpc-use-ssl-mutual', v);
      d.grpcUseSsl = true;
    },
  },
  {
    name: 'grpc-server-cert',
    kind: 'string',
    help: 'PEM file of the gRPC server certificate (its own first, then intermediates); re-read on SIGHUP and when it changes.',
    apply: (d, v) => (d.grpcServerCert = v),
  },
  {
    name: 'grpc-server-key',
    kind: 'string',
    help: 'PEM file of the gRPC server key (unencrypted).',
    apply: (d, v) => (d.grpcServerKey = v),
  },
  {
    name: 'grpc-root-cert',
    kind: 'string',
    help: 'PEM file of the CA certificate(s) that sign client certificates; used with --grpc-use-ssl-mutual only, as in Triton.',
    apply: (d, v) => (d.grpcRootCert = v),
  },
  {
    name: 'tls-cert-poll-ms',
    kind: 'int',
    defaultText: '2000',
    help: 'Milliseconds between looks at the TLS certificate and key files; new contents seen twice in a row are served to new connections. 0 = only on SIGHUP. Nereid only.',
    apply: (d, v) => (d.tlsCertPollMs = parseInt10('tls-cert-poll-ms', v, 0)),
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
    help: "Log line format: 'default' (Triton's `I1201 18:46:09.714123 <pid> <file>:<line>] \"msg\"`, UTC), 'ISO8601' (`2026-12-01T18:46:09Z I <pid> <file>:<line>] \"msg\"`) or 'json' (a Nereid addition: one JSON object a line with time, severity, pid, file, line and message). Messages are JSON-escaped as in Triton unless TRITON_SERVER_ESCAPE_LOG_MESSAGES=0.",
    apply: (d, v) => {
      if (!isLogFormat(v)) throw invalidArg(`--log-format must be default, ISO8601 or json, got '${v}'`);
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
    defaultText: '0',
    help: 'Threads doing the HTTP protocol work (framing, reading and decoding inference requests, encoding and compressing answers), each with a listener of its own on the HTTP port (SO_REUSEPORT); the models still run on the one core. Needs Node 22.12+ (or 23.1+) on Linux and clear-text HTTP; elsewhere it is ignored with a warning. 0 (the default) serves HTTP on the main thread.',
    apply: (d, v) => (d.httpThreadCount = parseInt10('http-thread-count', v, 0, 256)),
  },
  {
    name: 'http-header-forward-pattern',
    kind: 'string',
    help: "HTTP headers whose name matches this RE2 regular expression (anywhere in the name; case-insensitive unless it starts with '(?-i)') reach models as string request parameters, on /infer. Names the server consumes (sequence_id, priority, timeout, triton_*...) are never forwarded. Default: none.",
    apply: (d, v) => {
      compileForwardPattern('http-header-forward-pattern', v);
      d.httpHeaderForwardPattern = v;
    },
  },
  {
    name: 'http-restricted-api',
    kind: 'list',
    help: "Requests to these HTTP API categories must carry header <key> with exactly <value>, or get 403: '<category>[,<category>...]:<key>=<value>'; repeat for groups with other keys, a category in one group only. Categories: health, metadata, inference, shared-memory, model-config, model-repository, statistics, trace, logging, and Nereid's own dashboard and openai (the /v1 API, docs/openai.md) (docs/security.md). Default: every API open.",
    apply: (d, v) => parseRestrictedOption(v, 'http-restricted-api', d.httpRestrictedApis),
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
    help: 'gRPC metadata whose key matches this RE2 regular expression (as --http-header-forward-pattern) reaches models as string request parameters, on ModelInfer and ModelStreamInfer. Default: none.',
    apply: (d, v) => {
      compileForwardPattern('grpc-header-forward-pattern', v);
      d.grpcHeaderForwardPattern = v;
    },
  },
  {
    name: 'grpc-infer-thread-count',
    kind: 'int',
    defaultText: 'off',
    help: 'Threads doing the gRPC protocol work of ModelInfer (HTTP/2, gRPC framing, decoding and checking the request, encoding and compressing the answer), each with a listener of its own on the gRPC port (SO_REUSEPORT); the models still run on the one core, and every other rpc and ModelStreamInfer is passed on to the main thread. 1 to 128 (Triton sizes its inference handler threads with it and accepts 2 to 128, default 2). Needs Node 22.12+ (or 23.1+) on Linux and clear-text gRPC; elsewhere it is ignored with a warning. Not given (the default): gRPC is served on the main thread.',
    apply: (d, v) => (d.grpcInferThreadCount = parseInt10('grpc-infer-thread-count', v, 1, 128)),
  },
  {
    name: 'grpc-infer-allocation-pool-size',
    kind: 'int',
    help: "Triton's pool of reusable gRPC inference request/response states.",
    inert:
      'Nereid keeps no per-rpc state objects to pool: a call is a few small objects the garbage collector reuses, and request signals come from a process-wide pool of 256',
  },
  {
    name: 'grpc-max-response-pool-size',
    kind: 'int',
    help: "Triton's bound on gRPC inference response objects allocated at once (greater than 0).",
    inert:
      'Nereid encodes each response straight into the stream and holds no response objects; a call buffers at most what HTTP/2 flow control lets it queue',
    check: (v) => void parseInt10('grpc-max-response-pool-size', v, 1, 2 ** 31 - 1),
  },
  {
    name: 'grpc-infer-response-compression-level',
    kind: 'string',
    defaultText: 'none',
    help: "Compression of ModelInfer/ModelStreamInfer responses: none, low, medium (or med) or high. The level picks gzip or deflate among those the client's grpc-accept-encoding lists, as gRPC core does (low: gzip, medium and high: deflate when both are accepted).",
    apply: (d, v) => {
      const level = parseCompressionLevel(v);
      if (level === undefined) {
        throw invalidArg('invalid argument for --grpc_infer_response_compression_level');
      }
      d.grpcInferResponseCompressionLevel = level;
    },
  },
  {
    name: 'grpc-keepalive-time',
    kind: 'int',
    defaultText: '7200000',
    help: 'Milliseconds between keepalive pings the server sends while calls are in flight (or always, with --grpc-keepalive-permit-without-calls); 0 = none.',
    apply: (d, v) => (d.grpcKeepaliveTimeMs = parseInt10('grpc-keepalive-time', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-keepalive-timeout',
    kind: 'int',
    defaultText: '20000',
    help: 'Milliseconds a ping (keepalive or liveness) may go unanswered before the connection is closed.',
    apply: (d, v) => (d.grpcKeepaliveTimeoutMs = parseInt10('grpc-keepalive-timeout', v, 1, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-keepalive-permit-without-calls',
    kind: 'bool',
    defaultText: 'false',
    help: "Send keepalive pings, and accept the client's, even when no call is in flight.",
    apply: (d, v) =>
      (d.grpcKeepalivePermitWithoutCalls = parseBool('grpc-keepalive-permit-without-calls', v)),
  },
  {
    name: 'grpc-http2-max-pings-without-data',
    kind: 'int',
    defaultText: '2',
    help: 'Keepalive pings the server sends without sending headers or data in between; 0 = no limit.',
    apply: (d, v) =>
      (d.grpcHttp2MaxPingsWithoutData = parseInt10('grpc-http2-max-pings-without-data', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-http2-min-recv-ping-interval-without-data',
    kind: 'int',
    defaultText: '300000',
    help: 'Least milliseconds between pings received while the server sends no data; a ping sooner is a strike (with no call in flight and pings without calls not permitted, the least interval is two hours).',
    apply: (d, v) =>
      (d.grpcHttp2MinRecvPingIntervalWithoutDataMs = parseInt10(
        'grpc-http2-min-recv-ping-interval-without-data',
        v,
        0,
        2 ** 31 - 1,
      )),
  },
  {
    name: 'grpc-http2-max-ping-strikes',
    kind: 'int',
    defaultText: '2',
    help: 'Ping strikes tolerated before GOAWAY ENHANCE_YOUR_CALM ("too_many_pings") and closing the connection; 0 = any number.',
    apply: (d, v) =>
      (d.grpcHttp2MaxPingStrikes = parseInt10('grpc-http2-max-ping-strikes', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-max-connection-age',
    kind: 'int',
    defaultText: '0',
    help: 'Milliseconds (with ±10 % jitter) after which a connection gets GOAWAY; 0 = no limit.',
    apply: (d, v) => (d.grpcMaxConnectionAgeMs = parseInt10('grpc-max-connection-age', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-max-connection-age-grace',
    kind: 'int',
    defaultText: '0',
    help: 'Milliseconds calls may still run after the age GOAWAY before the connection is closed; 0 = until they end.',
    apply: (d, v) =>
      (d.grpcMaxConnectionAgeGraceMs = parseInt10('grpc-max-connection-age-grace', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-max-connection-idle',
    kind: 'int',
    defaultText: '300000',
    help: "Milliseconds a connection may stay without calls before GOAWAY and close (gRPC's GRPC_ARG_MAX_CONNECTION_IDLE_MS); 0 = never. Nereid's own.",
    apply: (d, v) => (d.grpcMaxConnectionIdleMs = parseInt10('grpc-max-connection-idle', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-max-connections',
    kind: 'int',
    defaultText: '8192',
    help: 'gRPC connections held open at once; a connection over the limit gets GOAWAY ENHANCE_YOUR_CALM (saying so) and is closed. 0 = no limit. Nereid only.',
    apply: (d, v) => (d.grpcMaxConnections = parseInt10('grpc-max-connections', v, 0)),
  },
  {
    name: 'grpc-max-connections-per-address',
    kind: 'int',
    defaultText: '2048',
    help: 'gRPC connections one client address (an IPv4 address, or an IPv6 /64) may hold open at once, so one address cannot take the whole --grpc-max-connections; a connection over it gets GOAWAY ENHANCE_YOUR_CALM (saying so) and is closed. Clients behind one proxy share its address: raise it for such a proxy. 0 = no limit. Nereid only.',
    apply: (d, v) => (d.grpcMaxConnectionsPerAddress = parseInt10('grpc-max-connections-per-address', v, 0)),
  },
  {
    name: 'grpc-request-read-timeout',
    kind: 'int',
    defaultText: '60000',
    help: 'Milliseconds a unary call may take to receive its whole request, and a streaming call one message once it started, before the call ends with DEADLINE_EXCEEDED; a connection that starts no call within it is closed. 0 = no limit. Nereid only.',
    apply: (d, v) =>
      (d.grpcRequestReadTimeoutMs = parseInt10('grpc-request-read-timeout', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-max-concurrent-streams',
    kind: 'int',
    defaultText: '1000',
    help: "Calls one connection may have open at once; a stream past it is refused with REFUSED_STREAM (clients retry it). SETTINGS_MAX_CONCURRENT_STREAMS is advertised a quarter higher (at least 8), so only a client past that loses its connection. Nereid's own.",
    apply: (d, v) =>
      (d.grpcMaxConcurrentStreams = parseInt10('grpc-max-concurrent-streams', v, 1, 2 ** 32 - 1)),
  },
  {
    name: 'grpc-max-decompressed-size',
    kind: 'int',
    defaultText: '67108864',
    help: "Largest gRPC request message after gzip/deflate decompression; beyond it the call fails with RESOURCE_EXHAUSTED. Nereid's own.",
    apply: (d, v) => (d.grpcMaxDecompressedSize = parseInt10('grpc-max-decompressed-size', v, 1)),
  },
  {
    name: 'grpc-max-connection-buffered-bytes',
    kind: 'int',
    defaultText: '536870912',
    help: "Bytes of gRPC request messages still arriving (or being decompressed) that one connection may hold; the call that would pass it fails with RESOURCE_EXHAUSTED. Nereid's own.",
    apply: (d, v) =>
      (d.grpcMaxConnectionBufferedBytes = parseInt10('grpc-max-connection-buffered-bytes', v, 1)),
  },
  {
    name: 'grpc-max-buffered-bytes',
    kind: 'int',
    defaultText: '1073741824',
    help: "The same, for all gRPC connections together. Nereid's own.",
    apply: (d, v) => (d.grpcMaxBufferedBytes = parseInt10('grpc-max-buffered-bytes', v, 1)),
  },
  {
    name: 'grpc-infer-stream-idle-timeout',
    kind: 'int',
    defaultText: '3600000',
    help: "Milliseconds a ModelStreamInfer stream with no request in flight may wait for its next request before it is ended with UNAVAILABLE; 0 = never. Nereid's own.",
    apply: (d, v) =>
      (d.grpcInferStreamIdleTimeoutMs = parseInt10('grpc-infer-stream-idle-timeout', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'max-undelivered-responses',
    kind: 'int',
    defaultText: '64',
    help: "Responses of one request (a decoupled model's stream) the server holds that the client has not read yet; at the bound the model's next send waits (back-pressure), so a slow reader slows the model instead of filling memory. Builtin and Python models wait (a Python model's send for that request waits for credit; its other requests go on), JavaScript models that await sender.whenWritable() (or use a generator execute) wait. Nereid's own.",
    apply: (d, v) => (d.maxUndeliveredResponses = parseInt10('max-undelivered-responses', v, 1, 2 ** 31 - 1)),
  },
  {
    name: 'response-idle-timeout',
    kind: 'int',
    defaultText: '300000',
    help: "Milliseconds a model may wait to send a response (see --max-undelivered-responses) while the client reads nothing, before the request is cancelled and its undelivered responses dropped; 0 = never. Nereid's own.",
    apply: (d, v) => (d.responseIdleTimeoutMs = parseInt10('response-idle-timeout', v, 0, 2 ** 31 - 1)),
  },
  {
    name: 'grpc-restricted-protocol',
    kind: 'list',
    help: "Calls to these gRPC categories must carry metadata 'triton-grpc-protocol-<key>' with exactly <value>, or get UNAVAILABLE: '<category>[,<category>...]:<key>=<value>', as --http-restricted-api. Default: every rpc open.",
    apply: (d, v) => parseRestrictedOption(v, 'grpc-restricted-protocol', d.grpcRestrictedProtocols),
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
    help: "Trace setting '[<mode>,]<setting>=<value>': global rate=<n> (trace every n-th request), level=<OFF|TIMESTAMPS|TENSORS> (repeatable), count=<n> (-1 = no limit), mode=<triton|opentelemetry>; triton,file=<path>, triton,log-frequency=<n> (0 = write at exit, n = a new <file>.<i> every n traces); opentelemetry,url=<OTLP/HTTP endpoint>, opentelemetry,resource=<key>=<value>, opentelemetry,bsp_max_queue_size=<n>, bsp_schedule_delay=<ms>, bsp_max_export_batch_size=<n> (docs/tracing.md).",
    defaultText: 'off (rate=1000, count=-1, mode=triton)',
    apply: (d, v) => {
      parseTraceConfig(v); // the form is checked now; values once every occurrence is known
      d.traceDraft.config.push(v);
    },
  },
  {
    name: 'trace-file',
    kind: 'string',
    help: 'Deprecated: --trace-config triton,file=<path>.',
    apply: (d, v) => (d.traceDraft.file = v),
  },
  {
    name: 'trace-level',
    kind: 'list',
    help: 'Deprecated: --trace-config level=<OFF|TIMESTAMPS|TENSORS>.',
    apply: (d, v) => d.traceDraft.levels.push(v),
  },
  {
    name: 'trace-rate',
    kind: 'int',
    help: 'Deprecated: --trace-config rate=<n>.',
    apply: (d, v) => (d.traceDraft.rate = v),
  },
  {
    name: 'trace-count',
    kind: 'int',
    help: 'Deprecated: --trace-config count=<n>.',
    apply: (d, v) => (d.traceDraft.count = v),
  },
  {
    name: 'trace-log-frequency',
    kind: 'int',
    help: 'Deprecated: --trace-config triton,log-frequency=<n>.',
    apply: (d, v) => (d.traceDraft.logFrequency = v),
  },
  {
    name: 'access-log',
    kind: 'string',
    defaultText: 'off',
    help: "Nereid only: one JSON line per inference request (time, protocol, model, version, status, bytes in/out, duration, queue and compute time, client, request id, trace id) to this file (appended), or 'stdout' / 'stderr' (docs/tracing.md).",
    apply: (d, v) => (d.accessLog = v),
  },
  {
    name: 'cache-config',
    kind: 'list',
    help:
      "Response cache setting '<cache>,<key>=<value>'; repeat for several keys. <cache> is local " +
      '(size=<bytes>: an LRU in this process) or redis (host, port, user, password, db, connect_timeout, ' +
      "socket_timeout, tls_enabled, cert, key, cacert, cacert_dir, sni, and Nereid's ttl_ms). Models use " +
      'it with response_cache { enable: true }. See docs/response-cache.md.',
    apply: (d, v) => d.cacheSettings.push(parseCacheSetting(v)),
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
    help: 'Deprecated: the same as --cache-config local,size=<bytes>; not together with --cache-config.',
    apply: (d, v) => (d.responseCacheByteSize = String(parseInt10('response-cache-byte-size', v, 0))),
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
    name: 'repoagent-directory',
    kind: 'string',
    help: 'Where Triton looks for repository agent libraries.',
    inert: 'Nereid has no repository agents',
  },
];

/**
 * The known flag an unknown name most likely meant, for "did you mean" (common/nearest-name.ts). Ties go to
 * the flag listed first.
 */
export function closestFlag(name: string): string | undefined {
  return nearestName(
    name,
    FLAGS.map((f) => f.name),
  );
}

const BY_NAME = new Map<string, Flag>();
for (const f of FLAGS) {
  BY_NAME.set(f.name, f);
  for (const a of f.aliases ?? []) BY_NAME.set(a, f);
}

export function defaultDraft(): Draft {
  const limits = defaultInstanceLimits();
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
    watch: false,
    watchMaxDirectories: 1024,
    loadModels: [],
    maxLoadedModels: 0,
    modelMemoryBudget: 0,
    modelLoadWaitSecs: 60,
    modelConfigName: '',
    strictReadiness: true,
    modelReadinessPollMs: 5000,
    modelReadinessTimeoutMs: 5000,
    exitOnError: true,
    exitTimeoutSecs: 30,
    exitDelaySecs: 0,
    maxInstancesPerModel: limits.perModel,
    maxInstances: limits.total,
    maxProcessInstancesPerModel: limits.processPerModel,
    maxProcessInstances: limits.processTotal,
    modelUnloadTimeoutSecs: 30,
    disableAutoCompleteConfig: false,
    strictGpuKind: false,
    strictModelOutputs: false,
    loadErrorStatus: 'triton',
    modelLoadThreadCount: 4,
    backendConfig: new Map(),
    backendDirectories: [],
    backendVenvDirectory: undefined,
    allowHttp: true,
    httpAddress: '0.0.0.0',
    httpPort: 8000,
    httpMaxInputSize: 64 * 1024 * 1024,
    httpRestrictedApis: {},
    httpHeaderForwardPattern: undefined,
    httpMaxJsonSize: 64 * 1024 * 1024,
    httpJsonWorkerThreshold: 64 * 1024,
    httpJsonWorkerThreads: 1,
    httpThreadCount: 0,
    httpJsonWorkerBytes: 256 * 1024 * 1024,
    httpBacklog: 4096,
    httpMaxConnections: 8192,
    httpMaxConnectionsPerAddress: 2048,
    httpHealthPort: -1,
    allowOpenai: true,
    openaiPort: -1,
    openaiDefaultMaxTokens: 16,
    openaiMaxBufferedBytes: 4 * 1024 * 1024,
    allowGrpc: true,
    grpcAddress: '0.0.0.0',
    grpcPort: 8001,
    grpcInferResponseCompressionLevel: 'none',
    grpcKeepaliveTimeMs: 7_200_000,
    grpcKeepaliveTimeoutMs: 20_000,
    grpcKeepalivePermitWithoutCalls: false,
    grpcHttp2MaxPingsWithoutData: 2,
    grpcHttp2MinRecvPingIntervalWithoutDataMs: 300_000,
    grpcHttp2MaxPingStrikes: 2,
    grpcMaxConnectionAgeMs: 0,
    grpcMaxConnectionAgeGraceMs: 0,
    grpcMaxConnectionIdleMs: 300_000,
    grpcMaxConnections: 8192,
    grpcMaxConnectionsPerAddress: 2048,
    grpcRequestReadTimeoutMs: 60_000,
    grpcMaxConcurrentStreams: 1000,
    grpcMaxDecompressedSize: 64 * 1024 * 1024,
    grpcMaxConnectionBufferedBytes: 512 * 1024 * 1024,
    grpcMaxBufferedBytes: 1024 * 1024 * 1024,
    grpcInferStreamIdleTimeoutMs: 3_600_000,
    maxUndeliveredResponses: 64,
    responseIdleTimeoutMs: 300_000,
    grpcRestrictedProtocols: {},
    grpcHeaderForwardPattern: undefined,
    grpcInferThreadCount: 0,
    httpUseSsl: false,
    httpUseSslMutual: false,
    httpServerCert: '',
    httpServerKey: '',
    httpRootCert: '',
    grpcUseSsl: false,
    grpcUseSslMutual: false,
    grpcServerCert: '',
    grpcServerKey: '',
    grpcRootCert: '',
    tlsCertPollMs: 2000,
    allowDashboard: true,
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
    cacheSettings: [],
    responseCacheByteSize: undefined,
    traceDraft: emptyTraceDraft(),
    accessLog: '',
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

/**
 * Parses `--flag=value`, `--flag value` and bare boolean `--flag` forms. Throws INVALID_ARG. `env` gives
 * the variables some settings fall back to (redis_cache's TRITONCACHE_REDIS_USERNAME / _PASSWORD, the
 * OTEL_BSP_* and OTEL_RESOURCE_ATTRIBUTES of OpenTelemetry tracing).
 */
export function parseFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedCommandLine {
  const d = defaultDraft();
  const ignored: string[] = [];
  /** Flag name → the last value given. */
  const given = new Map<string, string>();
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
    if (!flag) {
      const near = closestFlag(name);
      const hint = near === undefined ? '' : `; did you mean '--${near}'?`;
      throw invalidArg(`unrecognized option '--${name}'${hint} (see --help)`);
    }
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (flag.kind === 'bool' && (i + 1 >= argv.length || argv[i + 1].startsWith('--'))) value = 'true';
    else if (i + 1 < argv.length) value = argv[++i];
    else throw invalidArg(`option '--${name}' requires a value`);
    given.set(flag.name, value);
    if (flag.apply) {
      flag.apply(d, value);
    } else {
      if (flag.check) flag.check(value);
      else checkValue(flag, value);
      if (!ignored.includes(`--${flag.name}`)) ignored.push(`--${flag.name}`);
    }
  }
  const warnings = ignored.map(
    (f) =>
      `${f} is accepted for compatibility and changes nothing: ${BY_NAME.get(f.slice(2))?.inert ?? 'no effect here'}`,
  );
  warnings.push(
    ...restrictionWarnings(d.grpcRestrictedProtocols, d.httpHeaderForwardPattern, d.grpcHeaderForwardPattern),
  );
  warnings.push(...tlsWarnings(d, given));
  if (!help && !version) validate(d, given);
  const trace = buildTraceOptions(d.traceDraft, env);
  warnings.push(...traceWarnings(d.traceDraft, trace));
  if (!d.metricsAddress) d.metricsAddress = d.allowHttp ? d.httpAddress : '0.0.0.0';
  const { cacheSettings, responseCacheByteSize, traceDraft: _traceDraft, ...rest } = d;
  const cache = help || version ? undefined : resolveCacheConfig(cacheSettings, responseCacheByteSize, env);
  if (responseCacheByteSize !== undefined) {
    warnings.push(
      "--response-cache-byte-size is deprecated: it is the 'local' cache with that size, " +
        `'--cache-config=local,size=${responseCacheByteSize}'`,
    );
  }
  warnings.push(...(cache?.warnings ?? []));
  const options: ServerOptions = Object.freeze({
    ...rest,
    responseCache: cache?.config,
    trace,
    modelRepositories: Object.freeze([...d.modelRepositories]),
    loadModels: Object.freeze([...d.loadModels]),
    rateLimitResources: Object.freeze(d.rateLimitResources.map((r) => Object.freeze(r))),
    backendConfig: d.backendConfig,
    backendDirectories: Object.freeze([...d.backendDirectories]),
    httpRestrictedApis: Object.freeze({ ...d.httpRestrictedApis }),
    grpcRestrictedProtocols: Object.freeze({ ...d.grpcRestrictedProtocols }),
  });
  return { options, help, version, ignored, warnings };
}

/** One endpoint's TLS settings, as parsed. */
interface TlsDraft {
  readonly protocol: 'grpc' | 'http';
  readonly name: string;
  readonly allowed: boolean;
  readonly useSsl: boolean;
  readonly mutual: boolean;
  readonly cert: string;
  readonly key: string;
  readonly root: string;
}

function tlsDrafts(d: Draft): TlsDraft[] {
  return [
    {
      protocol: 'grpc',
      name: 'gRPC',
      allowed: d.allowGrpc,
      useSsl: d.grpcUseSsl,
      mutual: d.grpcUseSslMutual,
      cert: d.grpcServerCert,
      key: d.grpcServerKey,
      root: d.grpcRootCert,
    },
    {
      protocol: 'http',
      name: 'HTTP',
      allowed: d.allowHttp,
      useSsl: d.httpUseSsl,
      mutual: d.httpUseSslMutual,
      cert: d.httpServerCert,
      key: d.httpServerKey,
      root: d.httpRootCert,
    },
  ];
}

/** TLS flags that say less than they seem to: each gets a start-up warning. */
function tlsWarnings(d: Draft, given: ReadonlyMap<string, string>): string[] {
  const warnings: string[] = [];
  for (const t of tlsDrafts(d)) {
    if (!t.allowed) continue;
    const p = t.protocol;
    if (t.useSsl && !t.mutual && given.has(`${p}-use-ssl-mutual`)) {
      warnings.push(
        `--${p}-use-ssl-mutual=${given.get(`${p}-use-ssl-mutual`)} turns TLS on all the same (as --grpc-use-ssl-mutual does in Triton): ${t.name} is served over TLS without client certificates`,
      );
    }
    const files = ['server-cert', 'server-key', 'root-cert'].filter((f) => given.has(`${p}-${f}`));
    if (!t.useSsl && files.length > 0) {
      warnings.push(
        `${files.map((f) => `--${p}-${f}`).join(', ')} given without --${p}-use-ssl: ${t.name} is served in clear text`,
      );
    }
    if (t.useSsl && !t.mutual && t.root) {
      warnings.push(
        `--${p}-root-cert is used with --${p}-use-ssl-mutual only (as in Triton): ${t.name} clients are not asked for certificates`,
      );
    }
  }
  return warnings;
}

function validateTls(t: TlsDraft): void {
  if (!t.allowed || !t.useSsl) return;
  const p = t.protocol;
  const missing = [!t.cert && `--${p}-server-cert`, !t.key && `--${p}-server-key`].filter((f) => f !== false);
  if (missing.length > 0) {
    throw invalidArg(
      `--${p}-use-ssl${t.mutual ? '-mutual' : ''} needs ${missing.join(' and ')}: the PEM files of the server's certificate and its key`,
    );
  }
  if (t.mutual && !t.root) {
    throw invalidArg(
      `--${p}-use-ssl-mutual needs --${p}-root-cert: the PEM file of the CA certificate(s) that sign client certificates`,
    );
  }
}

function validate(d: Draft, given: ReadonlyMap<string, string>): void {
  for (const t of tlsDrafts(d)) validateTls(t);
  if (d.modelRepositories.length === 0) throw invalidArg('--model-repository must be specified');
  if (d.watch) validateWatch(d, given);
  if (d.loadModels.length > 0 && d.modelControlMode !== 'explicit' && d.modelControlMode !== 'on-demand') {
    throw invalidArg('--load-model can only be used with --model-control-mode=explicit or on-demand');
  }
  if ((d.maxLoadedModels > 0 || d.modelMemoryBudget > 0) && d.modelControlMode !== 'on-demand') {
    throw invalidArg('--max-loaded-models and --model-memory-budget need --model-control-mode=on-demand');
  }
  if (d.modelControlMode === 'on-demand' && d.loadModels.includes('*')) {
    throw invalidArg(
      "--load-model='*' cannot be used with --model-control-mode=on-demand: name the models to pin",
    );
  }
  if (d.loadModels.includes('*') && d.loadModels.length > 1) {
    throw invalidArg("Wildcard model name '*' must be the ONLY startup model if specified at all.");
  }
}

/** --watch is poll mode on local folders; it turns poll mode on, and keeps a broken model from stopping the start. */
function validateWatch(d: Draft, given: ReadonlyMap<string, string>): void {
  if (given.has('model-control-mode') && d.modelControlMode !== 'poll') {
    throw invalidArg(
      `--watch reloads models as their files change, which is poll mode: it cannot be used with --model-control-mode=${d.modelControlMode}`,
    );
  }
  d.modelControlMode = 'poll';
  const remote = d.modelRepositories.filter(isObjectStoreUrl);
  if (remote.length > 0) {
    throw invalidArg(
      `--watch works on local folders only: '${remote[0]}' is an object store, which sends no change events; use --model-control-mode=poll with --repository-poll-secs=<n> for it`,
    );
  }
  if (!given.has('exit-on-error')) d.exitOnError = false;
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
/** The flags a first start needs, in the order --help lists them before everything else. */
export const MOST_USED_FLAGS: readonly string[] = [
  'model-repository',
  'model-control-mode',
  'load-model',
  'http-port',
  'grpc-port',
  'metrics-port',
  'log-verbose',
  'log-format',
  'strict-readiness',
  'exit-on-error',
  'backend-config',
];

/** --help's sections after the most used flags: a flag goes to the first whose test it passes. */
const HELP_SECTIONS: readonly { readonly title: string; readonly has: (name: string) => boolean }[] = [
  {
    title: 'Model repository and loading',
    has: (n) =>
      /^(model-|repository-|repoagent|load-model|watch|strict-model|strict-gpu|disable-auto|max-.*instances|backend-)/.test(
        n,
      ),
  },
  { title: 'HTTP', has: (n) => /^(http-|allow-http|reuse-http|allow-dashboard|tls-)/.test(n) },
  { title: 'gRPC', has: (n) => /^(grpc-|allow-grpc|reuse-grpc)/.test(n) },
  { title: 'OpenAI, SageMaker, Vertex AI', has: (n) => /(openai|sagemaker|vertex-ai)/.test(n) },
  { title: 'Metrics', has: (n) => /metrics/.test(n) },
  { title: 'Logging and tracing', has: (n) => /^(log-|trace-|access-log)/.test(n) },
  { title: 'Server life cycle', has: (n) => /^(exit-|strict-readiness|id$)/.test(n) },
  {
    title: 'Caching, rate limiting and memory',
    has: (n) =>
      /^(cache-|response-cache|rate-limit|pinned-|cuda-|allow-client-shm|max-undelivered|response-idle)/.test(
        n,
      ),
  },
  { title: 'Other', has: () => true },
];

function helpEntry(f: Flag): string[] {
  const arg = `=<${ARG_NAMES[f.kind]}>`;
  const def = f.defaultText !== undefined ? ` (default: ${f.defaultText})` : '';
  const names = [f.name, ...(f.aliases ?? [])].map((n) => `--${n}${arg}`).join(', ');
  return [`  ${names}`, `      ${f.help}${def}${f.apply ? '' : ` [accepted, no effect: ${f.inert ?? ''}]`}`];
}

/**
 * --help: the most used flags first, then every other flag once, in sections (accepted-but-inert flags
 * last within each section).
 */
export function helpText(): string {
  const lines = [
    'Usage: nereid [options]',
    '',
    "Options are tritonserver's (--flag=value or --flag value).",
    '',
  ];
  lines.push('Most used:');
  const shown = new Set<string>();
  for (const name of MOST_USED_FLAGS) {
    const f = BY_NAME.get(name);
    if (f === undefined) continue;
    lines.push(...helpEntry(f));
    shown.add(f.name);
  }
  const bySection = HELP_SECTIONS.map(() => [] as Flag[]);
  for (const f of FLAGS) {
    if (shown.has(f.name)) continue;
    bySection[HELP_SECTIONS.findIndex((sec) => sec.has(f.name))].push(f);
  }
  HELP_SECTIONS.forEach((sec, i) => {
    const flags = [...bySection[i].filter((f) => f.apply), ...bySection[i].filter((f) => !f.apply)];
    if (flags.length === 0) return;
    lines.push('', `${sec.title}:`);
    for (const f of flags) lines.push(...helpEntry(f));
  });
  lines.push('', 'Other commands: nereid --version, nereid init --help.');
  return lines.join('\n');
}
