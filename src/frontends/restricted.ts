/**
 * Triton's restricted APIs (`--http-restricted-api`, `--grpc-restricted-protocol`): which category every
 * HTTP route and gRPC method belongs to, and the check both frontends run before anything else touches a
 * request. Categories, the route/method table, and the refusal texts are Triton's (src/restricted_features.h,
 * src/http_server.cc, src/grpc/grpc_server.cc and infer_handler.cc): a request to a restricted category
 * without the configured header, or with another value, gets HTTP 403 / gRPC UNAVAILABLE.
 *
 * The check is built once per frontend from the options: a route or method maps to its Restriction (or
 * nothing) in a table made at start-up, so an unrestricted request costs one lookup and a restricted one a
 * header read and a string compare, never a regular expression.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RouteName } from './http/router.js';

/** Triton's categories, in Triton's order (RESTRICTED_CATEGORY_NAMES). */
export const RESTRICTED_CATEGORIES = [
  'health',
  'metadata',
  'inference',
  'shared-memory',
  'model-config',
  'model-repository',
  'statistics',
  'trace',
  'logging',
] as const;

/** Triton's categories: the ones every KServe route and gRPC rpc falls in. */
export type TritonCategory = (typeof RESTRICTED_CATEGORIES)[number];

/**
 * Nereid's own HTTP-only categories, accepted by `--http-restricted-api` besides Triton's (and refused by
 * `--grpc-restricted-protocol`, which has nothing of theirs to guard): `dashboard` guards the operator's
 * page and its two read routes (frontends/http/dashboard.ts); `openai` the OpenAI-compatible /v1 API
 * (frontends/openai), on whichever port serves it.
 */
export const NEREID_HTTP_CATEGORIES = ['dashboard', 'openai'] as const;

/** Every category `--http-restricted-api` accepts: Triton's, then Nereid's. */
export const HTTP_RESTRICTED_CATEGORIES = [...RESTRICTED_CATEGORIES, ...NEREID_HTTP_CATEGORIES] as const;

export type HttpRestrictedCategory = (typeof HTTP_RESTRICTED_CATEGORIES)[number];

/** Any category of either protocol. */
export type RestrictedCategory = HttpRestrictedCategory;

/** The header a client must send, and its exact value. */
export interface Restriction {
  /**
   * The header (HTTP) or metadata key (gRPC, `triton-grpc-protocol-<key>`) as configured; it is also the
   * name the refusal message quotes.
   */
  readonly header: string;
  readonly value: string;
}

/**
 * The restricted categories of one protocol and what each requires; a category not present is open. Only
 * HTTP restrictions ever hold a Nereid category (the gRPC flag refuses them).
 */
export type Restrictions = Readonly<Partial<Record<HttpRestrictedCategory, Restriction>>>;

/** Whether `name` is a category of that protocol's flag (gRPC: Triton's only). */
export function isRestrictedCategory(
  name: string,
  protocol: 'http' | 'grpc' = 'http',
): name is RestrictedCategory {
  const known: readonly string[] = protocol === 'http' ? HTTP_RESTRICTED_CATEGORIES : RESTRICTED_CATEGORIES;
  return known.includes(name);
}

export function isHttpRestrictedCategory(name: string): name is HttpRestrictedCategory {
  return (HTTP_RESTRICTED_CATEGORIES as readonly string[]).includes(name);
}

/** Every HTTP route's category (http_server.cc: the RETURN_AND_RESPOND_IF_RESTRICTED of each handler). */
export const HTTP_ROUTE_CATEGORY: Readonly<Record<RouteName, HttpRestrictedCategory>> = {
  serverLive: 'health',
  serverReady: 'health',
  modelReady: 'health',
  serverMetadata: 'metadata',
  modelMetadata: 'metadata',
  modelInfer: 'inference',
  modelGenerate: 'inference',
  modelGenerateStream: 'inference',
  modelConfig: 'model-config',
  modelStats: 'statistics',
  allModelStats: 'statistics',
  repositoryIndex: 'model-repository',
  repositoryLoad: 'model-repository',
  repositoryUnload: 'model-repository',
  logging: 'logging',
  traceSetting: 'trace',
  cudaSharedMemoryStatus: 'shared-memory',
  cudaSharedMemoryRegister: 'shared-memory',
  cudaSharedMemoryUnregister: 'shared-memory',
  systemSharedMemoryStatus: 'shared-memory',
  systemSharedMemoryRegister: 'shared-memory',
  systemSharedMemoryUnregister: 'shared-memory',
  // Nereid's dashboard (not in Triton): its own category, so an operator can close the page alone.
  dashboardPage: 'dashboard',
  dashboardServer: 'dashboard',
  dashboardMetrics: 'dashboard',
  dashboardLogs: 'dashboard',
  // Nereid's own route (Triton has no API document): it describes the server, so it is metadata.
  openApi: 'metadata',
};

/**
 * Routes that also need a second category's header, because what they answer is what that category
 * guards elsewhere: the dashboard's server description (identity, options, repository paths) is more
 * than GET /v2 tells, and its metrics text carries the statistics API's counts. So restricting metadata
 * or statistics closes these too, and opening the dashboard never opens what another setting closed.
 */
export const HTTP_ROUTE_ALSO_CATEGORY: Readonly<Partial<Record<RouteName, HttpRestrictedCategory>>> = {
  dashboardServer: 'metadata',
  dashboardMetrics: 'statistics',
  dashboardLogs: 'logging',
};

