/**
 * The path → route matcher: one split of the path and a few string compares, no regular expressions.
 * Besides Triton's paths, GET /openapi.yaml serves the API's OpenAPI document (openapi.ts).
 * Paths and their shapes follow Triton's http_server.cc: `${V}` versions are all digits, names are
 * non-empty segments (percent-decoded), anything else is 404; a known path with the wrong verb is 405.
 */
import { invalidArg } from '../../common/errors.js';
import { OPENAPI_PATH } from './openapi.js';

export type RouteName =
  | 'serverMetadata'
  | 'serverLive'
  | 'serverReady'
  | 'modelMetadata'
  | 'modelReady'
  | 'modelConfig'
  | 'modelInfer'
  | 'modelGenerate'
  | 'modelGenerateStream'
  | 'modelStats'
  | 'allModelStats'
  | 'repositoryIndex'
  | 'repositoryLoad'
  | 'repositoryUnload'
  | 'logging'
  | 'traceSetting'
  | 'cudaSharedMemoryStatus'
  | 'cudaSharedMemoryRegister'
  | 'cudaSharedMemoryUnregister'
  | 'systemSharedMemoryStatus'
  | 'systemSharedMemoryRegister'
  | 'systemSharedMemoryUnregister'
  | 'dashboardPage'
  | 'dashboardServer'
  | 'dashboardMetrics'
  | 'dashboardLogs'
  | 'openApi';

export interface RouteMatch {
  readonly name: RouteName;
  /** The verb(s) the route accepts. */
  readonly method: 'GET' | 'POST' | 'GET,POST';
  readonly model?: string;
  /** Digits only; undefined when the path has no /versions/ part. */
  readonly version?: string;
  /** The `${REPO}` of /v2/repository/${REPO}/..., when given. */
  readonly repository?: string;
  /** The `${R}` of /v2/{system,cuda}sharedmemory/region/${R}/..., when given. */
  readonly region?: string;
  /** dashboardPage: the file under /dashboard/ ('' for the page itself; undefined for bare /dashboard). */
  readonly file?: string;
}

const MODEL_ACTIONS: Readonly<Record<string, { name: RouteName; method: 'GET' | 'POST' }>> = {
  ready: { name: 'modelReady', method: 'GET' },
  config: { name: 'modelConfig', method: 'GET' },
  infer: { name: 'modelInfer', method: 'POST' },
  generate: { name: 'modelGenerate', method: 'POST' },
  generate_stream: { name: 'modelGenerateStream', method: 'POST' },
  stats: { name: 'modelStats', method: 'GET' },
};

function isDigits(s: string | undefined): s is string {
  if (s === undefined || s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** A percent-decoded, non-empty path segment, or undefined. Malformed escapes are a 400. */
function name(segment: string | undefined): string | undefined {
  if (segment === undefined || segment.length === 0) return undefined;
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw invalidArg(`malformed percent-encoding in URL path segment '${segment}'`);
  }
}

function matchModel(segs: readonly string[]): RouteMatch | undefined {
  // segs: ['', 'v2', 'models', ...]
  if (segs.length === 4 && segs[3] === 'stats') return { name: 'allModelStats', method: 'GET' };
  const model = name(segs[3]);
  if (model === undefined) return undefined;
  if (segs.length === 6 && segs[4] === 'trace' && segs[5] === 'setting') {
    return { name: 'traceSetting', method: 'GET,POST', model };
  }
  if (segs.length === 8 && segs[4] === 'versions' && segs[6] === 'trace' && segs[7] === 'setting') {
    throw invalidArg('trace settings are per model, not per version: drop /versions/<v> from the path');
  }
  let i = 4;
  let version: string | undefined;
  if (segs[i] === 'versions') {
    if (!isDigits(segs[i + 1])) return undefined;
    version = segs[i + 1];
    i += 2;
  }
  if (i === segs.length) return { name: 'modelMetadata', method: 'GET', model, version };
  if (i + 1 !== segs.length) return undefined;
  const action = Object.hasOwn(MODEL_ACTIONS, segs[i]) ? MODEL_ACTIONS[segs[i]] : undefined;
  return action === undefined ? undefined : { ...action, model, version };
}

function matchRepository(segs: readonly string[]): RouteMatch | undefined {
  // segs: ['', 'v2', 'repository', ...]; the optional ${REPO} segment comes first.
  const rest = segs.length === 4 || segs.length === 6 ? segs.slice(3) : segs.slice(4);
  const repository = segs.length === 5 || segs.length === 7 ? name(segs[3]) : undefined;
  if ((segs.length === 5 || segs.length === 7) && repository === undefined) return undefined;
  if (rest.length === 1 && rest[0] === 'index')
    return { name: 'repositoryIndex', method: 'POST', repository };
  if (rest.length === 3 && rest[0] === 'models') {
    const model = name(rest[1]);
    if (model === undefined) return undefined;
    if (rest[2] === 'load') return { name: 'repositoryLoad', method: 'POST', model, repository };
    if (rest[2] === 'unload') return { name: 'repositoryUnload', method: 'POST', model, repository };
  }
  return undefined;
}

type ShmActions = Readonly<Record<string, { name: RouteName; method: 'GET' | 'POST' }>>;

const SYSTEM_SHM_ACTIONS: ShmActions = {
  status: { name: 'systemSharedMemoryStatus', method: 'GET' },
  register: { name: 'systemSharedMemoryRegister', method: 'POST' },
  unregister: { name: 'systemSharedMemoryUnregister', method: 'POST' },
};

const CUDA_SHM_ACTIONS: ShmActions = {
  status: { name: 'cudaSharedMemoryStatus', method: 'GET' },
  register: { name: 'cudaSharedMemoryRegister', method: 'POST' },
  unregister: { name: 'cudaSharedMemoryUnregister', method: 'POST' },
};

function matchSharedMemory(segs: readonly string[], actions: ShmActions): RouteMatch | undefined {
  // /v2/{system,cuda}sharedmemory[/region/${R}]/{status|register|unregister}; register without a region
  // is Triton's INVALID_ARG, not a 404, so it matches here and the handler refuses it.
  const last = segs[segs.length - 1];
  const action = Object.hasOwn(actions, last) ? actions[last] : undefined;
  if (action === undefined) return undefined;
  if (segs.length === 4) return action;
  if (segs.length !== 6 || segs[3] !== 'region') return undefined;
  const region = name(segs[4]);
  return region === undefined ? undefined : { ...action, region };
}

/** Paths seen recently and their matches (a RouteMatch is immutable); bounded, so hostile paths cannot grow it. */
const recent = new Map<string, RouteMatch | undefined>();
const RECENT_LIMIT = 256;

/**
 * Matches a request path (without query string); undefined = 404. A server sees the same few paths over
 * and over (one infer path per model), so matches are remembered; a path that throws is never remembered.
 */
export function matchRoute(path: string): RouteMatch | undefined {
  const known = recent.get(path);
  if (known !== undefined || recent.has(path)) return known;
  const match = parseRoute(path);
  if (recent.size >= RECENT_LIMIT) recent.clear();
  recent.set(path, match && Object.freeze(match));
  return match;
}

/** A file name the dashboard can have: letters, digits, '.', '-', '_', not starting with '.'. */
function isAssetName(s: string): boolean {
  if (s.length === 0 || s.length > 64 || s.charCodeAt(0) === 0x2e) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok =
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      c === 0x2e ||
      c === 0x2d ||
      c === 0x5f;
    if (!ok) return false;
  }
  return true;
}

