// @ts-check
/**
 * The request tester: a form built from a model's metadata (one field per input: its shape, with -1
 * dimensions made editable, and its values), or the same request as editable JSON; it sends the request
 * to the model's /infer route — or, for a decoupled model (which /infer refuses), to generate_stream —
 * and shows the response(s) and the round trip as the browser measured it. Inputs the config marks
 * optional start empty and are left out while empty.
 */
import { api, ApiError } from './api.js';
import { el, fill } from './dom.js';

/**
 * @typedef {{ name: string, datatype: string, shape: number[] }} TensorMeta
 * @typedef {{ name: string, inputs?: TensorMeta[], outputs?: TensorMeta[] }} ModelMeta
 * @typedef {{ decoupled?: boolean, optional?: Set<string> }} ModelTraits what the config adds
 */

/** @param {number[]} shape */
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * Example values for a tensor of `n` elements (all of them: a shape's every element must be given), so
 * the first click sends something valid.
 * @param {string} datatype
 * @param {number} n
 */
function example(datatype, n) {
  const k = n;
  if (datatype === 'BYTES') return Array.from({ length: k }, (_, i) => `text ${i}`).join(', ');
  if (datatype === 'BOOL') return Array.from({ length: k }, (_, i) => String(i % 2 === 0)).join(', ');
  return Array.from({ length: k }, (_, i) => String(i % 128)).join(', ');
}

/**
 * The values typed in a field: a JSON array (nested or flat), or a comma-separated list; BYTES items are
 * strings, BOOL items true/false, other types numbers.
 * @param {string} text
 * @param {string} datatype
 * @returns {unknown[]}
 */
export function parseValues(text, datatype) {
  const t = text.trim();
  if (t.startsWith('[')) return /** @type {unknown[]} */ (JSON.parse(t)).flat(Infinity);
  const items = t === '' ? [] : t.split(',').map((s) => s.trim());
  if (datatype === 'BYTES') return items;
  if (datatype === 'BOOL') {
    return items.map((s) => {
      if (s !== 'true' && s !== 'false') throw new Error(`'${s}' is not true or false`);
      return s === 'true';
    });
  }
  return items.map((s) => {
    const v = Number(s);
    if (s === '' || Number.isNaN(v)) throw new Error(`'${s}' is not a number`);
    return v;
  });
}

/** @param {string} s */
const parseShape = (s) =>
  s
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '')
    .map((d) => {
      const v = Number(d);
      if (!Number.isInteger(v) || v < 0) throw new Error(`'${d}' is not a dimension`);
      return v;
    });

