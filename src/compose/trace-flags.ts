/**
 * `--trace-config` and the older `--trace-file/-level/-rate/-count/-log-frequency` flags, read as Triton's
 * command-line parser reads them (src/command_line_parser.cc): `[<mode>,]<setting>=<value>`, mode triton
 * or opentelemetry (any case); global settings rate, level (repeatable, OFF wins), count, mode; triton's
 * file and log-frequency; opentelemetry's url, resource (repeatable) and bsp_* (defaults from the
 * OTEL_BSP_* environment variables, as Triton's). --trace-config wins over the deprecated flags.
 */
import { invalidArg } from '../common/errors.js';
import { DEFAULT_TRACE_OPTIONS, type TraceMode, type TraceOptions } from '../core/assembly.js';

export interface TraceDraft {
  /** `--trace-config` values in order. */
  readonly config: string[];
  /** Deprecated flags given (their last value; levels accumulate). */
  file?: string;
  levels: string[];
  rate?: string;
  count?: string;
  logFrequency?: string;
}

export function emptyTraceDraft(): TraceDraft {
  return { config: [], levels: [] };
}

function parseMode(v: string): TraceMode {
  const m = v.toLowerCase();
  if (m === 'triton' || m === 'opentelemetry') return m;
  throw invalidArg(
    `invalid value for trace mode option: ${m}. Available options are "triton" and "opentelemetry"`,
  );
}

/** Triton's ParseTraceLevelOption: off/false, timestamps/true, tensors (any case). */
function parseLevel(v: string): 'OFF' | 'TIMESTAMPS' | 'TENSORS' {
  const l = v.toLowerCase();
  if (l === 'false' || l === 'off') return 'OFF';
  if (l === 'true' || l === 'timestamps') return 'TIMESTAMPS';
  if (l === 'tensors') return 'TENSORS';
  throw invalidArg(`invalid value for trace level option: ${v}`);
}

function parseInt32(what: string, v: string, min: number): number {
  if (!/^\s*[-+]?\d+\s*$/.test(v)) throw invalidArg(`Bad option: "${what}".\nfailed to convert ${v} to int`);
  const n = Number(v);
  if (n < min || n > 2147483647) throw invalidArg(`Bad option: "${what}".\n${v} is out of range`);
  return n;
}

interface ConfigEntry {
  readonly mode: '' | TraceMode;
  readonly setting: string;
  readonly value: string;
}

/** Triton's ParseTraceConfigOption. */
export function parseTraceConfig(arg: string): ConfigEntry {
  const comma = arg.indexOf(',');
  const eq = arg.indexOf('=', comma + 1);
  let mode: '' | TraceMode = '';
  if (comma > 0) mode = parseMode(arg.slice(0, comma));
  else if (comma === 0) {
    throw invalidArg(
      `No trace mode specified. --trace-config option format is <trace mode>,<setting>=<value> or <setting>=<value>. Got ${arg}`,
    );
  }
  const setting = eq < 0 ? '' : arg.slice(comma + 1, eq);
  const value = eq < 0 ? '' : arg.slice(eq + 1);
  if (eq < 0 || setting === '' || value === '') {
    throw invalidArg(`--trace-config option format is '<trace mode>,<setting>=<value>'. Got ${arg}`);
  }
  return { mode, setting, value };
}

