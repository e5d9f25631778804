/**
 * The KServe v2 HTTP/REST endpoint on bare node:http (measurably faster than a framework here): match the
 * route, run its handler, send the reply; every error goes through errors.ts. Oversized bodies are refused
 * from their Content-Length (even before `Expect: 100-continue` is answered) and the connection is closed
 * rather than drained. close() stops accepting and lets in-flight requests finish. Under overload, requests
 * start within a per-turn budget so accepts keep up (turn-budget.ts), health checks first and never
 * refused for the connection cap (connection-limits.ts); a connection with too many unanswered
 * pipelined requests stops being read (read-limit.ts); large JSON is parsed off the loop (json-pool.ts).
 */
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from '../connection-share.js';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { productToken } from '../../common/product.js';
import type { Logger } from '../../common/logger.js';
import type { InferenceServerApi } from '../../core/index.js';
import { HeaderForwarder } from '../header-forward.js';
import { listen } from '../listen.js';
import {
  HTTP_ROUTE_ALSO_CATEGORY,
  HTTP_ROUTE_CATEGORY,
  isAllowed,
  restrictionTable,
  type HttpRestrictedCategory,
  type RestrictionCheck,
  type Restrictions,
} from '../restricted.js';
import { framingError } from './transport/request-framing.js';
import { bodyTooLarge, declaredLength, isBodyTooLarge } from './transport/body.js';
import { Dashboard, type DashboardOptions } from './dashboard.js';
import { DEFAULT_MAX_CONNECTIONS, limitConnections } from './transport/connection-limits.js';
import { errorBody, toErrorReply } from './transport/errors.js';
import { answerMalformed } from './transport/malformed.js';
import { JsonPool, type JsonLimits } from './json-pool.js';
import { matchRoute, type RouteMatch, type RouteName } from './router.js';
import type { AccessLog } from '../access-log.js';
import type { Reply, RouteContext } from './route-context.js';
import { HANDLERS } from './routes.js';
import type { TlsCredentials } from '../tls.js';
import { createHttpServer } from './transport/tls.js';
import { createTurnBudget } from './transport/turn-budget.js';
import { createReadLimit, type ReadLimitOptions } from './transport/read-limit.js';
import { snakeCase, type RequestCounter } from '../request-counts.js';

/** The routes that run an inference request: one access-log line each. */
const INFERENCE_ROUTES: ReadonlySet<RouteName> = new Set([
  'modelInfer',
  'modelGenerate',
  'modelGenerateStream',
]);

/** Triton's --http-max-input-size default (64 MiB). */
export const DEFAULT_MAX_INPUT_SIZE = 1 << 26;

export interface HttpFrontendOptions {
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Largest accepted request body, before and after decompression; default 64 MiB. */
  readonly maxInputSize?: number;
  /** `--http-restricted-api`: categories that need a header (restricted.ts). */
  readonly restrictedApis?: Restrictions;
  /** `--http-header-forward-pattern`: headers forwarded to models as parameters (header-forward.ts). */
  readonly headerForwardPattern?: string;
  /** --http-backlog: the listen queue length (the kernel caps it at net.core.somaxconn). */
  readonly backlog?: number;
  /** --http-max-connections: connections over it get 503 + close (health checks excepted); 0 = no cap. */
  readonly maxConnections?: number;
  /**
   * --http-max-connections-per-address: connections one client address (IPv4, or IPv6 /64) may hold;
   * over it, 503 + close as over the cap. Default 2048; 0 = no limit (../connection-share.ts).
   */
  readonly maxConnectionsPerAddress?: number;
  /** --http-max-json-size and the JSON worker settings (json-pool.ts). */
  readonly json?: Partial<JsonLimits>;
  readonly log: Logger;
  /** Serve HTTPS with these credentials (their owner reloads and closes them); default clear text. */
  readonly tls?: TlsCredentials;
  /** `--access-log`: one line per inference request. */
  readonly accessLog?: AccessLog;
  /** Serve the operator's dashboard under /dashboard/ (dashboard.ts); absent: those paths are 404. */
  readonly dashboard?: DashboardOptions;
  /**
   * Another API served on this port (the OpenAI-compatible /v1, frontends/openai): paths it claims go to
   * its handler, after the connection cap and the per-turn budget, before the KServe routes are looked at.
   */
  readonly mount?: HttpMount;
  /** Per-connection read limit for pipelining clients (read-limit.ts); tests shrink it. */
  readonly readLimit?: ReadLimitOptions;
  /** Counts each answered request by route and status (the metrics' nereid_http_requests_total). */
  readonly requestCounts?: RequestCounter;
}

