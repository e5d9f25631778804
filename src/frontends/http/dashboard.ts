/**
 * The operator's dashboard on the HTTP port (docs/dashboard.md): the page's static files under
 * GET /dashboard/, and three read-only routes the page reads besides the public v2 API —
 * /dashboard/api/server (identity, uptime, options in effect; the caller hands over a document already free
 * of secrets, see compose/dashboard-info.ts) and /dashboard/api/metrics (the metrics endpoint's text, for what
 * the statistics API lacks: failure reasons and latency quantiles), and /dashboard/api/logs (the last log lines).
 *
 * The files are read once, on first use, into a table keyed by exact name: a request names a key, never a
 * path, so nothing it sends can reach another file. Every reply carries a Content-Security-Policy that lets
 * the page load only its own files and talk only to its own origin.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NereidError, notFound, unavailable } from '../../common/errors.js';
import type { LogEntry } from '../../common/log-ring.js';
import { PACKAGE_NAME } from '../../common/product.js';
import type { DashboardRoutes, Reply } from './route-context.js';

export interface DashboardOptions {
  /** The body of GET /dashboard/api/server: what the server says about itself, with secrets left out. */
  readonly info: () => object;
  /** The metrics endpoint's text now; absent when metrics are off (`--allow-metrics=false`). */
  readonly metrics?: () => Promise<string>;
  /** The server's last log lines, secrets masked (compose/dashboard-info.ts). */
  readonly logs?: () => readonly LogEntry[];
  /** The package's root folder (tests); default: the folder of the package.json above this module. */
  readonly packageRoot?: string;
}

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
};

/**
 * Only the page's own files, only its own origin; uPlot styles its canvases through the CSSOM, which
 * style-src does not govern, so no 'unsafe-inline' is needed.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

/** The folder holding the package.json named "nereid" at or above this module (src/ or dist/src/). */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
      } catch {
        // not ours: keep walking up
      }
    }
    const up = dirname(dir);
    if (up === dir) throw unavailable(`the dashboard cannot find the ${PACKAGE_NAME} package folder`);
    dir = up;
  }
}

function asset(file: string, body: Buffer): Asset {
  const ext = file.slice(file.lastIndexOf('.') + 1);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, type: TYPES[ext] ?? 'application/octet-stream', etag };
}

/**
 * The file table: the page's own files as they are in the package's dashboard/ folder (plain HTML, CSS and
 * JavaScript modules: nothing to build), and uPlot's two files from its npm package, wherever npm put it.
 */
function loadAssets(root: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  const add = (key: string, path: string): void => {
    files.set(key, asset(path, readFileSync(path)));
  };
  const page = join(root, 'dashboard');
  add('', join(page, 'index.html'));
  for (const name of readdirSync(page)) {
    if (name.endsWith('.js') || name.endsWith('.css')) add(name, join(page, name));
  }
  const require = createRequire(join(root, 'package.json'));
  add('vendor/uPlot.iife.min.js', require.resolve('uplot/dist/uPlot.iife.min.js'));
  add('vendor/uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css'));
  return files;
}

export class Dashboard implements DashboardRoutes {
  private assets: Map<string, Asset> | undefined;

  constructor(private readonly options: DashboardOptions) {}

  /** GET /dashboard[/<file>]: bare /dashboard redirects to /dashboard/ so the page's relative URLs work. */
  page(file: string | undefined, ifNoneMatch: string | undefined): Reply {
    if (file === undefined) {
      return { status: 308, headers: { Location: '/dashboard/', ...SECURITY_HEADERS } };
    }
    // Read on first use (a server that never shows the page never reads it); a failed read is not
    // remembered, and answers 503 with the reason.
    try {
      this.assets ??= loadAssets(this.options.packageRoot ?? findPackageRoot());
    } catch (err) {
      if (err instanceof NereidError) throw err;
      throw unavailable(
        `the dashboard's files are missing from this installation: ${(err as Error).message}`,
      );
    }
    const found = this.assets.get(file);
    if (found === undefined) throw notFound(`no dashboard file '${file}'`);
    // no-cache: revalidate each time (a cheap 304), so an upgraded server never runs an old page.
    const headers = { ...SECURITY_HEADERS, 'Cache-Control': 'no-cache', ETag: found.etag };
    if (ifNoneMatch === found.etag) return { status: 304, headers };
    return { status: 200, headers: { ...headers, 'Content-Type': found.type }, body: found.body };
  }

  /** GET /dashboard/api/server */
  server(): Reply {
    return {
      status: 200,
      headers: { ...SECURITY_HEADERS, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
      body: JSON.stringify(this.options.info()),
    };
  }

  /** GET /dashboard/api/logs: the last log lines, oldest first, as JSON fields (the page shows them as text). */
  logs(): Reply {
    return {
      status: 200,
      headers: { ...SECURITY_HEADERS, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
      body: JSON.stringify({ lines: this.options.logs?.() ?? [] }),
    };
  }

  /** GET /dashboard/api/metrics: the Prometheus text, as the metrics port would answer now. */
  async metrics(): Promise<Reply> {
    if (this.options.metrics === undefined) {
      throw notFound('metrics are off on this server (--allow-metrics=false)');
    }
    return {
      status: 200,
      headers: {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/plain; version=0.0.4; charset=utf-8',
        'Cache-Control': 'no-store',
      },
      body: await this.options.metrics(),
    };
  }
}
