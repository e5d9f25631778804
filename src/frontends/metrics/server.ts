/**
 * The metrics endpoint: `GET /metrics` on its own port (Triton's 8002) in Prometheus text format — Triton's
 * nv_* families first, then the families models defined themselves (custom.ts), then the Node process
 * metrics of prom-client under their standard `process_` and `nodejs_` names. Everything model-related is read from the core at scrape time, host values come from a
 * poller running every --metrics-interval-ms, and per-request observers exist only while summaries or
 * histograms are switched on.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../../common/logger.js';
import type { CacheMetrics, MetricsSource, ModelCustomMetrics } from '../../core/index.js';
import { listen } from '../listen.js';
import { metricsSettings, type MetricsSettings } from './config.js';
import { ReservedNames, renderCustomMetrics } from './custom.js';
import { CONTENT_TYPE } from './exposition.js';
import { FAMILIES } from './families.js';
import { LatencyTracker } from './latency.js';
import { renderMetrics, type OperatorValues } from './render.js';
import { ScrapeCache, type ScrapeCacheOptions } from './scrape-cache.js';
import { SystemPoller } from './system.js';

export interface MetricsFrontendOptions {
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly log: Logger;
  /** --metrics-interval-ms: how often the per-interval (host) metrics are refreshed; default 2000. */
  readonly intervalMs?: number;
  /** --metrics-config settings. */
  readonly config?: ReadonlyMap<string, string>;
  /** --allow-cpu-metrics; default true. */
  readonly cpuMetrics?: boolean;
  /** Directory read for host metrics (tests); default /proc. */
  readonly procRoot?: string;
  /**
   * The metric families models defined (InferenceServer.customMetrics), asked at every scrape; each model
   * gets `customMetricsTimeoutMs` to answer. Absent: no custom families.
   */
  readonly customMetrics?: (timeoutMs: number) => Promise<readonly ModelCustomMetrics[]>;
  /** Bound on how long a scrape waits for a model's custom metrics; default 2000 ms. */
  readonly customMetricsTimeoutMs?: number;
  /** When the port reuses the last scrape's text under a crowd of scrapers (tests); default 10 a second. */
  readonly scrapeCache?: ScrapeCacheOptions;
  /** The response cache's counters, read at every scrape; absent when the server has no cache. */
  readonly cacheMetrics?: () => CacheMetrics;
  /** Nereid's operator families (build info, model states, requests by status), read at every scrape. */
  readonly operator?: () => OperatorValues;
}

/** Distinct problems logged per frontend, at most: a model inventing names cannot grow the log or memory. */
const MAX_LOGGED_PROBLEMS = 1000;
/** Beyond the per-model timeout, how long the custom-metrics source itself may take. */
const SOURCE_GRACE_MS = 500;

export interface MetricsFrontend {
  readonly settings: MetricsSettings;
  /** Starts the poller and listens; resolves with the bound address and port. */
  listen(): Promise<{ address: string; port: number }>;
  /** The text a scrape returns now. */
  scrape(): Promise<string>;
  /** Stops listening and polling, and stops observing requests. */
  close(): Promise<void>;
}

const METRICS_PATH = /^\/metrics\/?$/;

/**
 * How often the event-loop lag (`nodejs_eventloop_lag_*`) is sampled. prom-client's default, 10 ms, is a
 * native timer that woke an idle server's event loop 100 times a second (about 96 of its ~100 epoll waits a
 * second with no model loaded, issue 29); ten samples a second still catch any stall longer than 100 ms, and
 * each sample measures its own delay exactly.
 */
const EVENT_LOOP_LAG_SAMPLE_MS = 100;

/** prom-client's Node process metrics, and every family name a model may not take (Triton's and those). */
function processMetrics(): { processRegistry: Registry; reserved: ReservedNames } {
  const processRegistry = new Registry();
  collectDefaultMetrics({
    register: processRegistry,
    eventLoopMonitoringPrecision: EVENT_LOOP_LAG_SAMPLE_MS,
  });
  const reserved = new ReservedNames([
    ...Object.values(FAMILIES).map((f) => f.name),
    ...processRegistry.getMetricsAsArray().map((m) => m.name),
  ]);
  return { processRegistry, reserved };
}

