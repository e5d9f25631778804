// @ts-check
/**
 * The dashboard's calls to the server: the public KServe v2 HTTP API (the same one any client uses), and
 * Nereid's read-only routes /dashboard/api/server, /dashboard/api/metrics and /dashboard/api/logs. Every call is
 * same-origin; requests with a body send JSON, so a browser never makes one of them for another site's
 * page without a CORS preflight, which the server does not grant. Errors carry the server's message.
 */

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<Response>}
 */
async function call(path, init) {
  const res = await fetch(path, { cache: 'no-store', credentials: 'same-origin', ...init });
  if (res.ok) return res;
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = /** @type {{error?: unknown}} */ (await res.json());
    if (typeof body.error === 'string') message = body.error;
  } catch {
    // not JSON: keep the status line
  }
  throw new ApiError(res.status, message);
}

/**
 * @param {string} path
 * @returns {Promise<any>}
 */
export async function getJson(path) {
  return (await call(path)).json();
}

/**
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<any>}
 */
export async function postJson(path, body) {
  const res = await call(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return text === '' ? {} : JSON.parse(text);
}

/** @param {string} model */
export const modelPath = (model) => `/v2/models/${encodeURIComponent(model)}`;

export const api = {
  serverInfo: () => getJson('/dashboard/api/server'),
  serverMetadata: () => getJson('/v2'),
  /** @returns {Promise<{name: string, version?: string, state?: string, reason?: string}[]>} */
  index: () => postJson('/v2/repository/index', {}),
  stats: () => getJson('/v2/models/stats'),
  /** @param {string} model */
  config: (model) => getJson(`${modelPath(model)}/config`),
  /** @param {string} model */
  metadata: (model) => getJson(modelPath(model)),
  /** @param {string} model */
  load: (model) => postJson(`/v2/repository/models/${encodeURIComponent(model)}/load`, {}),
  /** @param {string} model */
  unload: (model) => postJson(`/v2/repository/models/${encodeURIComponent(model)}/unload`, {}),
  /**
   * @param {string} model
   * @param {unknown} body
   */
  infer: (model, body) => postJson(`${modelPath(model)}/infer`, body),
  /**
   * A decoupled model's responses through generate_stream (server-sent events): every event's JSON.
   * @param {string} model
   * @param {unknown} body
   * @returns {Promise<unknown[]>}
   */
  generateStream: async (model, body) => {
    const res = await call(`${modelPath(model)}/generate_stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const events = [];
    for (const line of (await res.text()).split('\n')) {
      if (!line.startsWith('data:')) continue;
      const event = JSON.parse(line.slice(5));
      if (typeof event?.error === 'string') throw new ApiError(res.status, event.error);
      events.push(event);
    }
    return events;
  },
  metrics: async () => (await call('/dashboard/api/metrics')).text(),
  /** @returns {Promise<{lines: import('./logs.js').LogLine[]}>} */
  logs: () => getJson('/dashboard/api/logs'),
};

/**
 * @typedef {{ name: string, labels: Record<string, string>, value: number }} Sample
 */

/**
 * Prometheus text exposition (version 0.0.4) → samples; comments and malformed lines are skipped.
 * Label values may hold escaped quotes, backslashes and newlines, and any other character.
 * @param {string} text
 * @returns {Sample[]}
 */
export function parseMetrics(text) {
  /** @type {Sample[]} */
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    /** @type {Record<string, string>} */
    const labels = {};
    let name;
    let rest;
    if (brace >= 0 && (space < 0 || brace < space)) {
      name = line.slice(0, brace);
      let i = brace + 1;
      for (;;) {
        while (line[i] === ',' || line[i] === ' ') i++;
        if (line[i] === '}' || i >= line.length) break;
        const eq = line.indexOf('="', i);
        if (eq < 0) break;
        const key = line.slice(i, eq);
        let value = '';
        i = eq + 2;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < line.length) {
            const n = line[i + 1];
            value += n === 'n' ? '\n' : n;
            i += 2;
          } else {
            value += line[i++];
          }
        }
        labels[key] = value;
        i++;
      }
      rest = line.slice(line.indexOf('}', i) + 1);
    } else {
      name = line.slice(0, space);
      rest = line.slice(space);
    }
    const value = Number(rest.trim().split(' ')[0]);
    if (name !== '' && !Number.isNaN(value)) out.push({ name, labels, value });
  }
  return out;
}
