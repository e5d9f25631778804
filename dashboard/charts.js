// @ts-check
/**
 * Small live line charts over the last minutes, drawn with uPlot (the vendored file /dashboard/vendor/,
 * from the uplot npm package: no CDN). A chart keeps its own window of points; each container also says
 * in data-* attributes how many points it holds and the largest value in the window, so a glance (or a
 * test) can tell a chart that moves from one that does not.
 */
import { el } from './dom.js';

/** How long a chart remembers, in seconds. */
export const WINDOW_SECONDS = 300;

/**
 * @typedef {{ label: string, unit: string }} SeriesSpec
 */

const COLOURS = ['#2f6fde', '#d9480f', '#2b8a3e', '#7048e8', '#c2255c'];

export class LiveChart {
  /**
   * @param {string} title
   * @param {SeriesSpec[]} series
   * @param {string} id the container's id (for the page's tests and styles)
   */
  constructor(title, series, id) {
    this.series = series;
    /** @type {number[]} */
    this.times = [];
    /** @type {(number | null)[][]} */
    this.values = series.map(() => []);
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
   * Adds one point per series at time `t` (seconds since the epoch); null is a gap.
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
    let max = 0;
    for (const vs of this.values) for (const v of vs) if (v !== null && v > max) max = v;
    this.node.dataset.points = String(this.times.length);
    this.node.dataset.max = String(max);
    this.draw();
  }

  /** Forget everything (another model was selected). */
  clear() {
    this.times = [];
    this.values = this.series.map(() => []);
    this.node.dataset.points = '0';
    this.node.dataset.max = '0';
    this.draw();
  }

  draw() {
    /** @type {any} */
    const uPlot = /** @type {any} */ (globalThis).uPlot;
    const data = [this.times, ...this.values];
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
            x: { time: true },
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
