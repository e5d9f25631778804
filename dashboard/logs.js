// @ts-check
/**
 * The server's recent log lines (GET /dashboard/api/logs: the last few hundred, secrets masked by the
 * server), newest first, filterable by level (at least INFO, WARNING or ERROR) and by model (lines whose
 * message names it). Every field is shown as text: a message is whatever a model or a client made the
 * server write.
 */
import { api, ApiError } from './api.js';
import { el, fill, table } from './dom.js';

/**
 * @typedef {{seq: number, time: string, level: 'INFO' | 'WARNING' | 'ERROR', file: string, line: number,
 *   message: string}} LogLine
 */

/** Lines drawn at most (the server keeps more; the filters choose among them). */
const SHOWN = 200;
const RANK = { INFO: 0, WARNING: 1, ERROR: 2 };

export class LogView {
  /** @param {HTMLElement} box */
  constructor(box) {
    this.box = box;
    /** @type {LogLine[]} */
    this.lines = [];
    this.level = el(
      'select',
      { id: 'logs-level', 'aria-label': 'level' },
      el('option', { value: 'INFO' }, 'all levels'),
      el('option', { value: 'WARNING' }, 'warnings and errors'),
      el('option', { value: 'ERROR' }, 'errors'),
    );
    this.model = el(
      'select',
      { id: 'logs-model', 'aria-label': 'model' },
      el('option', { value: '' }, 'all models'),
    );
    this.body = el('div', { id: 'logs-lines' }, el('p', { class: 'note' }, 'Reading…'));
    this.level.addEventListener('change', () => this.render());
    this.model.addEventListener('change', () => this.render());
    fill(box, el('p', { class: 'filters' }, 'Show ', this.level, ' for ', this.model), this.body);
  }

  /**
   * Reads the lines again, and offers every model of the index in the model filter.
   * @param {string[]} models
   */
  async refresh(models) {
    const known = new Set([...this.model.options].map((o) => o.value));
    for (const m of models)
      if (!known.has(m)) {
        this.model.append(el('option', { value: m }, m));
        known.add(m);
      }
    try {
      this.lines = (await api.logs()).lines;
      this.error = undefined;
    } catch (err) {
      this.error = err instanceof ApiError ? err.message : String(err);
    }
    this.render();
  }

  render() {
    if (this.error !== undefined) {
      fill(this.body, el('p', { class: 'error' }, `Log lines: ${this.error}`));
      return;
    }
    const min = RANK[/** @type {'INFO' | 'WARNING' | 'ERROR'} */ (this.level.value)] ?? 0;
    const model = this.model.value;
    const picked = this.lines
      .filter((l) => (RANK[l.level] ?? 0) >= min && (model === '' || l.message.includes(model)))
      .slice(-SHOWN)
      .reverse();
    fill(
      this.body,
      picked.length === 0
        ? el('p', { class: 'note' }, 'no lines')
        : table(
            ['Time (UTC)', 'Level', 'Where', 'Message'],
            picked.map((l) => [
              l.time.slice(11, 23),
              el('span', { class: `level level-${l.level.toLowerCase()}` }, l.level),
              `${l.file}:${l.line}`,
              el('span', { class: 'message' }, l.message),
            ]),
            { id: 'logs-table', 'data-lines': picked.length },
          ),
    );
  }
}