/** A request's endpoint label while it is handled: set once its route is known. */
interface CountedRequest {
  endpoint: string;
}

const ENDPOINT_LABELS = new Map<string, string>();
/** The endpoint label of a route: its name in snake_case (`model_infer`), made once per route. */
function endpointLabel(name: string): string {
  let label = ENDPOINT_LABELS.get(name);
  if (label === undefined) {
    label = snakeCase(name);
    ENDPOINT_LABELS.set(name, label);
  }
  return label;
}

export interface HttpMount {
  claims(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, path: string): void;
}

/** Default --http-backlog. Node's default, 511, is less than one burst of reconnecting clients. */
export const DEFAULT_BACKLOG = 4096;

export interface HttpFrontend {
  /** Starts listening; resolves with the bound address and port. */
  listen(): Promise<{ address: string; port: number }>;
  /**
   * Shutdown's first phase: keeps accepting, but every reply carries `Connection: close` so keep-alive
   * clients reconnect (through their load balancer, to another replica) before close() refuses them.
   */
  drain(): void;
  /** Stops accepting connections and resolves once in-flight requests have finished. */
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json';
const DASHBOARD_ROUTES: ReadonlySet<RouteName> = new Set([
  'dashboardPage',
  'dashboardServer',
  'dashboardMetrics',
  'dashboardLogs',
]);
const NOT_FOUND_BODY = errorBody('Not Found');
const METHOD_NOT_ALLOWED_BODY = errorBody('Method Not Allowed');

function bodyLength(body: Reply['body']): number {
  if (body === undefined) return 0;
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8');
  if (Buffer.isBuffer(body)) return body.length;
  let n = 0;
  for (const b of body) n += b.length;
  return n;
}

/** What every request of one frontend shares, worked out once from its options. */
interface HttpSettings {
  readonly maxInputSize: number;
  /** GET /v2 answers with --id (Triton's name by default); the `Server` header says which server it is. */
  readonly serverHeader: string;
  readonly restricted: ReadonlyMap<RouteName, RestrictionCheck>;
  /** The few routes that also need a second category's header (the dashboard's reads: restricted.ts). */
  readonly restrictedAlso: ReadonlyMap<RouteName, RestrictionCheck>;
  readonly forwardHeaders: HeaderForwarder | undefined;
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  /** The 503 body for a connection over --http-max-connections. */
  readonly overCapBody: string;
  /** The 503 body for a connection over --http-max-connections-per-address. */
  readonly overShareBody: string;
}

/** Options → settings: defaults and the restriction tables; fails at startup on a bad option. */
function httpSettings(api: InferenceServerApi, options: HttpFrontendOptions): HttpSettings {
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const maxConnectionsPerAddress = options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  return {
    maxInputSize: options.maxInputSize ?? DEFAULT_MAX_INPUT_SIZE,
    serverHeader: productToken(api.serverMetadata().version),
    restricted: restrictionTable(
      Object.entries(HTTP_ROUTE_CATEGORY) as [RouteName, (typeof HTTP_ROUTE_CATEGORY)[RouteName]][],
      options.restrictedApis,
      'http',
    ),
    restrictedAlso: restrictionTable(
      Object.entries(HTTP_ROUTE_ALSO_CATEGORY) as [RouteName, HttpRestrictedCategory][],
      options.restrictedApis,
      'http',
    ),
    forwardHeaders:
      options.headerForwardPattern === undefined
        ? undefined
        : new HeaderForwarder(options.headerForwardPattern, 'http'),
    maxConnections,
    maxConnectionsPerAddress,
    ...connectionRefusals(maxConnections, maxConnectionsPerAddress),
  };
}

/** The 503 bodies for a connection over the server's cap or over its address's share (also the HTTP threads'). */
export function connectionRefusals(
  maxConnections: number,
  maxConnectionsPerAddress: number,
): { readonly overCapBody: string; readonly overShareBody: string } {
  return {
    overCapBody: errorBody(
      `the server is at its connection limit (${maxConnections}); retry later. Use --http-max-connections to raise it.`,
    ),
    overShareBody: errorBody(
      `this client address holds ${maxConnectionsPerAddress} connections, the most one address may; close some or retry later (--http-max-connections-per-address)`,
    ),
  };
}

/** The restriction (the route's own category first, then its second one) whose header `req` lacks. */
function refusingRestriction(
  restricted: ReadonlyMap<RouteName, RestrictionCheck>,
  restrictedAlso: ReadonlyMap<RouteName, RestrictionCheck>,
  route: RouteName,
  req: IncomingMessage,
): RestrictionCheck | undefined {
  const refused = (r: RestrictionCheck | undefined): r is RestrictionCheck =>
    r !== undefined && !isAllowed(r, req.headers, req.rawHeaders);
  const first = restricted.get(route);
  const also = restrictedAlso.size === 0 ? undefined : restrictedAlso.get(route);
  return refused(first) ? first : refused(also) ? also : undefined;
}

/** Whether a request's verb is its route's (`GET,POST` routes take either). */
function methodAllowed(routeMethod: RouteMatch['method'], requestMethod: string | undefined): boolean {
  return (
    requestMethod === routeMethod ||
    (routeMethod === 'GET,POST' && (requestMethod === 'GET' || requestMethod === 'POST'))
  );
}

/**
 * Writes one reply whole; `closeConnection` asks the client to close it (Connection: close). The headers
 * go to writeHead as a flat [name, value, ...] list: Node then builds the header block straight from it,
 * where a headers object (or an earlier setHeader) makes it copy them into its own table first.
 */
function sendReply(res: ServerResponse, reply: Reply, closeConnection: boolean, serverHeader: string): void {
  if (res.headersSent || res.destroyed) return; // the client is gone, or a reply already went out
  const raw: (string | number)[] = ['Server', serverHeader];
  const headers = reply.headers;
  if (headers !== undefined) {
    for (const name of Object.keys(headers)) raw.push(name, headers[name]);
  }
  const body = reply.body;
  raw.push('Content-Length', bodyLength(body));
  if (closeConnection) raw.push('Connection', 'close');
  res.writeHead(reply.status, raw);
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
    res.end(body);
    return;
  }
  res.cork();
  for (const part of body) res.write(part);
  res.end();
}

