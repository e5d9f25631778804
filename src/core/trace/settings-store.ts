/**
 * Trace settings as the trace extension exposes them: global values plus per-model overrides, each key a
 * string or list of strings, validated as Triton validates them. A model's keys it never set follow the
 * global ones. The Tracer (tracer.ts) turns the effective values into live TraceSetting objects.
 */
import { invalidArg, notFound, unsupported } from '../../common/errors.js';
import type { TraceSettings } from '../../common/trace-settings.js';
import type { TraceSettingsUpdate } from './types.js';

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
  private global: TraceSettings;
  private perModel = new Map<string, TraceSettings>();
  /** What `null` puts a global key back to: the command line's value. */
  private readonly defaults: Readonly<TraceSettings>;

  constructor(
    private readonly modelExists: (name: string) => boolean,
    initial: Readonly<TraceSettings> = DEFAULT_TRACE_SETTINGS,
  ) {
    this.global = { ...initial };
    this.defaults = Object.freeze({ ...initial });
  }

  /** The models with settings of their own. */
  models(): string[] {
    return [...this.perModel.keys()];
  }

  /** The effective settings of `model` ('' / undefined: global) without the existence check. */
  effective(model?: string): TraceSettings {
    if (!model) return { ...this.global };
    return { ...this.global, ...(this.perModel.get(model) ?? {}) };
  }

  /** State to put back with restore() when an update turns out invalid as a whole. */
  snapshot(): { global: TraceSettings; perModel: Map<string, TraceSettings> } {
    return { global: { ...this.global }, perModel: new Map(this.perModel) };
  }

  restore(s: { global: TraceSettings; perModel: Map<string, TraceSettings> }): void {
    this.global = s.global;
    this.perModel = s.perModel;
  }

  get(model?: string): TraceSettings {
    if (model && !this.modelExists(model)) throw notFound(`Request for unknown model : ${model}`);
    return this.effective(model);
  }

  update(model: string | undefined, update: TraceSettingsUpdate): TraceSettings {
    if (model && !this.modelExists(model)) throw notFound(`Request for unknown model : ${model}`);
    // A client that could name the file could make the server write anywhere it may write; the file comes
    // from the command line only (Triton refuses the key the same way, null included).
    if (Object.hasOwn(update, 'trace_file'))
      throw unsupported('trace file location can not be updated through network protocol');
    const target = model ? { ...(this.perModel.get(model) ?? {}) } : { ...this.global };
    for (const [key, value] of Object.entries(update)) {
      if (value === null) {
        if (model) delete target[key];
        else target[key] = this.defaults[key] ?? '';
        continue;
      }
      target[key] = validate(key, value);
    }
    if (model) this.perModel.set(model, target);
    else this.global = target;
    return this.get(model);
  }
}
