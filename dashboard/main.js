// @ts-check
/**
 * The operator's dashboard page: the server at a glance (identity, uptime, options, repositories), every
 * model of the repository index with its state and reason, a model's config, tensors, instance groups and
 * batcher, live charts from the statistics API and the metrics text, model control (explicit mode only,
 * and only where the repository API is open), and the request tester. It polls; nothing is pushed.
 */
import { api, ApiError, parseMetrics } from './api.js';
import { History, LiveChart } from './charts.js';
import { byId, duration, el, facts, fill, table } from './dom.js';
import { ModelWindow, figure, metricCounters, mib, onDemandTotals } from './figures.js';
import { LogView } from './logs.js';
import { Tester } from './tester.js';

/** Seconds between two polls of the index, the statistics and the metrics. */
const POLL_SECONDS = 2;
/** Polls between two reads of the server's description (the uptime ticks locally in between). */
const INFO_EVERY = 5;

/**
 * @typedef {{name: string, version?: string, state?: string, reason?: string}} IndexEntry
 * @typedef {{count: number, ns: number}} Duration
 * @typedef {{name: string, version: string, inference_stats: Record<string, Duration>,
 *   batch_stats?: {batch_size: number, compute_infer: Duration}[]}} ModelStats
 * @typedef {{t: number, success: number, fail: number, queueNs: number, computeNs: number, count: number}} Totals
 * @typedef {import('./api.js').Sample} Sample
 */

const state = {
  /** @type {any} */
  info: undefined,
  /** @type {string | undefined} why the description could not be read */
  infoError: undefined,
  infoReadAt: 0,
  /** @type {IndexEntry[]} */
  models: [],
  /** @type {string | undefined} */
  selected: undefined,
  /**
   * Each scope's chart points and last totals ('' = all models), kept across selections.
   * @type {Map<string, {throughput: History, latency: History, previous: Totals | undefined}>}
   */
  histories: new Map(),
  /** @type {Sample[] | undefined} */
  previousMetrics: undefined,
  /** @type {string | undefined} when the server stopped answering (a clock time), while it does not */
  lostAt: undefined,
  polls: 0,
  /** @type {Map<string, ModelWindow>} each model's figures for the models table */
  windows: new Map(),
  /** the models table's order: a column key and a direction (1 ascending, -1 descending) */
  sort: { key: 'name', dir: 1 },
  /** @type {ReturnType<typeof onDemandTotals>} on-demand mode's loaded count and limits; undefined in other modes */
  onDemand: undefined,
  /** @type {any} the selected model's config, while it is an ensemble (its steps are redrawn each poll) */
  ensemble: undefined,
};

/** @param {string} model */
function windowOf(model) {
  let w = state.windows.get(model);
  if (w === undefined) {
    w = new ModelWindow();
    state.windows.set(model, w);
  }
  return w;
}

/** @param {string} scope a model name, or '' for all models */
function historyOf(scope) {
  let h = state.histories.get(scope);
  if (h === undefined) {
    h = { throughput: new History(2), latency: new History(4), previous: undefined };
    state.histories.set(scope, h);
  }
  return h;
}

/** Shows the selected scope's history in both charts. */
function showCharts() {
  const h = historyOf(state.selected ?? '');
  const now = Date.now() / 1000;
  throughput.show(h.throughput, now);
  latency.show(h.latency, now);
}

const throughput = new LiveChart(
  'Requests per second',
  [
    { label: 'success', unit: '/s' },
    { label: 'failure', unit: '/s' },
  ],
  'chart-throughput',
);
const latency = new LiveChart(
  'Time per request',
  [
    { label: 'queue', unit: 'ms' },
    { label: 'compute', unit: 'ms' },
    { label: 'p50 request', unit: 'ms' },
    { label: 'p99 request', unit: 'ms' },
  ],
  'chart-latency',
);
const tester = new Tester(byId('tester'));

/** The categories the restricted-API settings close, as the server described itself. */
function restricted() {
  return new Set(Object.keys(state.info?.restrictedApis ?? {}));
}

/** Model control buttons: only in explicit mode with the repository API open, and only when known. */
function canControl() {
  return (
    state.info !== undefined &&
    state.info.modelControlMode === 'explicit' &&
    !restricted().has('model-repository')
  );
}

/** @param {unknown} err */
const message = (err) => (err instanceof Error ? err.message : String(err));

// ---- server ---------------------------------------------------------------------------------------------

/** @param {unknown} value */
function optionText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

async function readInfo() {
  const [info, meta] = await Promise.allSettled([api.serverInfo(), api.serverMetadata()]);
  if (info.status === 'fulfilled') {
    state.info = info.value;
    state.infoError = undefined;
    state.infoReadAt = Date.now();
  } else {
    state.info = undefined;
    state.infoError = message(info.reason);
  }
  renderServer(
    meta.status === 'fulfilled' ? meta.value : undefined,
    meta.status === 'rejected' ? message(meta.reason) : undefined,
  );
}