export class Tester {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    /** @type {ModelMeta | undefined} */
    this.meta = undefined;
    /** @type {boolean} a decoupled model: requests go to generate_stream */
    this.decoupled = false;
  }

  /**
   * Shows the form for a model, or a note saying why there is none.
   * @param {ModelMeta | undefined} meta
   * @param {string} [note]
   * @param {ModelTraits} [traits]
   */
  show(meta, note, traits = {}) {
    this.meta = meta;
    this.decoupled = traits.decoupled === true;
    if (meta === undefined) {
      fill(this.root, el('p', { class: 'note' }, note ?? 'Select a ready model to try a request.'));
      return;
    }
    const fields = (meta.inputs ?? []).map((input) => {
      const shape = input.shape.map((d) => (d < 0 ? 1 : d));
      const optional = traits.optional?.has(input.name) === true;
      return el(
        'fieldset',
        {
          class: 'input',
          'data-input': input.name,
          'data-datatype': input.datatype,
          'data-optional': optional,
        },
        el('legend', {}, `${input.name} · ${input.datatype} · [${input.shape.join(', ')}]`),
        el(
          'label',
          {},
          'shape ',
          el('input', {
            class: 'shape',
            value: shape.join(', '),
            readonly: !input.shape.some((d) => d < 0),
            'aria-label': `shape of ${input.name}`,
          }),
        ),
        el(
          'label',
          {},
          'values ',
          el(
            'textarea',
            {
              class: 'values',
              rows: 2,
              'aria-label': `values of ${input.name}`,
              placeholder: optional ? 'optional: left out while empty' : undefined,
            },
            optional ? '' : example(input.datatype, count(shape)),
          ),
        ),
      );
    });
    const json = el('textarea', {
      id: 'tester-json',
      rows: 10,
      spellcheck: false,
      'aria-label': 'request as JSON',
    });
    const jsonMode = el('input', { type: 'checkbox', id: 'tester-json-mode' });
    const send = el('button', { type: 'button', id: 'tester-send' }, 'Send request');
    const out = el('div', { id: 'tester-result', 'aria-live': 'polite' });
    jsonMode.addEventListener('change', () => {
      json.hidden = !jsonMode.checked;
      for (const f of fields) f.hidden = jsonMode.checked;
      if (jsonMode.checked) {
        try {
          json.value = JSON.stringify(this.build(fields), null, 2);
        } catch (err) {
          json.value = '';
          fill(out, el('p', { class: 'error' }, String(/** @type {Error} */ (err).message)));
        }
      }
    });
    json.hidden = true;
    send.addEventListener('click', () => {
      void this.send(
        meta.name,
        () => (jsonMode.checked ? JSON.parse(json.value) : this.build(fields)),
        out,
        send,
      );
    });
    fill(
      this.root,
      el(
        'p',
        {},
        'Request to ',
        el('code', {}, meta.name),
        this.decoupled
          ? ' (decoupled: POST /v2/models/…/generate_stream, every response shown).'
          : ' (POST /v2/models/…/infer, JSON).',
      ),
      ...fields,
      el('label', { class: 'inline' }, jsonMode, ' edit as JSON'),
      json,
      el('p', {}, send),
      out,
    );
  }

  /**
   * The request body from the typed fields.
   * @param {HTMLFieldSetElement[]} fields
   */
  build(fields) {
    const inputs = fields.flatMap((f) => {
      const name = f.dataset.input ?? '';
      const datatype = f.dataset.datatype ?? '';
      const text = /** @type {HTMLTextAreaElement} */ (f.querySelector('.values')).value;
      if (f.dataset.optional !== undefined && text.trim() === '') return [];
      const shape = parseShape(/** @type {HTMLInputElement} */ (f.querySelector('.shape')).value);
      const data = parseValues(text, datatype);
      if (data.length !== count(shape)) {
        throw new Error(
          `${name}: shape [${shape.join(', ')}] holds ${count(shape)} values, ${data.length} given`,
        );
      }
      return [{ name, shape, datatype, data }];
    });
    return { inputs, outputs: (this.meta?.outputs ?? []).map((o) => ({ name: o.name })) };
  }

  /**
   * The generate_stream body for the same inputs: each input by name, one element as itself.
   * @param {{ inputs: { name: string, data: unknown[] }[] }} request
   */
  static generateBody(request) {
    return Object.fromEntries(request.inputs.map((i) => [i.name, i.data.length === 1 ? i.data[0] : i.data]));
  }

  /**
   * @param {string} model
   * @param {() => unknown} body
   * @param {HTMLElement} out
   * @param {HTMLButtonElement} button
   */
  async send(model, body, out, button) {
    let request;
    try {
      request = body();
    } catch (err) {
      fill(out, el('p', { class: 'error' }, `Not sent: ${/** @type {Error} */ (err).message}`));
      return;
    }
    button.disabled = true;
    const start = performance.now();
    try {
      const decoupled = this.decoupled === true;
      const response = decoupled
        ? await api.generateStream(
            model,
            Tester.generateBody(/** @type {{ inputs: { name: string, data: unknown[] }[] }} */ (request)),
          )
        : await api.infer(model, request);
      const ms = performance.now() - start;
      const what = decoupled ? `, ${/** @type {unknown[]} */ (response).length} responses` : '';
      fill(
        out,
        el(
          'p',
          { class: 'ok', id: 'tester-latency' },
          `200 OK in ${ms.toFixed(1)} ms (round trip, measured by the browser${what})`,
        ),
        el('pre', { id: 'tester-response' }, JSON.stringify(response, null, 2)),
      );
    } catch (err) {
      const ms = performance.now() - start;
      const status = err instanceof ApiError ? `${err.status} ` : '';
      fill(
        out,
        el(
          'p',
          { class: 'error', id: 'tester-error' },
          `${status}after ${ms.toFixed(1)} ms: ${/** @type {Error} */ (err).message}`,
        ),
      );
    } finally {
      button.disabled = false;
    }
  }
}