const SERVICE = '/inference.GRPCInferenceService/';

/**
 * Every gRPC method's category by HTTP/2 path (grpc_server.cc: the restricted_keys_.Get of each Register*,
 * and INFERENCE for both infer handlers). `grpc.health.v1.Health/Check` counts as health, as in Triton.
 */
export const GRPC_METHOD_CATEGORY: ReadonlyMap<string, TritonCategory> = new Map<string, TritonCategory>([
  [SERVICE + 'ServerLive', 'health'],
  [SERVICE + 'ServerReady', 'health'],
  [SERVICE + 'ModelReady', 'health'],
  ['/grpc.health.v1.Health/Check', 'health'],
  [SERVICE + 'ServerMetadata', 'metadata'],
  [SERVICE + 'ModelMetadata', 'metadata'],
  [SERVICE + 'ModelInfer', 'inference'],
  [SERVICE + 'ModelStreamInfer', 'inference'],
  [SERVICE + 'ModelConfig', 'model-config'],
  [SERVICE + 'ModelStatistics', 'statistics'],
  [SERVICE + 'RepositoryIndex', 'model-repository'],
  [SERVICE + 'RepositoryModelLoad', 'model-repository'],
  [SERVICE + 'RepositoryModelUnload', 'model-repository'],
  [SERVICE + 'SystemSharedMemoryStatus', 'shared-memory'],
  [SERVICE + 'SystemSharedMemoryRegister', 'shared-memory'],
  [SERVICE + 'SystemSharedMemoryUnregister', 'shared-memory'],
  [SERVICE + 'CudaSharedMemoryStatus', 'shared-memory'],
  [SERVICE + 'CudaSharedMemoryRegister', 'shared-memory'],
  [SERVICE + 'CudaSharedMemoryUnregister', 'shared-memory'],
  [SERVICE + 'TraceSetting', 'trace'],
  [SERVICE + 'LogSettings', 'logging'],
]);

/** The prefix Triton puts before a --grpc-restricted-protocol key (kRestrictedProtocolHeaderTemplate). */
export const GRPC_RESTRICTED_HEADER_PREFIX = 'triton-grpc-protocol-';

/** Triton's HTTP 403 body text (HTTPAPIServer::RespondIfRestricted). */
export const httpRestrictedMessage = (header: string): string =>
  `This API is restricted, expecting header '${header}'`;

/** Triton's gRPC UNAVAILABLE message (CommonCallData / InferHandler ExecutePrecondition). */
export const grpcRestrictedMessage = (header: string): string =>
  `This protocol is restricted, expecting header '${header}'`;

/** One restricted route or method, ready to check: what to look up, what to compare, what to answer. */
export interface RestrictionCheck {
  /** The name as it appears among the request's headers (HTTP: lower-cased; gRPC: as configured). */
  readonly name: string;
  /** The expected value as Node presents header values (one char per byte). */
  readonly value: string;
  /** The refusal text, made once. */
  readonly message: string;
  /** gRPC `-bin` keys: the value's bytes, compared with the decoded metadata. */
  readonly bytes: Buffer;
  /** gRPC `-bin` keys carry base64 on the wire; the value compared is the decoded bytes, as in Triton. */
  readonly binary: boolean;
}

/**
 * The per-route (HTTP) or per-method (gRPC) table of checks for a set of restrictions; keys whose category
 * is open are absent. HTTP header names are case-insensitive (libevhtp's lookup); gRPC metadata keys
 * arrive lower-case, so a key configured with capitals can never be sent, exactly as in Triton (the
 * command line warns about it).
 */
export function restrictionTable<K extends string>(
  categories: Iterable<readonly [K, HttpRestrictedCategory]>,
  restrictions: Restrictions | undefined,
  protocol: 'http' | 'grpc',
): Map<K, RestrictionCheck> {
  const table = new Map<K, RestrictionCheck>();
  if (restrictions === undefined) return table;
  const message = protocol === 'http' ? httpRestrictedMessage : grpcRestrictedMessage;
  for (const [key, category] of categories) {
    const r = restrictions[category];
    if (r === undefined) continue;
    table.set(key, {
      name: protocol === 'http' ? r.header.toLowerCase() : r.header,
      // Node hands header values over byte for byte (latin1); Triton compares the bytes of the flag's value.
      value: Buffer.from(r.value, 'utf8').toString('latin1'),
      bytes: Buffer.from(r.value, 'utf8'),
      message: message(r.header),
      binary: protocol === 'grpc' && r.header.endsWith('-bin'),
    });
  }
  return table;
}

/**
 * True when the request carries the header with the expected value. As in Triton, the first occurrence of
 * a repeated header decides. `headers` is Node's parsed view (repeats joined with ", "), `rawHeaders` the
 * name/value list as received; the raw list is only walked when the parsed value is not a plain match.
 */
export function isAllowed(
  check: RestrictionCheck,
  headers: IncomingHttpHeaders,
  rawHeaders: readonly string[],
): boolean {
  const seen = headers[check.name];
  if (seen === undefined) return false;
  if (!check.binary && seen === check.value && !seen.includes(', ')) return true;
  const first = firstRawValue(rawHeaders, check.name);
  if (first === undefined) return false;
  return check.binary ? Buffer.from(first, 'base64').equals(check.bytes) : first === check.value;
}

function firstRawValue(raw: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) return raw[i + 1];
  }
  return undefined;
}