/**
 * @param {any} meta GET /v2
 * @param {string | undefined} metaError
 */
function renderServer(meta, metaError) {
  const info = state.info;
  /** @type {[string, any][]} */
  const rows = [];
  if (meta !== undefined) {
    rows.push(
      ['Name (--id)', meta.name],
      ['Version', meta.version],
      ['Extensions', (meta.extensions ?? []).join(', ')],
    );
  } else {
    rows.push(['Server metadata', el('span', { class: 'error' }, metaError ?? 'unavailable')]);
  }
  if (info !== undefined) {
    rows.push(
      ['Product', `${info.product} ${info.version}`],
      ['Uptime', el('span', { id: 'uptime' }, duration(info.uptimeSeconds))],
      ['Started', info.startedAt],
      ['Model control', info.modelControlMode],
      [
        'Repositories',
        el(
          'ul',
          {},
          ...(info.repositories ?? []).map((/** @type {string} */ r) => el('li', {}, el('code', {}, r))),
        ),
      ],
      [
        'Restricted APIs',
        Object.keys(info.restrictedApis ?? {}).length === 0
          ? 'none'
          : el(
              'ul',
              {},
              ...Object.entries(info.restrictedApis).map(([c, h]) =>
                el('li', {}, `${c}: header ${String(h)}`),
              ),
            ),
      ],
      [
        'Metrics',
        info.metrics.enabled
          ? `on${info.metrics.summaryLatencies ? `, summaries (quantiles ${info.metrics.quantiles.join(', ')})` : ''}${info.metrics.histogramLatencies ? ', histograms' : ''}`
          : 'off',
      ],
    );
  } else {
    rows.push(['Server description', el('span', { class: 'error' }, state.infoError ?? 'unavailable')]);
  }
  const options =
    info === undefined
      ? null
      : el(
          'details',
          { id: 'options' },
          el('summary', {}, 'Options in effect'),
          table(
            ['Option', 'Value'],
            Object.keys(info.options)
              .map((k) => /** @type {[string, string]} */ ([info.optionFlags?.[k] ?? k, k]))
              .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
              .map(([flag, k]) => [el('code', { title: k }, flag), optionText(info.options[k])]),
          ),
        );
  const open = /** @type {HTMLDetailsElement | null} */ (document.getElementById('options'))?.open ?? false;
  fill(byId('server'), facts(rows), options);
  if (options !== null) options.open = open;
}

function tickUptime() {
  const span = document.getElementById('uptime');
  if (span === null || state.info === undefined) return;
  span.textContent = duration(state.info.uptimeSeconds + (Date.now() - state.infoReadAt) / 1000);
}

// ---- models ---------------------------------------------------------------------------------------------

/** @type {HTMLDialogElement} */
const dialog = /** @type {HTMLDialogElement} */ (byId('confirm'));

/**
 * Asks before a destructive action; resolves true on the confirming button only.
 * @param {string} text
 * @param {string} action
 * @returns {Promise<boolean>}
 */
function confirmAction(text, action) {
  fill(byId('confirm-text'), text);
  byId('confirm-ok').textContent = action;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) =>
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }),
  );
}
byId('confirm-ok').addEventListener('click', () => dialog.close('ok'));
byId('confirm-cancel').addEventListener('click', () => dialog.close('cancel'));

/**
 * @param {'load' | 'unload' | 'reload'} action
 * @param {string} model
 */
async function control(action, model) {
  if (action !== 'load') {
    const text =
      action === 'unload'
        ? `Unload ${model}? Requests to it fail until it is loaded again.`
        : `Reload ${model}? Its instances are replaced with the repository's current files.`;
    if (!(await confirmAction(text, action === 'unload' ? 'Unload' : 'Reload'))) return;
  }
  const status = byId('action-status');
  fill(status, `${action} ${model}…`);
  try {
    await (action === 'unload' ? api.unload(model) : api.load(model));
    fill(status, el('span', { class: 'ok' }, `${action} ${model}: done`));
  } catch (err) {
    fill(status, el('span', { class: 'error' }, `${action} ${model}: ${message(err)}`));
  }
  await poll(false);
  if (state.selected === model) await renderDetail(model);
}

/**
 * @param {IndexEntry} m
 */
function actions(m) {
  if (!canControl()) return null;
  /**
   * @param {'load' | 'unload' | 'reload'} action
   * @param {string} label
   */
  const button = (action, label) => {
    const b = el(
      'button',
      { type: 'button', class: `action ${action}`, 'data-action': action, 'data-model': m.name },
      label,
    );
    b.addEventListener('click', () => void control(action, m.name));
    return b;
  };
  return m.state === 'READY'
    ? [button('reload', 'Reload'), ' ', button('unload', 'Unload')]
    : button('load', 'Load');
}