/** The TraceOptions of a command line; `env` supplies OTEL_BSP_* and OTEL_RESOURCE_ATTRIBUTES. */
export function buildTraceOptions(
  d: TraceDraft,
  env: Readonly<Record<string, string | undefined>>,
): TraceOptions {
  const entries = d.config.map(parseTraceConfig);
  let mode: TraceMode = 'triton';
  let explicitOff = false;
  const levels = new Set<'TIMESTAMPS' | 'TENSORS'>();
  const addLevel = (v: string): void => {
    const l = parseLevel(v);
    if (l === 'OFF') explicitOff = true;
    else levels.add(l);
  };
  for (const l of d.levels) addLevel(l);
  let rate = d.rate !== undefined ? parseInt32('--trace-rate', d.rate, 0) : DEFAULT_TRACE_OPTIONS.rate;
  let count = d.count !== undefined ? parseInt32('--trace-count', d.count, -1) : DEFAULT_TRACE_OPTIONS.count;
  let file = d.file ?? '';
  let logFrequency =
    d.logFrequency !== undefined ? parseInt32('--trace-log-frequency', d.logFrequency, 0) : 0;
  // Global settings first: the mode decides which mode-specific ones apply.
  const configLevels: string[] = [];
  for (const e of entries.filter((x) => x.mode === '')) {
    const what = `--trace-config ${e.setting}`;
    if (e.setting === 'rate') rate = parseInt32(what, e.value, 0);
    else if (e.setting === 'level') configLevels.push(e.value);
    else if (e.setting === 'mode') mode = parseMode(e.value);
    else if (e.setting === 'count') count = parseInt32(what, e.value, -1);
  }
  // As Triton: --trace-config levels add to --trace-level ones, and OFF anywhere turns tracing off.
  for (const l of configLevels) addLevel(l);
  const otel = { ...DEFAULT_TRACE_OPTIONS.otel, resource: { ...DEFAULT_TRACE_OPTIONS.otel.resource } };
  const bsp = (name: string, envName: string, fallback: number): number => {
    const v = env[envName];
    return v === undefined ? fallback : parseInt32(envName, v, 0);
  };
  otel.bspMaxQueueSize = bsp('bsp_max_queue_size', 'OTEL_BSP_MAX_QUEUE_SIZE', otel.bspMaxQueueSize);
  otel.bspScheduleDelayMs = bsp('bsp_schedule_delay', 'OTEL_BSP_SCHEDULE_DELAY', otel.bspScheduleDelayMs);
  otel.bspMaxExportBatchSize = bsp(
    'bsp_max_export_batch_size',
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    otel.bspMaxExportBatchSize,
  );
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',')) {
    const i = pair.indexOf('=');
    if (i > 0) otel.resource[pair.slice(0, i).trim()] = decodeURIComponent(pair.slice(i + 1).trim());
  }
  for (const e of entries.filter((x) => x.mode === mode)) {
    const what = `--trace-config ${mode},${e.setting}`;
    if (mode === 'triton') {
      if (e.setting === 'file') file = e.value;
      else if (e.setting === 'log-frequency') logFrequency = parseInt32(what, e.value, 0);
    } else if (e.setting === 'url') otel.url = e.value;
    else if (e.setting === 'resource') {
      const i = e.value.indexOf('=');
      if (i <= 0) throw invalidArg(`Bad option: "${what}".\nexpected <key>=<value>, got ${e.value}`);
      otel.resource[e.value.slice(0, i)] = e.value.slice(i + 1);
    } else if (e.setting === 'bsp_max_queue_size') otel.bspMaxQueueSize = parseInt32(what, e.value, 0);
    else if (e.setting === 'bsp_schedule_delay') otel.bspScheduleDelayMs = parseInt32(what, e.value, 0);
    else if (e.setting === 'bsp_max_export_batch_size')
      otel.bspMaxExportBatchSize = parseInt32(what, e.value, 0);
  }
  if (otel.bspMaxExportBatchSize > otel.bspMaxQueueSize) {
    throw invalidArg(
      `--trace-config opentelemetry,bsp_max_export_batch_size (${otel.bspMaxExportBatchSize}) must not exceed bsp_max_queue_size (${otel.bspMaxQueueSize})`,
    );
  }
  if (mode === 'opentelemetry' && levels.has('TENSORS')) levels.delete('TENSORS');
  return Object.freeze({
    mode,
    level: explicitOff
      ? []
      : [...levels].sort((a, b) => (a === 'TIMESTAMPS' ? -1 : b === 'TIMESTAMPS' ? 1 : 0)),
    rate,
    count,
    logFrequency,
    file,
    otel: Object.freeze({ ...otel, resource: Object.freeze(otel.resource) }),
  });
}

/** Start-up warnings Triton prints for these flags (deprecated ones overridden or ignored). */
export function traceWarnings(d: TraceDraft, options: TraceOptions): string[] {
  const w: string[] = [];
  if (options.mode === 'opentelemetry') {
    if (d.file !== undefined)
      w.push("'--trace-file' is deprecated and will be ignored with opentelemetry tracing mode.");
    if (d.logFrequency !== undefined)
      w.push("'--trace-log-frequency' is deprecated and will be ignored with opentelemetry tracing mode.");
  }
  if (options.level.length > 0 && options.mode === 'triton' && options.file === '') {
    w.push('tracing is on but no trace file is given (--trace-config triton,file=<path>): nothing is traced');
  }
  return w;
}
