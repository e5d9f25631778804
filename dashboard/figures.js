// @ts-check
/**
 * Each model's figures for the models table, over a sliding window of the last polls: request rate,
 * failure share, requests refused before they reached the model, queue and compute time per request, the
 * p50/p99 of the request time, its instances and whether they are busy, restarted or how much memory their
 * processes hold (Python stubs), what on-demand mode says of it (resident bytes, loads, evictions), and an
 * LLM's tokens per second and time to first token (p50/p99).
 * Counters are cumulative on the server; a figure is the difference between the window's two ends.
 * An LLM is a model that reports vLLM's metrics (the llamacpp backend does, and so does the toy_llm
 * example): `vllm:generation_tokens_total` and the `vllm:time_to_first_token_seconds` histogram.
 */

/** Seconds the models table's figures cover. */
export const WINDOW_SECONDS = 30;

/**
 * @typedef {{t: number, success: number, fail: number, refused: number, queueNs: number,
 *   computeNs: number, count: number, execs: number, tokens: number | null,
 *   ttft: Buckets | null}} Snapshot
 * @typedef {Map<number, number>} Buckets a histogram's cumulative counts by upper bound (le, +Inf too)
 * @typedef {{rate: number | null, failPct: number | null, refusedRate: number | null,
 *   queueMs: number | null, computeMs: number | null, p50: number | null, p99: number | null,
 *   instances: number | null, pending: number | null, busy: boolean | null,
 *   tokensPerSec: number | null, ttftP50: number | null, ttftP99: number | null} & Gauges} Figures
 * @typedef {{instances: number | null, pending: number | null, restarts: number | null,
 *   stubBytes: number | null, residentBytes: number | null, loads: number | null,
 *   evictions: number | null, loadSeconds: number | null}} Gauges
 * @typedef {import('./api.js').Sample} Sample
 */

/** Requests the server refused before a model ran them: Triton's REJECTED reason (queue full, timed out in the queue). */
export const REFUSED_REASON = 'REJECTED';

/** vLLM's time-to-first-token histogram (seconds), as its bucket series is named in the metrics text. */
export const TTFT_BUCKETS = 'vllm:time_to_first_token_seconds_bucket';

/**
 * The q-quantile of a histogram, interpolated linearly inside the bucket it falls in, as Prometheus's
 * histogram_quantile() does (so the page agrees with a Grafana board over the same series): the first
 * bucket starts at 0, and a quantile in the +Inf bucket is the largest finite bound. Null for no
 * observations.
 * @param {Buckets} buckets
 * @param {number} q
 * @returns {number | null}
 */
export function histogramQuantile(buckets, q) {
  const les = [...buckets.keys()].sort((a, b) => a - b);
  if (les.length === 0) return null;
  const counts = les.map((le) => buckets.get(le) ?? 0);
  const total = counts[counts.length - 1];
  if (!(total > 0)) return null;
  const rank = q * total;
  const i = counts.findIndex((c) => c >= rank);
  const upper = les[i];
  if (upper === Infinity) return les.length > 1 ? les[les.length - 2] : null;
  const lower = i === 0 ? 0 : les[i - 1];
  const below = i === 0 ? 0 : counts[i - 1];
  const inside = counts[i] - below;
  return inside > 0 ? lower + ((upper - lower) * (rank - below)) / inside : upper;
}

/**
 * Observations that arrived between two cumulative snapshots of one histogram (the bounds of `now`).
 * @param {Buckets} now
 * @param {Buckets} before
 * @returns {Buckets}
 */
export function bucketDelta(now, before) {
  /** @type {Buckets} */
  const out = new Map();
  for (const [le, n] of now) out.set(le, Math.max(0, n - (before.get(le) ?? 0)));
  return out;
}

/**
 * The per-model counters of the metrics text the statistics API does not have.
 * @param {Sample[] | undefined} samples
 * @param {string} model
 */
export function metricCounters(samples, model) {
  let refused = 0;
  /** @type {number | null} */
  let tokens = null;
  /** @type {Buckets | null} */
  let ttft = null;
  /** @type {Gauges} */
  const g = {
    instances: null,
    pending: null,
    restarts: null,
    stubBytes: null,
    residentBytes: null,
    loads: null,
    evictions: null,
    loadSeconds: null,
  };
  /** @param {keyof Gauges} key @param {number} v */
  const add = (key, v) => {
    g[key] = (g[key] ?? 0) + v;
  };
  for (const s of samples ?? []) {
    const mine = s.labels.model === model || s.labels.model_name === model;
    if (!mine) continue;
    if (s.name === 'nv_inference_request_failure' && s.labels.reason === REFUSED_REASON) refused += s.value;
    else if (s.name === 'nereid_model_instances') add('instances', s.value);
    else if (s.name === 'nv_inference_pending_request_count') add('pending', s.value);
    // Instances in processes of their own (Python stubs): replaced processes, and their memory now.
    else if (s.name === 'nereid_model_instance_restarts_total') add('restarts', s.value);
    else if (s.name === 'nereid_model_instance_resident_bytes') add('stubBytes', s.value);
    // On-demand mode's view of the model (absent in the other modes).
    else if (s.name === 'nereid_model_resident_bytes') add('residentBytes', s.value);
    else if (s.name === 'nereid_model_on_demand_loads_total') add('loads', s.value);
    else if (s.name === 'nereid_model_evictions_total') add('evictions', s.value);
    else if (s.name === 'nereid_model_on_demand_load_seconds_total') add('loadSeconds', s.value);
    // vLLM's own counter, when an LLM backend exports it (the colon is part of its name).
    else if (s.name === 'vllm:generation_tokens_total' || s.name === 'vllm:generation_tokens')
      tokens = (tokens ?? 0) + s.value;
    else if (s.name === TTFT_BUCKETS) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      if (Number.isNaN(le)) continue;
      ttft ??= new Map();
      ttft.set(le, (ttft.get(le) ?? 0) + s.value);
    }
  }
  return { refused, tokens, ttft, gauges: g };
}