/**
 * Nereid's own operator dashboard (frontends/http/dashboard.ts): the page and its files under /dashboard/,
 * and two read-only JSON/text routes under /dashboard/api/. File paths are one or two plain segments, so
 * nothing like `..` or an escape can reach the file table, which is looked up by exact name anyway.
 */
function matchDashboard(path: string): RouteMatch | undefined {
  if (path === '/dashboard') return { name: 'dashboardPage', method: 'GET' };
  if (path === '/dashboard/') return { name: 'dashboardPage', method: 'GET', file: '' };
  if (path === '/dashboard/api/server') return { name: 'dashboardServer', method: 'GET' };
  if (path === '/dashboard/api/metrics') return { name: 'dashboardMetrics', method: 'GET' };
  if (path === '/dashboard/api/logs') return { name: 'dashboardLogs', method: 'GET' };
  const segs = path.slice('/dashboard/'.length).split('/');
  if (segs.length > 2 || segs[0] === 'api' || !segs.every(isAssetName)) return undefined;
  return { name: 'dashboardPage', method: 'GET', file: segs.join('/') };
}

function parseRoute(path: string): RouteMatch | undefined {
  if (path.startsWith('/dashboard') && (path.length === 10 || path.charCodeAt(10) === 0x2f)) {
    return matchDashboard(path);
  }
  if (!path.startsWith('/v2')) return path === OPENAPI_PATH ? { name: 'openApi', method: 'GET' } : undefined;
  if (path.length === 3) return { name: 'serverMetadata', method: 'GET' };
  if (path.charCodeAt(3) !== 0x2f) return undefined;
  const segs = path.split('/');
  switch (segs[2]) {
    case 'health':
      if (segs.length !== 4) return undefined;
      if (segs[3] === 'live') return { name: 'serverLive', method: 'GET' };
      if (segs[3] === 'ready') return { name: 'serverReady', method: 'GET' };
      return undefined;
    case 'models':
      return segs.length >= 4 ? matchModel(segs) : undefined;
    case 'repository':
      return segs.length >= 4 && segs.length <= 7 ? matchRepository(segs) : undefined;
    case 'logging':
      return segs.length === 3 ? { name: 'logging', method: 'GET,POST' } : undefined;
    case 'trace':
      return segs.length === 4 && segs[3] === 'setting'
        ? { name: 'traceSetting', method: 'GET,POST' }
        : undefined;
    case 'cudasharedmemory':
      return matchSharedMemory(segs, CUDA_SHM_ACTIONS);
    case 'systemsharedmemory':
      return matchSharedMemory(segs, SYSTEM_SHM_ACTIONS);
    default:
      return undefined;
  }
}