/**
 * The models table's columns: key, heading, tooltip, and the value a row sorts by.
 * @type {{key: string, head: string, title: string, value: (m: IndexEntry, f: import('./figures.js').Figures) => string | number | null}[]}
 */
const COLUMNS = [
  { key: 'name', head: 'Model', title: 'name (select to show it below)', value: (m) => m.name },
  { key: 'version', head: 'Version', title: '', value: (m) => Number(m.version ?? -1) },
  { key: 'state', head: 'State', title: '', value: (m) => m.state ?? '' },
  { key: 'reason', head: 'Reason', title: 'why a load failed', value: (m) => m.reason ?? '' },
  { key: 'rate', head: 'req/s', title: 'requests per second, last 30 s', value: (_, f) => f.rate },
  { key: 'p50', head: 'p50 ms', title: 'median request time', value: (_, f) => f.p50 },
  { key: 'p99', head: 'p99 ms', title: '99th percentile request time', value: (_, f) => f.p99 },
  {
    key: 'fail',
    head: 'failed %',
    title: 'share of the requests the model failed, last 30 s',
    value: (_, f) => f.failPct,
  },
  {
    key: 'refused',
    head: 'refused/s',
    title:
      'requests refused before they reached the model (queue full or timed out: reason REJECTED), last 30 s',
    value: (_, f) => f.refusedRate,
  },
  {
    key: 'queue',
    head: 'queue ms',
    title: 'time in the queue per request, last 30 s',
    value: (_, f) => f.queueMs,
  },
  {
    key: 'instances',
    head: 'instances',
    title: 'instances in effect, and whether they are working (busy) or not (idle)',
    value: (_, f) => f.instances,
  },
];

/** The LLM columns, only while some model reports vLLM's metrics (a model that does not shows '–'). */
const LLM_COLUMNS = [
  {
    key: 'tokens',
    head: 'tokens/s',
    title: 'generated tokens per second (vllm:generation_tokens_total), last 30 s',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.tokensPerSec,
  },
  {
    key: 'ttft50',
    head: 'TTFT p50 ms',
    title:
      'median time to first token (vllm:time_to_first_token_seconds, interpolated in its bucket as histogram_quantile does), last 30 s, or since load when no request came in that time',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.ttftP50,
  },
  {
    key: 'ttft99',
    head: 'TTFT p99 ms',
    title:
      '99th percentile time to first token (vllm:time_to_first_token_seconds), last 30 s, or since load when no request came in that time',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.ttftP99,
  },
];

/** Python models' instance health, only while some model has instances in processes of their own. */
const PROCESS_COLUMNS = [
  {
    key: 'restarts',
    head: 'restarts',
    title:
      'instance processes (Python stubs) replaced since the model loaded: a crash, a hang past execution_timeout_seconds, stub_memory_limit_mb',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.restarts,
  },
  {
    key: 'stub',
    head: 'stub MiB',
    title: "resident memory (RSS) of the model's stub processes now, summed over its instances",
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.stubBytes,
  },
];

/** On-demand mode's view of each model, only in that mode. */
const ON_DEMAND_COLUMNS = [
  {
    key: 'resident',
    head: 'resident MiB',
    title: "the model's measured memory while loaded, which counts against --model-memory-budget",
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.residentBytes,
  },
  {
    key: 'loads',
    head: 'loads',
    title: 'loads by a request or the repository API since the server started',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.loads,
  },
  {
    key: 'evictions',
    head: 'evictions',
    title: 'times the model was unloaded to make room (least recently used)',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) => f.evictions,
  },
  {
    key: 'cold',
    head: 'cold start s',
    title: 'mean time a load took (load seconds / loads)',
    value: (/** @type {IndexEntry} */ _, /** @type {import('./figures.js').Figures} */ f) =>
      f.loads ? (f.loadSeconds ?? 0) / f.loads : null,
  },
];

/** @param {import('./figures.js').Figures} f */
function health(f) {
  if (f.instances === null) return '–';
  const activity = f.busy === null ? '' : f.busy ? ' busy' : ' idle';
  return el(
    'span',
    { class: `health ${f.busy ? 'busy' : 'idle'}`, 'data-busy': String(f.busy === true) },
    `${f.instances}${activity}${(f.pending ?? 0) > 0 ? `, ${f.pending} waiting` : ''}`,
  );
}

/**
 * @param {string | number | null} a
 * @param {string | number | null} b
 */
