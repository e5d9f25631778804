/**
 * gRPC answers → the HTTP JSON shapes of ../types.ts: statistics (64-bit counters as numbers, every
 * field present), log settings (the one set member of each SettingValue), trace settings (string lists
 * back to strings, except trace_level) and shared-memory region maps (as lists).
 */
import type {
  CudaSharedMemoryStatus,
  LogSettings,
  ModelStatistics,
  StatisticDuration,
  SystemSharedMemoryStatus,
  TraceSettings,
} from '../types.js';

/** A decoded message converted to a plain object by protobufjs. */
export type Obj = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

function duration(v: unknown): StatisticDuration {
  const d = (v ?? {}) as Obj;
  return { count: num(d.count), ns: num(d.ns) };
}

function durations<K extends string>(v: unknown, keys: readonly K[]): Record<K, StatisticDuration> {
  const o = (v ?? {}) as Obj;
  const out = {} as Record<K, StatisticDuration>;
  for (const k of keys) out[k] = duration(o[k]);
  return out;
}

const INFER_KEYS = [
  'success',
  'fail',
  'queue',
  'compute_input',
  'compute_infer',
  'compute_output',
  'cache_hit',
  'cache_miss',
] as const;
const BATCH_KEYS = ['compute_input', 'compute_infer', 'compute_output'] as const;
const RESPONSE_KEYS = [
  'compute_infer',
  'compute_output',
  'success',
  'fail',
  'empty_response',
  'cancel',
] as const;

export function modelStatistics(s: Obj): ModelStatistics {
  const responseStats: ModelStatistics['response_stats'] = {};
  for (const [k, v] of Object.entries((s.response_stats ?? {}) as Obj))
    responseStats[k] = durations(v, RESPONSE_KEYS);
  return {
    name: text(s.name),
    version: text(s.version),
    last_inference: num(s.last_inference),
    inference_count: num(s.inference_count),
    execution_count: num(s.execution_count),
    inference_stats: durations(s.inference_stats, INFER_KEYS),
    batch_stats: ((s.batch_stats ?? []) as Obj[]).map((b) => ({
      batch_size: num(b.batch_size),
      ...durations(b, BATCH_KEYS),
    })),
    memory_usage: ((s.memory_usage ?? []) as Obj[]).map((m) => ({
      type: text(m.type),
      id: num(m.id),
      byte_size: num(m.byte_size),
    })),
    response_stats: responseStats,
  };
}

/** LogSettings SettingValue → its one set member. */
function logValue(v: Obj): string | number | boolean | undefined {
  for (const k of ['bool_param', 'uint32_param', 'string_param']) {
    const x = v[k];
    if (typeof x === 'boolean' || typeof x === 'number' || typeof x === 'string') return x;
  }
  return undefined;
}

export function logSettingsOf(res: Obj): LogSettings {
  const out: LogSettings = {};
  for (const [k, v] of Object.entries((res.settings ?? {}) as Obj)) {
    const value = logValue((v ?? {}) as Obj);
    if (value !== undefined) out[k] = value;
  }
  return out;
}

/** Trace values travel as string lists; the HTTP form is a string, except trace_level (a list). */
export function traceSettingsOf(res: Obj): TraceSettings {
  const out: TraceSettings = {};
  for (const [k, v] of Object.entries((res.settings ?? {}) as Obj)) {
    const values = (((v ?? {}) as Obj).value ?? []) as string[];
    out[k] = k === 'trace_level' || values.length > 1 ? values : (values[0] ?? '');
  }
  return out;
}

function regionsOf<T>(res: Obj, convert: (r: Obj) => T): T[] {
  return Object.values((res.regions ?? {}) as Record<string, Obj>).map(convert);
}

export function systemRegions(res: Obj): SystemSharedMemoryStatus[] {
  return regionsOf(res, (r) => ({
    name: text(r.name),
    key: text(r.key),
    offset: num(r.offset),
    byte_size: num(r.byte_size),
  }));
}

export function cudaRegions(res: Obj): CudaSharedMemoryStatus[] {
  return regionsOf(res, (r) => ({
    name: text(r.name),
    device_id: num(r.device_id),
    byte_size: num(r.byte_size),
  }));
}

/** Accepts `host:port` or a `grpc://host:port` / `http://host:port` URL. */