/**
 * On-demand mode's server-wide figures (undefined in the other modes): models holding a slot, and the
 * limits (0 = none).
 * @param {Sample[] | undefined} samples
 * @returns {{loaded: number, maxLoaded: number, budgetBytes: number, residentBytes: number} | undefined}
 */
export function onDemandTotals(samples) {
  const one = (/** @type {string} */ name) => samples?.find((s) => s.name === name)?.value;
  const budgetBytes = one('nereid_model_memory_budget_bytes');
  if (budgetBytes === undefined) return undefined;
  let residentBytes = 0;
  for (const s of samples ?? []) if (s.name === 'nereid_model_resident_bytes') residentBytes += s.value;
  return {
    loaded: one('nereid_models_loaded') ?? 0,
    maxLoaded: one('nereid_max_loaded_models') ?? 0,
    budgetBytes,
    residentBytes,
  };
}

/** Bytes as MiB text ('–' for none). @param {number | null} b */
export const mib = (b) => (b === null ? '–' : (b / (1024 * 1024)).toFixed(1));

export class ModelWindow {
  constructor() {
    /** @type {Snapshot[]} */
    this.snaps = [];
    /** @type {{p50: number | null, p99: number | null}} */
    this.quantiles = { p50: null, p99: null };
    /** @type {Gauges} */
    this.gauges = metricCounters(undefined, '').gauges;
  }

  /** @param {Snapshot} s */
  push(s) {
    this.snaps.push(s);
    while (this.snaps.length > 2 && s.t - this.snaps[1].t >= WINDOW_SECONDS) this.snaps.shift();
  }

  /** @returns {Figures} */
  figures() {
    const none = {
      rate: null,
      failPct: null,
      refusedRate: null,
      queueMs: null,
      computeMs: null,
      tokensPerSec: null,
      busy: null,
    };
    const { p50, p99 } = this.quantiles;
    const gauges = this.gauges;
    const pending = gauges.pending;
    const ttft = this.ttft();
    if (this.snaps.length < 2) return { ...none, p50, p99, ...ttft, ...gauges };
    const a = this.snaps[0];
    const b = this.snaps[this.snaps.length - 1];
    const last = this.snaps[this.snaps.length - 2];
    const dt = b.t - a.t;
    const ok = Math.max(0, b.success - a.success);
    const bad = Math.max(0, b.fail - a.fail);
    const n = b.count - a.count;
    return {
      rate: (ok + bad) / dt,
      failPct: ok + bad > 0 ? (100 * bad) / (ok + bad) : null,
      refusedRate: Math.max(0, b.refused - a.refused) / dt,
      queueMs: n > 0 ? (b.queueNs - a.queueNs) / n / 1e6 : null,
      computeMs: n > 0 ? (b.computeNs - a.computeNs) / n / 1e6 : null,
      tokensPerSec: a.tokens !== null && b.tokens !== null ? Math.max(0, b.tokens - a.tokens) / dt : null,
      // Busy: requests waiting now, or executions since the previous poll.
      busy: (pending ?? 0) > 0 || b.execs > last.execs,
      p50,
      p99,
      ...ttft,
      ...gauges,
    };
  }

  /** The model reports vLLM's token counter or first-token histogram: an LLM, with LLM columns. */
  reportsLlm() {
    const last = this.snaps[this.snaps.length - 1];
    return last !== undefined && (last.tokens !== null || last.ttft !== null);
  }

  /**
   * Time to first token in ms, p50 and p99: of the first tokens of the window, or, when none came in it,
   * of all since the model loaded (the histogram is cumulative), so an idle LLM still shows its figure.
   * Null for a model without vLLM's histogram.
   * @returns {{ttftP50: number | null, ttftP99: number | null}}
   */
  ttft() {
    const b = this.snaps[this.snaps.length - 1]?.ttft ?? null;
    if (b === null) return { ttftP50: null, ttftP99: null };
    const a = this.snaps[0].ttft;
    const recent = a === null ? b : bucketDelta(b, a);
    const h = histogramQuantile(recent, 0.5) === null ? b : recent;
    const ms = (/** @type {number | null} */ v) => (v === null ? null : v * 1000);
    return { ttftP50: ms(histogramQuantile(h, 0.5)), ttftP99: ms(histogramQuantile(h, 0.99)) };
  }
}

/**
 * A figure as table text: '–' for none.
 * @param {number | null} v
 * @param {number} [digits]
 */
export function figure(v, digits = 1) {
  return v === null || !Number.isFinite(v) ? '–' : v.toFixed(digits);
}