function compare(a, b) {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function renderModels() {
  const control = canControl();
  const figs = new Map(state.models.map((m) => [m.name, windowOf(m.name).figures()]));
  const withProcesses = [...figs.values()].some((f) => f.restarts !== null);
  const onDemand = state.onDemand !== undefined;
  const llm = state.models.some((m) => windowOf(m.name).reportsLlm());
  const columns = [
    ...COLUMNS,
    ...(withProcesses ? PROCESS_COLUMNS : []),
    ...(onDemand ? ON_DEMAND_COLUMNS : []),
    ...(llm ? LLM_COLUMNS : []),
  ];
  const filterText = /** @type {HTMLInputElement} */ (byId('models-filter')).value.trim().toLowerCase();
  const filterState = /** @type {HTMLSelectElement} */ (byId('models-state')).value;
  const stateOptions = /** @type {HTMLSelectElement} */ (byId('models-state'));
  const known = new Set([...stateOptions.options].map((o) => o.value));
  for (const m of state.models)
    if (m.state !== undefined && !known.has(m.state)) {
      stateOptions.append(el('option', { value: m.state }, m.state));
      known.add(m.state);
    }
  const sortBy = columns.find((c) => c.key === state.sort.key) ?? columns[0];
  const shown = state.models
    .filter(
      (m) =>
        (filterText === '' || m.name.toLowerCase().includes(filterText)) &&
        (filterState === '' || m.state === filterState),
    )
    .map((m) => ({ m, f: /** @type {import('./figures.js').Figures} */ (figs.get(m.name)) }))
    .sort((a, b) => state.sort.dir * compare(sortBy.value(a.m, a.f), sortBy.value(b.m, b.f)));
  const head = [
    ...columns.map((c) => {
      const b = el(
        'button',
        {
          type: 'button',
          class: 'sort',
          'data-sort': c.key,
          title: c.title || undefined,
          'aria-sort':
            c.key === state.sort.key ? (state.sort.dir > 0 ? 'ascending' : 'descending') : undefined,
        },
        c.head,
        c.key === state.sort.key ? (state.sort.dir > 0 ? ' ▲' : ' ▼') : '',
      );
      b.addEventListener('click', () => {
        state.sort = { key: c.key, dir: state.sort.key === c.key ? -state.sort.dir : 1 };
        renderModels();
      });
      return b;
    }),
    ...(control ? ['Actions'] : []),
  ];
  const rows = shown.map(({ m, f }) => {
    const pick = el(
      'button',
      { type: 'button', class: 'link', 'data-model': m.name, 'aria-pressed': m.name === state.selected },
      m.name,
    );
    pick.addEventListener('click', () => select(m.name));
    return [
      pick,
      m.version ?? '',
      el('span', { class: `state state-${(m.state ?? 'unknown').toLowerCase()}` }, m.state ?? ''),
      m.reason ?? '',
      figure(f.rate),
      figure(f.p50),
      figure(f.p99),
      figure(f.failPct),
      figure(f.refusedRate),
      figure(f.queueMs, 2),
      health(f),
      ...(withProcesses ? [figure(f.restarts, 0), mib(f.stubBytes)] : []),
      ...(onDemand
        ? [
            mib(f.residentBytes),
            figure(f.loads, 0),
            figure(f.evictions, 0),
            figure(f.loads ? (f.loadSeconds ?? 0) / f.loads : null, 2),
          ]
        : []),
      ...(llm ? [figure(f.tokensPerSec), figure(f.ttftP50), figure(f.ttftP99)] : []),
      ...(control ? [actions(m)] : []),
    ];
  });
  const note =
    state.info === undefined
      ? 'Model control is hidden: the server description is unavailable.'
      : control
        ? null
        : state.info.modelControlMode !== 'explicit'
          ? `Model control is off: the server runs in ${state.info.modelControlMode} mode (--model-control-mode=explicit enables it).`
          : 'Model control is hidden: the repository API is restricted (--http-restricted-api).';
  const od = state.onDemand;
  fill(
    byId('models'),
    od === undefined
      ? null
      : el(
          'p',
          { id: 'budget', class: 'budget' },
          `On-demand: ${od.loaded} model${od.loaded === 1 ? '' : 's'} loaded`,
          od.maxLoaded > 0 ? ` of at most ${od.maxLoaded} (--max-loaded-models)` : ' (no count limit)',
          `; ${mib(od.residentBytes)} MiB resident`,
          od.budgetBytes > 0
            ? [
                ` of a ${mib(od.budgetBytes)} MiB budget (--model-memory-budget) `,
                el('meter', { max: od.budgetBytes, value: od.residentBytes, high: 0.9 * od.budgetBytes }),
              ]
            : ' (no memory budget)',
        ),
    table(head, rows, { id: 'models-table' }),
    rows.length < state.models.length
      ? el(
          'p',
          { class: 'note', id: 'models-hidden' },
          `${state.models.length - rows.length} of ${state.models.length} hidden by the filter`,
        )
      : null,
    note === null ? null : el('p', { class: 'note' }, note),
  );
}

// ---- one model ------------------------------------------------------------------------------------------

/** @param {string} name */
function select(name) {
  state.selected = name;
  showCharts();
  fill(byId('chart-scope'), name);
  renderModels();
  void renderDetail(name);
}

/**
 * @param {{name: string, data_type: string, dims: (number|string)[], format?: string}[]} tensors
 */
function tensorTable(tensors) {
  return table(
    ['Name', 'Type', 'Dims'],
    tensors.map((t) => [
      el('code', {}, t.name),
      String(t.data_type).replace(/^TYPE_/, ''),
      `[${(t.dims ?? []).join(', ')}]`,
    ]),
  );
}

/** @param {string} name */
async function renderDetail(name) {
  const detail = byId('detail');
  fill(byId('detail-title'), 'Model ', el('code', {}, name));
  fill(detail, el('p', { class: 'note' }, 'Reading the config…'));
  const ready = state.models.some((m) => m.name === name && m.state === 'READY');
  const [config, meta] = await Promise.allSettled([
    api.config(name),
    ready ? api.metadata(name) : Promise.reject(new Error('not ready')),
  ]);
  if (state.selected !== name) return;
  state.ensemble = undefined;
  // A version that is not READY says why in the repository index: that reason comes first (the config
  // API of a model with no loaded version only says it has none).
  const why = state.models
    .filter((m) => m.name === name && m.state !== 'READY' && m.reason)
    .map((m) =>
      el(
        'p',
        { class: 'error', 'data-reason': '' },
        `${m.state ?? ''}${m.version ? ` (version ${m.version})` : ''}: ${m.reason}`,
      ),
    );
  if (config.status === 'rejected') {
    fill(
      detail,
      ...why,
      why.length > 0 ? null : el('p', { class: 'error' }, `Config: ${message(config.reason)}`),
    );
  } else {
    const c = config.value;
    const batcher = c.dynamic_batching;
    state.ensemble = c.ensemble_scheduling ? c : undefined;
    fill(
      detail,
      ...why,
      facts([
        [
          'Platform / backend',
          `${c.platform ?? ''}${c.platform && c.backend ? ' / ' : ''}${c.backend ?? ''}`,
        ],
        ['Max batch size', String(c.max_batch_size ?? 0)],
        [
          'Versions',
          state.models
            .filter((m) => m.name === name)
            .map((m) => `${m.version ?? '?'} ${m.state ?? ''}`)
            .join(', '),
        ],
        [
          'Scheduling',
          batcher
            ? 'dynamic batcher'
            : c.sequence_batching
              ? 'sequence batcher'
              : c.ensemble_scheduling
                ? 'ensemble'
                : 'default',
        ],
      ]),
      c.ensemble_scheduling ? el('h3', {}, 'Ensemble steps') : null,
      c.ensemble_scheduling ? el('div', { id: 'ensemble' }) : null,
      el('h3', {}, 'Inputs'),
      tensorTable(c.input ?? []),
      el('h3', {}, 'Outputs'),
      tensorTable(c.output ?? []),
      el('h3', {}, 'Instance groups'),
      table(
        ['Name', 'Kind', 'Count', 'GPUs'],
        (c.instance_group ?? []).map((/** @type {any} */ g) => [
          g.name ?? '',
          g.kind ?? '',
          String(g.count ?? ''),
          (g.gpus ?? []).join(', '),
        ]),
      ),
      el('h3', {}, 'Dynamic batcher'),
      batcher
        ? facts([
            ['Preferred batch sizes', (batcher.preferred_batch_size ?? []).join(', ') || '(none)'],
            ['Max queue delay', `${batcher.max_queue_delay_microseconds ?? 0} µs`],
            ['Preserve ordering', String(batcher.preserve_ordering ?? false)],
            ['Priority levels', String(batcher.priority_levels ?? 0)],
            ['Default queue policy', JSON.stringify(batcher.default_queue_policy ?? {})],
          ])
        : el('p', { class: 'note' }, 'not configured'),
      el(
        'details',
        {},
        el('summary', {}, 'Config as the server serves it (JSON)'),
        el('pre', { id: 'config-json' }, JSON.stringify(c, null, 2)),
      ),
    );
  }
  if (state.ensemble !== undefined) renderEnsemble(state.ensemble);
  if (restricted().has('inference'))
    tester.show(undefined, 'The inference API is restricted (--http-restricted-api): no tester.');
  else if (meta.status === 'fulfilled') {
    const c = config.status === 'fulfilled' ? config.value : {};
    tester.show(meta.value, undefined, {
      decoupled: c.model_transaction_policy?.decoupled === true,
      optional: new Set(
        (c.input ?? [])
          .filter((/** @type {any} */ i) => i.optional === true)
          .map((/** @type {any} */ i) => String(i.name)),
      ),
    });
  } else
    tester.show(
      undefined,
      ready ? `Metadata: ${message(meta.reason)}` : `${name} is not ready: load it to try a request.`,
    );
}

/**
 * An ensemble's steps in order, as the graph they make: for each step its model, which tensors flow in
 * (ensemble tensor → the model's input) and out, and the step model's own time per request and rate over
 * the models table's window. Redrawn each poll while the ensemble is shown.
 * @param {any} c the ensemble's config
 */
function renderEnsemble(c) {
  const box = document.getElementById('ensemble');
  if (box === null) return;
  const steps = c.ensemble_scheduling?.step ?? [];
  const inputs = new Set((c.input ?? []).map((/** @type {any} */ i) => String(i.name)));
  /** @type {Map<string, number>} tensor → the step that makes it */
  const madeBy = new Map();
  steps.forEach((/** @type {any} */ st, /** @type {number} */ i) => {
    for (const t of Object.values(st.output_map ?? {})) madeBy.set(String(t), i + 1);
  });
  /**
   * @param {Record<string, string>} map model tensor → ensemble tensor
   * @param {boolean} into the step's inputs (shown ensemble → model) or outputs
   */
  const flows = (map, into) =>
    el(
      'ul',
      { class: 'flows' },
      ...Object.entries(map ?? {}).map(([k, v]) => {
        const [model, ens] = [String(k), String(v)];
        const from = inputs.has(ens) ? 'request' : madeBy.has(ens) ? `step ${madeBy.get(ens)}` : '';
        return el(
          'li',
          {},
          into ? el('code', {}, ens) : el('code', {}, model),
          ' → ',
          into ? el('code', {}, model) : el('code', {}, ens),
          into && from ? el('span', { class: 'note' }, ` (from ${from})`) : null,
        );
      }),
    );
  const rows = steps.map((/** @type {any} */ st, /** @type {number} */ i) => {
    const name = String(st.model_name ?? '');
    const f = windowOf(name).figures();
    const total = f.queueMs === null || f.computeMs === null ? null : f.queueMs + f.computeMs;
    const pick = el('button', { type: 'button', class: 'link', 'data-model': name }, name);
    pick.addEventListener('click', () => select(name));
    return [
      String(i + 1),
      [pick, st.model_version !== undefined && Number(st.model_version) >= 0 ? ` v${st.model_version}` : ''],
      flows(st.input_map, true),
      flows(st.output_map, false),
      figure(total, 2),
      figure(f.p99),
      figure(f.rate),
    ];
  });
  fill(
    box,
    table(
      [
        'Step',
        'Model',
        el('span', { title: "ensemble tensor → the step model's input" }, 'In'),
        el('span', { title: "the step model's output → ensemble tensor" }, 'Out'),
        el('span', { title: "the step model's queue + compute time per request, last 30 s" }, 'ms/req'),
        'p99 ms',
        'req/s',
      ],
      rows,
      {
        id: 'ensemble-table',
      },
    ),
  );
}

// ---- live figures ---------------------------------------------------------------------------------------

/**
 * Sums the statistics of one model (all versions), or of every model for the scope ''.
 * @param {{model_stats: ModelStats[]}} stats
 * @param {number} t
 * @param {string} scope
 * @returns {Totals}
 */
function totals(stats, t, scope) {
  const out = { t, success: 0, fail: 0, queueNs: 0, computeNs: 0, count: 0 };
  for (const m of stats.model_stats ?? []) {
    if (scope !== '' && m.name !== scope) continue;
    const s = m.inference_stats;
    out.success += s.success?.count ?? 0;
    out.fail += s.fail?.count ?? 0;
    out.queueNs += s.queue?.ns ?? 0;
    out.count += s.queue?.count ?? 0;
    out.computeNs += (s.compute_input?.ns ?? 0) + (s.compute_infer?.ns ?? 0) + (s.compute_output?.ns ?? 0);
  }
  return out;
}

/**
 * p50 and p99 of the request time in ms. For one model: from its summaries when they are on (the server's
 * own sliding window), else from the first-response histogram's buckets filled since the previous poll.
 * For all models only the histogram can say (buckets add up; quantiles of different models do not: the
 * largest of the models' p99s is not the p99 of all requests), so without histograms there is none.
 * @param {Sample[]} samples
 * @param {Sample[] | undefined} before
 * @param {string} scope
 * @returns {[number | null, number | null]}
 */
function quantiles(samples, before, scope) {
  const mine = (/** @type {Sample} */ s) => scope === '' || s.labels.model === scope;
  /** @param {string} q */
  const summary = (q) => {
    if (scope === '') return null;
    const vs = samples.filter(
      (s) =>
        s.name === 'nv_inference_request_summary_us' &&
        s.labels.quantile === q &&
        mine(s) &&
        !Number.isNaN(s.value),
    );
    return vs.length === 0 ? null : Math.max(...vs.map((s) => s.value)) / 1000;
  };
  const p50 = summary('0.5');
  const p99 = summary('0.99');
  if (p50 !== null || p99 !== null) return [p50, p99];
  /** @param {Sample[] | undefined} set */
  const buckets = (set) => {
    /** @type {Map<number, number>} */
    const m = new Map();
    for (const s of set ?? []) {
      if (s.name !== 'nv_inference_first_response_histogram_ms_bucket' || !mine(s)) continue;
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      m.set(le, (m.get(le) ?? 0) + s.value);
    }
    return m;
  };
  const now = buckets(samples);
  const then = buckets(before);
  const les = [...now.keys()].sort((a, b) => a - b);
  const delta = les.map((le) => (now.get(le) ?? 0) - (then.get(le) ?? 0));
  const total = delta.length === 0 ? 0 : delta[delta.length - 1];
  if (total <= 0) return [null, null];
  /** @param {number} q */
  const at = (q) => {
    const i = delta.findIndex((c) => c >= q * total);
    return les[i] === Infinity ? (les[i - 1] ?? null) : les[i];
  };
  return [at(0.5), at(0.99)];
}

/**
 * @param {Sample[]} samples
 */
function renderFailures(samples) {
  /** @type {Map<string, number>} */
  const byReason = new Map();
  for (const s of samples) {
    if (s.name !== 'nv_inference_request_failure') continue;
    if (state.selected !== undefined && s.labels.model !== state.selected) continue;
    const reason = s.labels.reason ?? '(none)';
    byReason.set(reason, (byReason.get(reason) ?? 0) + s.value);
  }
  fill(
    byId('failures'),
    table(
      ['Reason', 'Failed requests'],
      [...byReason].map(([r, n]) => [r, String(n)]),
      { id: 'failures-table' },
    ),
  );
}

/**
 * Executions by batch size, since the model loaded.
 * @param {{model_stats: ModelStats[]}} stats
 */
function renderBatches(stats) {
  /** @type {Map<number, number>} */
  const bySize = new Map();
  for (const m of stats.model_stats ?? []) {
    if (state.selected !== undefined && m.name !== state.selected) continue;
    for (const b of m.batch_stats ?? [])
      bySize.set(b.batch_size, (bySize.get(b.batch_size) ?? 0) + (b.compute_infer?.count ?? 0));
  }
  const max = Math.max(1, ...bySize.values());
  const rows = [...bySize]
    .sort((a, b) => a[0] - b[0])
    .map(([size, n]) => [String(size), String(n), el('progress', { max, value: n }, String(n))]);
  fill(
    byId('batches'),
    rows.length === 0
      ? el('p', { class: 'note' }, 'no executions yet')
      : table(['Batch size', 'Executions', ''], rows, { id: 'batches-table' }),
  );
}

/**
 * Requests the server answered with an error before or without a model's statistics seeing them (bad
 * input, an unknown model, overload): the metrics count them by endpoint and status, server-wide.
 * @param {Sample[]} samples
 */
function edgeFailures(samples) {
  let http = 0;
  let grpc = 0;
  for (const s of samples) {
    if (s.name === 'nereid_http_requests_total' && /^[45]/.test(s.labels.code ?? '')) http += s.value;
    if (s.name === 'nereid_grpc_requests_total' && s.labels.code !== 'OK') grpc += s.value;
  }
  return `; server-wide since start: ${http} HTTP answers 4xx/5xx, ${grpc} gRPC calls not OK`;
}

/**
 * @param {PromiseSettledResult<any>} stats
 * @param {PromiseSettledResult<string>} metrics
 */
function renderLive(stats, metrics) {
  const t = Date.now() / 1000;
  const samples = metrics.status === 'fulfilled' ? parseMetrics(metrics.value) : undefined;
  const notes = [];
  if (stats.status === 'fulfilled') {
    // Every scope gets its point each poll, shown or not, so its history is whole when it is selected.
    const names = new Set((stats.value.model_stats ?? []).map((/** @type {ModelStats} */ m) => m.name));
    for (const scope of ['', ...names]) {
      const h = historyOf(scope);
      const now = totals(stats.value, t, scope);
      const prev = h.previous;
      const [p50, p99] =
        samples === undefined ? [null, null] : quantiles(samples, state.previousMetrics, scope);
      if (prev !== undefined && now.t > prev.t) {
        const dt = now.t - prev.t;
        const n = now.count - prev.count;
        h.throughput.push(t, [
          Math.max(0, now.success - prev.success) / dt,
          Math.max(0, now.fail - prev.fail) / dt,
        ]);
        h.latency.push(t, [
          n > 0 ? (now.queueNs - prev.queueNs) / n / 1e6 : null,
          n > 0 ? (now.computeNs - prev.computeNs) / n / 1e6 : null,
          p50,
          p99,
        ]);
      }
      h.previous = now;
      if (scope !== '') {
        const w = windowOf(scope);
        const extra = metricCounters(samples, scope);
        w.push({
          ...now,
          refused: extra.refused,
          tokens: extra.tokens,
          ttft: extra.ttft,
          execs: (stats.value.model_stats ?? [])
            .filter((/** @type {ModelStats} */ m) => m.name === scope)
            .reduce((/** @type {number} */ a, /** @type {any} */ m) => a + (m.execution_count ?? 0), 0),
        });
        if (samples !== undefined) {
          if (p50 !== null || p99 !== null) w.quantiles = { p50, p99 };
          w.gauges = extra.gauges;
        }
      }
    }
    showCharts();
    if (state.ensemble !== undefined) renderEnsemble(state.ensemble);
    const shown = historyOf(state.selected ?? '').previous;
    const edge = samples === undefined ? '' : edgeFailures(samples);
    fill(
      byId('totals'),
      `${shown?.success ?? 0} succeeded, ${shown?.fail ?? 0} failed in the model since load${edge}`,
    );
    renderBatches(stats.value);
  } else {
    notes.push(`Statistics: ${message(stats.reason)}`);
  }
  if (samples !== undefined) {
    // Every model of the index, loaded or not: on-demand mode counts loads and evictions of unloaded ones.
    for (const m of state.models) windowOf(m.name).gauges = metricCounters(samples, m.name).gauges;
    state.onDemand = onDemandTotals(samples);
    renderFailures(samples);
    state.previousMetrics = samples;
  } else {
    const reason = metrics.status === 'rejected' ? metrics.reason : undefined;
    fill(
      byId('failures'),
      el(
        'p',
        { class: 'note' },
        `Failure reasons come from the metrics: ${reason instanceof ApiError ? reason.message : message(reason)}`,
      ),
    );
  }
  fill(byId('live-notes'), ...notes.map((n) => el('p', { class: 'error' }, n)));
}

// ---- the loop -------------------------------------------------------------------------------------------

/** @param {boolean} schedule poll again after this one (false: an extra poll after an action) */
async function poll(schedule = true) {
  try {
    if (state.polls % INFO_EVERY === 0) await readInfo();
    state.polls++;
    const [index, stats, metrics] = await Promise.allSettled([api.index(), api.stats(), api.metrics()]);
    // No answer at all (not even an error status): the server is gone. Say so, freeze the figures as
    // they were, and keep polling until it is back.
    const unreachable = [index, stats, metrics].every(
      (r) => r.status === 'rejected' && !(r.reason instanceof ApiError),
    );
    if (unreachable) {
      state.lostAt ??= new Date().toLocaleTimeString();
      const banner = byId('connection');
      banner.hidden = false;
      fill(
        banner,
        `Connection to the server lost at ${state.lostAt}: the figures below are frozen as they were then. Retrying every ${POLL_SECONDS} s.`,
      );
      document.body.dataset.connection = 'lost';
      document.body.dataset.polls = String(state.polls);
      if (schedule) setTimeout(() => void poll(), POLL_SECONDS * 1000);
      return;
    }
    if (state.lostAt !== undefined) {
      state.lostAt = undefined;
      byId('connection').hidden = true;
      document.body.dataset.connection = 'ok';
    }
    if (index.status === 'fulfilled') state.models = index.value;
    // The figures first, so the table shows this poll's.
    renderLive(stats, metrics);
    if (index.status === 'fulfilled') renderModels();
    else fill(byId('models'), el('p', { class: 'error' }, `Repository index: ${message(index.reason)}`));
    void logView.refresh(state.models.map((m) => m.name));
    byId('updated').textContent = new Date().toLocaleTimeString();
    document.body.dataset.polls = String(state.polls);
  } catch (err) {
    fill(byId('live-notes'), el('p', { class: 'error' }, message(err)));
  }
  if (schedule) setTimeout(() => void poll(), POLL_SECONDS * 1000);
}

byId('charts').append(throughput.node, latency.node);
byId('all-models').addEventListener('click', () => {
  state.selected = undefined;
  showCharts();
  fill(byId('chart-scope'), 'all models');
  fill(byId('detail-title'), 'Model');
  fill(byId('detail'), el('p', { class: 'note' }, 'Select a model above.'));
  state.ensemble = undefined;
  tester.show(undefined);
  renderModels();
});
byId('models-filter').addEventListener('input', () => renderModels());
byId('models-state').addEventListener('change', () => renderModels());
const logView = new LogView(byId('logs'));
tester.show(undefined);
setInterval(tickUptime, 1000);
void poll();
