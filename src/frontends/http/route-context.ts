/**
 * What a route handler gets (the request, its match, the server API and the frontend's limits) and what it
 * returns (a Reply the server writes). Its own module so handlers in other files (generate.ts) and the
 * route table (routes.ts) share it without importing each other.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InferenceServerApi, RequestTimings, RequestTrace } from '../../core/index.js';
import type { HeaderForwarder } from '../header-forward.js';
import type { JsonPool } from './json-pool.js';
import type { RouteMatch } from './router.js';

export interface Reply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string | number>>;
  /** Sent in order; undefined = empty body. */
  readonly body?: string | Buffer | readonly Buffer[];
}

export interface RouteContext {
  readonly api: InferenceServerApi;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly match: RouteMatch;
  readonly maxInputSize: number;
  /** The `Server` header's value, for handlers that write their reply themselves. */
  readonly serverHeader: string;
  /** Headers forwarded to models as request parameters (`--http-header-forward-pattern`), when set. */
  readonly forwardHeaders?: HeaderForwarder;
  /** Large JSON bodies: size limits, admission, parsing off the event loop. */
  readonly json: JsonPool;
  /** The operator's dashboard; undefined when it is off (the server answers 404 before any handler). */
  readonly dashboard?: DashboardRoutes;
  /** Set once known, for error logs. */
  requestId?: string;
  /** The request's trace, when it is sampled; the server sends the reply, then ends it. */
  trace?: RequestTrace;
  /** Set by the server when the access log is on: the core fills it in. */
  timings?: RequestTimings;
  /** The model version the request resolved to (the access log's `version` when the path named none). */
  resolvedVersion?: string;
  /** The request body's size once read (the access log). */
  bytesIn?: number;
  /**
   * Set by a handler that wrote its reply itself (generate_stream): the bytes it wrote; it captured its own
   * HTTP_SEND_* timestamps.
   */
  streamedBytes?: number;
}

/** What the dashboard's four routes ask of it (dashboard.ts implements it; declared here to keep no cycle). */
export interface DashboardRoutes {
  page(file: string | undefined, ifNoneMatch: string | undefined): Reply;
  server(): Reply;
  metrics(): Promise<Reply>;
  logs(): Reply;
}
