// @ts-check
/**
 * Small live line charts over the last minutes, drawn with uPlot (the vendored file /dashboard/vendor/,
 * from the uplot npm package: no CDN). The points live in a History per scope (kept while another scope
 * is shown); each container also says in data-* attributes how many points it shows, the largest value
 * and the time axis's span, so a glance (or a test) can tell a chart that moves from one that does not.
 */
import { el } from './dom.js';

/** How long a chart remembers, in seconds. */
export const WINDOW_SECONDS = 300;

/**
 * @typedef {{ label: string, unit: string }} SeriesSpec
 */

const COLOURS = ['#2f6fde', '#d9480f', '#2b8a3e', '#7048e8', '#c2255c'];

/**
 * The points of one chart for one scope (a model, or all models), kept while another scope is shown, so
 * selecting a model shows its history instead of starting over.
 */
export class History {
  /** @param {number} seriesCount */
  constructor(seriesCount) {
    /** @type {number[]} */
    this.times = [];
    /** @type {(number | null)[][]} */
    this.values = Array.from({ length: seriesCount }, () => []);
  }

  /**
   * Adds one point per series at time `t` (seconds since the epoch); null is a gap. Points older than
   * the window are dropped.
   * @param {number} t
   * @param {(number | null)[]} values
   */
  push(t, values) {
    this.times.push(t);
    values.forEach((v, i) => this.values[i].push(v));
    while (this.times.length > 0 && this.times[0] < t - WINDOW_SECONDS) {
      this.times.shift();
      for (const v of this.values) v.shift();
    }
  }
}

export class LiveChart {
  /**
   * @param {string} title
   * @param {SeriesSpec[]} series
   * @param {string} id the container's id (for the page's tests and styles)
   */
  constructor(title, series, id) {
    this.series = series;
    /** @type {History} */
    this.history = new History(series.length);
    /** The right end of the time axis (seconds): the latest poll, whether or not it added a point. */
    this.now = Date.now() / 1000;
    this.plotBox = el('div', { class: 'plot' });
    this.node = el(
      'figure',
      { class: 'chart', id, 'data-points': 0, 'data-max': 0 },
      el('figcaption', {}, title),
      this.plotBox,
    );
    /** @type {any} */
    this.plot = undefined;
  }

  /**
   * Shows a scope's history; the time axis always spans the last WINDOW_SECONDS up to `now`, so a chart
   * with one point or none still has a sensible axis.
   * @param {History} history
   * @param {number} now seconds since the epoch
   */
  show(history, now) {
    this.history = history;
    this.now = now;
    let max = 0;
    for (const vs of history.values) for (const v of vs) if (v !== null && v > max) max = v;
    this.node.dataset.points = String(history.times.length);
    this.node.dataset.max = String(max);
    // Each series' largest value, or null when it has none in the window (a line the chart does not draw).
    this.node.dataset.seriesMax = JSON.stringify(
      history.values.map((vs) =>
        vs.reduce(
          (/** @type {number | null} */ m, v) => (v === null ? m : m === null || v > m ? v : m),
          null,
        ),
      ),
    );
    this.node.dataset.xMin = String(Math.round(now - WINDOW_SECONDS));
    this.node.dataset.xMax = String(Math.round(now));
    this.draw();
  }

  draw() {
    /** @type {any} */
    const uPlot = /** @type {any} */ (globalThis).uPlot;
    const data = [this.history.times, ...this.history.values];
    if (uPlot === undefined) return; // the vendored script failed to load: the figures still update
    if (this.plot === undefined) {
      const width = Math.max(280, this.plotBox.clientWidth || 420);
      this.plot = new uPlot(
        {
          width,
          height: 160,
          legend: { live: false },
          cursor: { show: false },
          scales: {
            x: {
              time: true,
              range: () => [this.now - WINDOW_SECONDS, this.now],
            },
            y: {
              range: (/** @type {unknown} */ _u, /** @type {number} */ _min, /** @type {number} */ max) => [
                0,
                max > 0 ? max * 1.1 : 1,
              ],
            },
          },
          axes: [{}, { size: 56 }],
          series: [
            {},
            ...this.series.map((s, i) => ({
              label: `${s.label} (${s.unit})`,
              stroke: COLOURS[i % COLOURS.length],
              width: 1.5,
              spanGaps: false,
            })),
          ],
        },
        data,
        this.plotBox,
      );
    } else {
      this.plot.setData(data);
    }
  }
}
