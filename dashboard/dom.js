// @ts-check
/**
 * The dashboard's only way to make DOM: elements with text children, never HTML strings. Model names,
 * reasons and config strings come from repository folders and files, which may be hostile; text nodes
 * cannot become markup, so nothing here needs escaping and nothing can be forgotten.
 */

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @typedef {Record<string, string | number | boolean | undefined>} Attrs
 */

/**
 * An element with attributes (name → value; a boolean true sets an empty attribute, false/undefined
 * leaves it out) and children (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    e.setAttribute(name, value === true ? '' : String(value));
  }
  append(e, children);
  return e;
}

/**
 * @param {Node} parent
 * @param {(Child | Child[])[]} children
 */
function append(parent, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(
      typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c,
    );
  }
}

/**
 * Replaces everything inside `parent` with `children`.
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function fill(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * The element with this id; a missing one is a bug in index.html, said loudly.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`index.html has no #${id}`);
  return e;
}

/**
 * A two-column table of label → value rows; values that are not nodes are shown as text.
 * @param {[string, Child | Child[]][]} rows
 */
export function facts(rows) {
  return el(
    'table',
    { class: 'facts' },
    el('tbody', {}, ...rows.map(([k, v]) => el('tr', {}, el('th', { scope: 'row' }, k), el('td', {}, v)))),
  );
}

/**
 * A table with a header row; every cell, heading or not, is text or a node.
 * @param {Child[]} head
 * @param {(Child | Child[])[][]} rows
 * @param {Attrs} [attrs]
 */
export function table(head, rows, attrs = {}) {
  return el(
    'table',
    attrs,
    el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
  );
}

/** @param {number} seconds */
export function duration(seconds) {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = d > 0 ? [`${d}d`, `${h}h`, `${m}m`] : h > 0 ? [`${h}h`, `${m}m`] : [`${m}m`];
  return `${parts.join(' ')} ${s % 60}s`;
}
