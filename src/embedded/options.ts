/**
 * Options of an embedded server (Nereid.start), turned into the same tritonserver flags the command line
 * takes, so they are validated once, by the same table (compose/flags.ts), with the same messages.
 */
import { invalidArg } from '../common/errors.js';
import { Logger, type LogSettings } from '../common/logger.js';

export interface ListenOptions {
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  /** Default 127.0.0.1: an embedded server is private unless asked otherwise. */
  readonly address?: string;
}

/** TLS for an embedded server's HTTP or gRPC port: PEM files, followed for changes (docs/security.md#tls). */
export interface TlsListenOptions {
  /** PEM certificate file: the server's own first, then any intermediates. */
  readonly certFile: string;
  /** PEM private key file of that certificate (unencrypted). */
  readonly keyFile: string;
  /** Require client certificates signed by `rootCertFile`'s CA (mutual TLS). Default false. */
  readonly mutual?: boolean;
  /** PEM file of the CA certificate(s) that sign client certificates; needed with `mutual`. */
  readonly rootCertFile?: string;
}

/** Where to listen, and optionally with TLS (HTTPS on the HTTP port, gRPC over TLS). */
export interface SecureListenOptions extends ListenOptions {
  readonly tls?: TlsListenOptions;
}

export interface NereidStartOptions {
  /** One or more model repository folders. */
  readonly modelRepository: string | readonly string[];
  /** Serve KServe v2 HTTP (HTTPS with `tls`) right away (default: no). listenHttp() attaches it later. */
  readonly http?: false | SecureListenOptions;
  /** Serve gRPC (over TLS with `tls`) right away (default: no). listenGrpc() attaches it later. */
  readonly grpc?: false | SecureListenOptions;
  /** Serve Prometheus /metrics right away (default: no). listenMetrics() attaches it later. */
  readonly metrics?: false | ListenOptions;
  /** 'none' (default) loads every model; 'explicit' only `loadModels` and what load() asks for. */
  readonly modelControlMode?: 'none' | 'poll' | 'explicit' | 'on-demand';
  /** With 'explicit': the models to load at start ('*' = all). */
  readonly loadModels?: readonly string[];
  /** Fail start() when a model fails to load (default true, as tritonserver). */
  readonly exitOnError?: boolean;
  /**
   * How often a loaded model's own readiness (a JavaScript model's isReady()) is asked, in ms; 0 = never
   * (`--model-readiness-poll-ms`, default 5000).
   */
  readonly modelReadinessPollMs?: number;
  /** `--backend-config` settings: backend → key → value, e.g. `{ javascript: { 'execution-timeout-ms': '5000' } }`. */
  readonly backendConfig?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /**
   * Where log lines go: a Logger, Logger settings (stderr), a function receiving each line, or false for
   * silence. Default: warnings and errors on stderr.
   */
  readonly log?: Logger | Partial<LogSettings> | ((line: string) => void) | false;
  /** Any other tritonserver flag as on the command line, e.g. `--rate-limit=execution_count`. */
  readonly flags?: readonly string[];
}

export function loggerFor(log: NereidStartOptions['log']): Logger {
  if (log instanceof Logger) return log;
  if (log === false)
    return new Logger({ logInfo: false, logWarning: false, logError: false }, () => undefined);
  if (typeof log === 'function') return new Logger({}, log);
  return new Logger(log ?? { logInfo: false });
}

function listenFlags(
  kind: 'http' | 'grpc' | 'metrics',
  o: false | SecureListenOptions | undefined,
): string[] {
  if (!o) return [`--allow-${kind}=false`];
  return [
    `--allow-${kind}=true`,
    `--${kind}-port=${o.port ?? 0}`,
    `--${kind}-address=${o.address ?? '127.0.0.1'}`,
    ...(o.tls ? tlsFlags(kind, o.tls) : []),
  ];
}

/** The --<kind>-use-ssl* flags meaning the same as `tls`. */
export function tlsFlags(kind: 'http' | 'grpc' | 'metrics', tls: TlsListenOptions): string[] {
  if (kind === 'metrics') throw invalidArg('the metrics endpoint has no TLS');
  return [
    tls.mutual ? `--${kind}-use-ssl-mutual=true` : `--${kind}-use-ssl=true`,
    `--${kind}-server-cert=${tls.certFile}`,
    `--${kind}-server-key=${tls.keyFile}`,
    ...(tls.rootCertFile !== undefined ? [`--${kind}-root-cert=${tls.rootCertFile}`] : []),
  ];
}

/** The tritonserver command line that means the same as `o`. */
export function startFlags(o: NereidStartOptions): string[] {
  const repos = typeof o.modelRepository === 'string' ? [o.modelRepository] : [...(o.modelRepository ?? [])];
  if (repos.length === 0) throw invalidArg('Nereid.start() needs a modelRepository');
  const flags = repos.map((r) => `--model-repository=${r}`);
  flags.push(
    ...listenFlags('http', o.http),
    ...listenFlags('grpc', o.grpc),
    ...listenFlags('metrics', o.metrics),
  );
  if (o.modelControlMode) flags.push(`--model-control-mode=${o.modelControlMode}`);
  for (const m of o.loadModels ?? []) flags.push(`--load-model=${m}`);
  if (o.exitOnError !== undefined) flags.push(`--exit-on-error=${o.exitOnError}`);
  if (o.modelReadinessPollMs !== undefined) flags.push(`--model-readiness-poll-ms=${o.modelReadinessPollMs}`);
  for (const [backend, settings] of Object.entries(o.backendConfig ?? {})) {
    for (const [k, v] of Object.entries(settings)) flags.push(`--backend-config=${backend},${k}=${v}`);
  }
  flags.push(...(o.flags ?? []));
  return flags;
}
