/**
 * The browser for the dashboard's end-to-end tests: Debian's chromium (scripts/setup-browser.sh installs
 * it, or says why it cannot) driven by playwright-core through its executable path. The setup runs from
 * here, so `node --test` on one file provisions what it needs, as `npm test` does.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from '../integration/harness.js';

export interface BrowserSetup {
  /** Why no browser can run here; undefined when `launch` will work. */
  readonly skip?: string;
  readonly version?: string;
  launch(): Promise<Browser>;
}

/** Runs scripts/setup-browser.sh (idempotent) and reads what it wrote. */
export function setupBrowser(): BrowserSetup {
  execFileSync('bash', [path.join(ROOT, 'scripts/setup-browser.sh')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const env: Record<string, string> = {};
  for (const line of readFileSync(path.join(ROOT, '.cache/browser.env'), 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    // The script writes `printf %q` values: plain words, or $'...' / backslash-escaped when they hold spaces.
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1).replace(/\\(.)/g, '$1');
  }
  const executablePath = env.NEREID_CHROMIUM;
  return {
    skip: env.NEREID_BROWSER_SKIP,
    version: env.NEREID_CHROMIUM_VERSION,
    launch: () => chromium.launch({ executablePath, headless: true }),
  };
}

export interface DashboardPageOptions {
  readonly width?: number;
  readonly height?: number;
  /** Every page error goes here (a test asserts it stays empty). */
  readonly errors?: string[];
  /** How long any wait on the page may take, in milliseconds. */
  readonly timeout: number;
}

/** A new page of `browser` on the dashboard at `serverUrl`, once its models table has drawn. */
export async function openDashboard(
  browser: Browser,
  serverUrl: string,
  { width = 1400, height = 1000, errors, timeout }: DashboardPageOptions,
): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height } });
  page.setDefaultTimeout(timeout);
  if (errors !== undefined) page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${serverUrl}/dashboard/`);
  await page.locator('#models-table').waitFor({ timeout });
  return page;
}