/** One access-log line for an inference request (--access-log). */
function writeAccessLog(accessLog: AccessLog, ctx: RouteContext, reply: Reply, arrived: bigint): void {
  const t = ctx.timings;
  const computed = t !== undefined && (t.queueNs > 0 || t.computeNs > 0);
  accessLog.write({
    protocol: 'http',
    model: ctx.match.model ?? '',
    version: ctx.resolvedVersion ?? ctx.match.version ?? '',
    status: reply.status,
    bytesIn: ctx.bytesIn ?? 0,
    bytesOut: ctx.streamedBytes ?? bodyLength(reply.body),
    durationNs: Number(process.hrtime.bigint() - arrived),
    ...(computed && { queueNs: t.queueNs, computeNs: t.computeNs }),
    client: ctx.req.socket.remoteAddress ?? '',
    requestId: ctx.requestId ?? '',
    traceId: ctx.trace?.traceId ?? '',
  });
}

/**
 * What the server answers before a request reaches its route: `Expect: 100-continue` (an oversized upload
 * is refused before it is sent) and malformed HTTP.
 */
function answerBeforeRoutes(
  server: HttpServer,
  maxInputSize: number,
  serverHeader: string,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  sendError: (res: ServerResponse, status: number, body: string, closeConnection?: boolean) => void,
): void {
  // Answer `Expect: 100-continue` ourselves so an oversized upload is refused before it is sent.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > maxInputSize) {
      sendError(res, 400, errorBody(bodyTooLarge(declared, maxInputSize).message), true);
      return;
    }
    res.writeContinue();
    handle(req, res);
  });

  // Malformed HTTP (bad framing, oversized headers, too slow): answer if the socket still can, never crash.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    answerMalformed(err, socket, serverHeader),
  );
}

