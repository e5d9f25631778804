/**
 * Trace settings as the trace extension exposes them: global values plus per-model overrides, each key a
 * string or list of strings, validated as Triton validates them. (Settings only: emitting traces is
 * future work, so the server does not advertise the `trace` extension yet.)
 */
import { invalidArg, notFound } from '../common/errors.js';
import type { TraceSettings, TraceSettingsUpdate } from './types.js';

const LEVELS = new Set(['OFF', 'TIMESTAMPS', 'TENSORS']);
const MODES = new Set(['triton', 'opentelemetry']);

export const DEFAULT_TRACE_SETTINGS: Readonly<TraceSettings> = Object.freeze({
  trace_file: '',
  trace_level: ['OFF'],
  trace_rate: '1000',
  trace_count: '-1',
  log_frequency: '0',
  trace_mode: 'triton',
});

function validate(key: string, value: string | string[]): string | string[] {
  const one = (): string => {
    const v = Array.isArray(value) ? value : [value];
    if (v.length !== 1) throw invalidArg(`trace setting '${key}' takes exactly one value`);
    return v[0];
  };
  switch (key) {
    case 'trace_level': {
      const levels = Array.isArray(value) ? value : [value];
      for (const l of levels) if (!LEVELS.has(l)) throw invalidArg(`invalid trace level '${l}'`);
      return levels;
    }
    case 'trace_rate':
    case 'log_frequency': {
      const v = one();
      if (!/^\d+$/.test(v)) throw invalidArg(`Unable to parse '${key}', got: ${v}`);
      return v;
    }
    case 'trace_count': {
      const v = one();
      if (!/^-?\d+$/.test(v) || Number(v) < -1) throw invalidArg(`Unable to parse '${key}', got: ${v}`);
      return v;
    }
    case 'trace_file':
      return one();
    case 'trace_mode': {
      const v = one();
      if (!MODES.has(v)) throw invalidArg(`invalid trace mode '${v}'`);
      return v;
    }
    default:
      throw invalidArg(`unknown trace setting '${key}'`);
  }
}

export class TraceSettingsStore {
  private global: TraceSettings = { ...DEFAULT_TRACE_SETTINGS };
  private readonly perModel = new Map<string, TraceSettings>();

  constructor(private readonly modelExists: (name: string) => boolean) {}

  get(model?: string): TraceSettings {
    if (!model) return { ...this.global };
    if (!this.modelExists(model)) throw notFound(`Request for unknown model : ${model}`);
    return { ...this.global, ...(this.perModel.get(model) ?? {}) };
  }

  update(model: string | undefined, update: TraceSettingsUpdate): TraceSettings {
    if (model && !this.modelExists(model)) throw notFound(`Request for unknown model : ${model}`);
    const target = model ? { ...(this.perModel.get(model) ?? {}) } : { ...this.global };
    for (const [key, value] of Object.entries(update)) {
      if (value === null) {
        if (model) delete target[key];
        else target[key] = DEFAULT_TRACE_SETTINGS[key] ?? '';
        continue;
      }
      target[key] = validate(key, value);
    }
    if (model) this.perModel.set(model, target);
    else this.global = target;
    return this.get(model);
  }
}
