/**
 * Scrapes under a crowd (issue 33): 200 clients scraping /metrics in a loop rendered the whole exposition
 * for each of them on the event loop, and pushed health checks to a p50 of 491 ms. A scraper that asks a
 * few times a second gets a fresh render every time; once more than `burst` scrapes arrive within one
 * `windowMs`, the rest of that window is answered with the text rendered last (at most `windowMs` old), so
 * a crowd costs about one render per window. Renders that overlap are shared.
 */
export interface ScrapeCacheOptions {
  /** Scrapes rendered fresh in one window before the last text is reused. */
  readonly burst: number;
  /** The window, and the oldest a reused text may be, in ms. */
  readonly windowMs: number;
  readonly now: () => number;
}

export const DEFAULT_SCRAPE_CACHE: ScrapeCacheOptions = {
  burst: 10,
  windowMs: 1000,
  now: () => performance.now(),
};

export class ScrapeCache {
  private windowStart = -Infinity;
  private inWindow = 0;
  private last: { text: string; at: number } | undefined;
  private running: Promise<string> | undefined;

  constructor(
    private readonly render: () => Promise<string>,
    private readonly options: ScrapeCacheOptions = DEFAULT_SCRAPE_CACHE,
  ) {}

  scrape(): Promise<string> {
    const { burst, windowMs, now } = this.options;
    const t = now();
    if (t - this.windowStart >= windowMs) {
      this.windowStart = t;
      this.inWindow = 0;
    }
    this.inWindow++;
    if (this.inWindow > burst && this.last !== undefined && t - this.last.at < windowMs) {
      return Promise.resolve(this.last.text);
    }
    if (this.running !== undefined) return this.running;
    const running = this.render().then((text) => {
      this.last = { text, at: t };
      return text;
    });
    this.running = running;
    const clear = (): void => {
      if (this.running === running) this.running = undefined;
    };
    running.then(clear, clear);
    return running;
  }
}