export function createHttpFrontend(api: InferenceServerApi, options: HttpFrontendOptions): HttpFrontend {
  const { log, accessLog, requestCounts } = options;
  const {
    maxInputSize,
    serverHeader,
    restricted,
    restrictedAlso,
    forwardHeaders,
    maxConnections,
    maxConnectionsPerAddress,
    overCapBody,
    overShareBody,
  } = httpSettings(api, options);
  const unrestricted = restricted.size === 0 && restrictedAlso.size === 0;
  const json = new JsonPool(options.json);
  const dashboard = options.dashboard && new Dashboard(options.dashboard);
  let closing = false;

  const send = (res: ServerResponse, reply: Reply, closeConnection = false): void =>
    sendReply(res, reply, closing || closeConnection, serverHeader);

  const sendError = (res: ServerResponse, status: number, body: string, closeConnection = false): void => {
    send(res, { status, headers: { 'Content-Type': JSON_TYPE }, body }, closeConnection);
  };

  const dispatch = async (req: IncomingMessage, res: ServerResponse, match: RouteMatch, path: string) => {
    const logged = accessLog !== undefined && INFERENCE_ROUTES.has(match.name);
    const arrived = logged ? process.hrtime.bigint() : 0n;
    // Every member present from the start: one object shape, not a new one per member a handler adds.
    const ctx: RouteContext = {
      api,
      req,
      res,
      match,
      maxInputSize,
      serverHeader,
      forwardHeaders,
      json,
      dashboard,
      requestId: undefined,
      trace: undefined,
      timings: logged ? { queueNs: 0, computeNs: 0 } : undefined,
      bytesIn: undefined,
      streamedBytes: undefined,
    };
    let reply: Reply;
    let closeConnection = false;
    try {
      reply = await HANDLERS[match.name](ctx);
    } catch (err) {
      const r = toErrorReply(err, { log, requestId: ctx.requestId, method: req.method ?? '', path });
      reply = { status: r.status, headers: { 'Content-Type': JSON_TYPE }, body: r.body };
      // A body refused for its size is not drained: close the connection instead.
      closeConnection = isBodyTooLarge(err);
    }
    const trace = ctx.trace;
    const streamed = ctx.streamedBytes !== undefined;
    if (!streamed) trace?.capture('HTTP_SEND_START');
    send(res, reply, closeConnection);
    if (trace) {
      if (!streamed) trace.capture('HTTP_SEND_END');
      trace.end(streamed ? res.statusCode : reply.status);
    }
    if (logged) logAccess(ctx, reply, arrived);
  };

  const logAccess = (ctx: RouteContext, reply: Reply, arrived: bigint): void =>
    writeAccessLog(accessLog!, ctx, reply, arrived);

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    readLimit.track(req, res);
    const counted: CountedRequest | undefined = requestCounts && { endpoint: 'unmatched' };
    if (counted) res.once('finish', () => requestCounts!.http(counted.endpoint, res.statusCode));
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (log.isVerbose()) log.verbose(`HTTP request: ${req.method} ${path}`);

    const badFraming = framingError(req);
    if (badFraming !== undefined) {
      sendError(res, 400, errorBody(`malformed HTTP request: ${badFraming}`), true);
      return;
    }
    // An Upgrade request (Nereid upgrades to nothing) is answered as a plain request, but Node's parser
    // reads no further on its connection: close it after the answer, so a request pipelined behind it is
    // not left waiting forever.
    if (req.headers.upgrade !== undefined) res.setHeader('Connection', 'close');

    const mount = options.mount;
    if (mount?.claims(path) === true) {
      if (counted) counted.endpoint = 'openai';
      // The mounted API writes its own replies: the Server header goes in first. (sendReply adds it to
      // every reply that goes through it.)
      res.setHeader('Server', serverHeader);
      const refusal = connections.refusal(req.socket);
      if (refusal !== undefined) {
        sendError(res, 503, refusal, true);
        return;
      }
      turns.admit(req.socket, () => mount.handle(req, res, path));
      return;
    }

    let match: RouteMatch | undefined;
    try {
      match = matchRoute(path);
    } catch (err) {
      const reply = toErrorReply(err, { log, method: req.method ?? '', path });
      sendError(res, reply.status, reply.body);
      return;
    }
    if (match === undefined || (dashboard === undefined && DASHBOARD_ROUTES.has(match.name))) {
      sendError(res, 404, NOT_FOUND_BODY);
      return;
    }
    if (counted) counted.endpoint = endpointLabel(match.name);
    // Before the verb and the body are looked at, as in Triton. A refused request's body is not read: the
    // connection closes after the 403 instead of draining what an unauthorised client sends.
    const restriction = unrestricted
      ? undefined
      : refusingRestriction(restricted, restrictedAlso, match.name, req);
    if (restriction !== undefined) {
      const hasBody = (declaredLength(req) ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
      sendError(res, 403, errorBody(restriction.message), hasBody);
      return;
    }
    if (!methodAllowed(match.method, req.method)) {
      send(res, {
        status: 405,
        headers: { 'Content-Type': JSON_TYPE, Allow: match.method.replace(',', ', ') },
        body: METHOD_NOT_ALLOWED_BODY,
      });
      return;
    }
    const declared = declaredLength(req);
    if (declared !== undefined && declared > maxInputSize) {
      sendError(res, 400, errorBody(bodyTooLarge(declared, maxInputSize).message), true);
      return;
    }
    // Health checks first: never refused for the connection cap, never waiting for a turn.
    const health = match.name === 'serverLive' || match.name === 'serverReady' || match.name === 'modelReady';
    const refusal = connections.refusal(req.socket);
    if (refusal !== undefined) {
      if (!health) {
        sendError(res, 503, refusal, true);
        return;
      }
      res.setHeader('Connection', 'close');
    }
    // generate_stream writes its reply itself (generate.ts): the Server header goes in first.
    if (match.name === 'modelGenerateStream') res.setHeader('Server', serverHeader);
    if (health) void dispatch(req, res, match, path);
    else turns.admit(req.socket, () => void dispatch(req, res, match, path));
  };
  const readLimit = createReadLimit(options.readLimit);
  const turns = createTurnBudget(undefined, (socket) => readLimit.resume(socket));

  const server = createHttpServer({ noDelay: true, keepAliveTimeout: 60_000 }, handle, options.tls);
  const connections = limitConnections(server, {
    max: maxConnections,
    maxPerAddress: maxConnectionsPerAddress,
    overCapBody,
    overShareBody,
    tls: options.tls !== undefined,
  });
  server.on('connection', () => turns.connected());

  answerBeforeRoutes(server, maxInputSize, serverHeader, handle, sendError);

  return {
    listen: () =>
      listen(
        server,
        'HTTP',
        { address: options.address, port: options.port, backlog: options.backlog ?? DEFAULT_BACKLOG },
        log,
      ),

    drain: () => {
      closing = true;
    },

    close: async () => {
      await new Promise<void>((resolve) => {
        closing = true;
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        // Idle keep-alive sockets go now; busy ones close after their reply (Connection: close).
        server.closeIdleConnections();
      });
      await json.close();
    },
  };
}