/** Logs each distinct problem once, and at most MAX_LOGGED_PROBLEMS of them. */
function warnOnceLogger(log: Logger): (message: string) => void {
  const logged = new Set<string>();
  return (message) => {
    if (logged.has(message) || logged.size >= MAX_LOGGED_PROBLEMS) return;
    logged.add(message);
    log.warn(message);
  };
}

/**
 * The families models defined, as exposition text: each model is bounded by `timeoutMs` (by the source),
 * the source itself a little longer; what cannot be collected or rendered is left out and logged once.
 */
async function customMetricsText(
  customMetrics: MetricsFrontendOptions['customMetrics'],
  customTimeoutMs: number,
  reserved: ReservedNames,
  warnOnce: (message: string) => void,
): Promise<string> {
  if (!customMetrics) return '';
  let models: readonly ModelCustomMetrics[];
  let timer: NodeJS.Timeout | undefined;
  // The source bounds each model by the timeout; this bounds the source itself, should it not.
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${customTimeoutMs + SOURCE_GRACE_MS} ms`)),
      customTimeoutMs + SOURCE_GRACE_MS,
    );
  });
  try {
    models = await Promise.race([customMetrics(customTimeoutMs), late]);
  } catch (err) {
    warnOnce(`custom metrics could not be collected: ${String(err)}`);
    return '';
  } finally {
    clearTimeout(timer);
  }
  for (const m of models) {
    if (m.error !== undefined) {
      warnOnce(`custom metrics of model '${m.model}' version ${m.version} left out: ${m.error}`);
    }
  }
  const { text, problems } = renderCustomMetrics(models, reserved);
  for (const p of problems) warnOnce(p);
  return text;
}

/**
 * The one route: `GET /metrics` answers with a scrape; other paths 404, other verbs 405 (HEAD included, as
 * Triton's metrics port answers it).
 */
function metricsHandler(
  scrape: () => Promise<string>,
  log: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (!METRICS_PATH.test(path)) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not Found\n');
      return;
    }
    if (req.method !== 'GET') {
      res
        .writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET' })
        .end(req.method === 'HEAD' ? undefined : 'Method Not Allowed\n');
      return;
    }
    scrape().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
      },
      (err: unknown) => {
        log.error(`metrics scrape failed: ${String(err)}`);
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('metrics collection failed\n');
      },
    );
  };
}

export function createMetricsFrontend(
  source: MetricsSource,
  options: MetricsFrontendOptions,
): MetricsFrontend {
  const { log } = options;
  const settings = metricsSettings(options.config ?? new Map(), log);
  const latency =
    settings.summaryLatencies || settings.histogramLatencies ? new LatencyTracker(settings) : undefined;
  const stopObserving = latency ? source.addLatencyObserver(latency) : undefined;
  const poller =
    options.cpuMetrics === false ? undefined : new SystemPoller(options.intervalMs ?? 2000, options.procRoot);
  const { processRegistry, reserved } = processMetrics();
  const warnOnce = warnOnceLogger(log);
  const customTimeoutMs = options.customMetricsTimeoutMs ?? 2000;

  const customText = (): Promise<string> =>
    customMetricsText(options.customMetrics, customTimeoutMs, reserved, warnOnce);

  const scrape = async (): Promise<string> => {
    const custom = customText();
    const nv = renderMetrics({
      series: source.metricSeries(),
      settings,
      latency,
      system: poller?.values,
      cache: options.cacheMetrics?.(),
      operator: options.operator?.(),
    });
    return nv + (await custom) + (await processRegistry.metrics());
  };

  // The port's scrapes go through the cache (a crowd of scrapers costs one render a second); `scrape`
  // itself (the dashboard, tests) always renders.
  const cache = new ScrapeCache(scrape, options.scrapeCache);
  const server = createServer(
    { keepAliveTimeout: 60_000 },
    metricsHandler(() => cache.scrape(), log),
  );
  server.on('clientError', (_err, socket) => socket.destroy());

  return {
    settings,
    scrape,
    listen: async () => {
      await poller?.start();
      try {
        return await listen(server, 'Metrics', options, log);
      } catch (err) {
        await poller?.stop();
        throw err;
      }
    },
    close: async () => {
      stopObserving?.();
      await poller?.stop();
      if (!server.listening) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
