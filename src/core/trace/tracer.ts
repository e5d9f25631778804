/**
 * The server's tracing (Triton's TraceManager): the trace settings (global and per model, as the trace
 * extension shows and changes them), a live TraceSetting for each, the trace files they share, and, in
 * OpenTelemetry mode, the exporter (loaded only then). Frontends call start() once per inference request;
 * with tracing off that is one property read and no allocation.
 */
import { invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { TraceSettings } from '../../common/trace-settings.js';
import type { TraceOptions } from './options.js';
import type { OtelExporter } from './otel-recorder.js';
import { SampledTrace } from './sampled-trace.js';
import { TraceSetting, type TraceLevel, type TraceSettingValues } from './setting.js';
import { TraceSettingsStore } from './settings-store.js';
import { TraceFile } from './trace-file.js';
import { TritonRecorder } from './triton-recorder.js';
import type { RequestTrace, TraceCarrier, TraceSettingsUpdate } from './types.js';

function levelOf(v: string | string[] | undefined): TraceLevel {
  const levels = Array.isArray(v) ? v : v === undefined ? [] : [v];
  const off = levels.includes('OFF');
  return { timestamps: !off && levels.includes('TIMESTAMPS'), tensors: !off && levels.includes('TENSORS') };
}

function one(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/** A W3C traceparent a span can join: version 00, non-zero ids. */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export function hasValidParent(carrier: TraceCarrier | undefined): boolean {
  const tp = carrier?.traceparent;
  return tp !== undefined && tp.length === 55 && TRACEPARENT.test(tp) && !tp.startsWith('ff');
}

export class Tracer {
  private nextId = 1;
  private readonly store: TraceSettingsStore;
  private global!: TraceSetting;
  private readonly perModel = new Map<string, TraceSetting>();
  private readonly files = new Map<string, { file: TraceFile; users: number }>();
  /** Any setting could sample: the fast path's one check. */
  private anyActive = false;
  private otel: OtelExporter | undefined;
  private closed = false;
  private readonly newId = (): number => this.nextId++;

  constructor(
    private readonly options: TraceOptions,
    private readonly log: Logger,
    modelExists: (name: string) => boolean,
  ) {
    const initial: TraceSettings = {
      trace_file: options.file,
      trace_level: options.level.length === 0 ? ['OFF'] : [...options.level],
      trace_rate: String(options.rate),
      trace_count: String(options.count),
      log_frequency: String(options.logFrequency),
      trace_mode: options.mode,
    };
    this.store = new TraceSettingsStore(modelExists, initial);
    this.global = this.build(this.store.effective());
    this.refreshActive();
  }

  get mode(): TraceOptions['mode'] {
    return this.options.mode;
  }

  /** Loads the OpenTelemetry SDK when the mode needs it (before the server accepts requests). */
  async init(): Promise<void> {
    if (this.options.mode !== 'opentelemetry' || this.otel) return;
    const { createOtelExporter } = await import('./otel-recorder.js');
    this.otel = createOtelExporter(this.options.otel, this.log);
  }

  /**
   * Samples a request for `model`: a RequestTrace when it is traced (the frontend ends it), else
   * undefined. A request carrying a valid W3C traceparent is always traced in OpenTelemetry mode.
   */
  start(model: string, carrier?: TraceCarrier): RequestTrace | undefined {
    if (!this.anyActive) return undefined;
    const setting = this.perModel.get(model) ?? this.global;
    if (!setting.active) return undefined;
    const otel = this.otel;
    const force = otel !== undefined && hasValidParent(carrier);
    if (!setting.trySample(force)) return undefined;
    const level = setting.values.level;
    if (otel) return new SampledTrace(otel.recorder(setting, level, carrier), this.newId);
    // The recorder names the root's id, which exists once the trace does.
    const holder: { trace?: SampledTrace } = {};
    const trace = new SampledTrace(
      new TritonRecorder(setting, level, () => holder.trace!.inference.id),
      this.newId,
    );
    holder.trace = trace;
    return trace;
  }

  /** The settings the trace extension shows (trace_count is what is left of it). */
  settings(model?: string): TraceSettings {
    const view = this.store.get(model);
    const live = (model ? this.perModel.get(model) : undefined) ?? this.global;
    view.trace_count = String(live.count);
    view.trace_mode = this.options.mode;
    if (this.options.mode === 'opentelemetry') {
      delete view.trace_file;
      delete view.log_frequency;
      const o = this.options.otel;
      view.url = o.url;
      view.resource = Object.entries(o.resource).map(([k, v]) => `${k}=${v}`);
      view.bsp_max_queue_size = String(o.bspMaxQueueSize);
      view.bsp_schedule_delay = String(o.bspScheduleDelayMs);
      view.bsp_max_export_batch_size = String(o.bspMaxExportBatchSize);
    }
    return view;
  }

  /** Changes settings; the next request uses them (traces in flight finish under the old ones). */
  update(model: string | undefined, update: TraceSettingsUpdate): TraceSettings {
    const before = this.store.snapshot();
    this.store.update(model, update);
    // Build every affected setting first: an invalid one leaves everything as it was.
    const names = model ? [model] : this.store.models();
    const built = new Map<string, TraceSetting>();
    let global: TraceSetting | undefined;
    try {
      if (!model) global = this.build(this.store.effective(), true);
      for (const name of names) built.set(name, this.build(this.store.effective(name), true));
    } catch (err) {
      for (const s of built.values()) s.retire();
      global?.retire();
      this.store.restore(before);
      throw err;
    }
    if (global) {
      this.global.retire();
      this.global = global;
    }
    for (const [name, s] of built) {
      this.perModel.get(name)?.retire();
      this.perModel.set(name, s);
    }
    this.refreshActive();
    return this.settings(model);
  }

  private refreshActive(): void {
    this.anyActive =
      !this.closed && (this.global.active || [...this.perModel.values()].some((s) => s.active));
  }

  private build(s: TraceSettings, check = false): TraceSetting {
    const values: TraceSettingValues = {
      level: levelOf(s.trace_level),
      rate: Number(one(s.trace_rate)),
      count: Number(one(s.trace_count)),
      logFrequency: Number(one(s.log_frequency)),
      filePath: one(s.trace_file),
      mode: this.options.mode,
    };
    const file =
      values.mode === 'triton' && values.filePath !== '' ? this.useFile(values.filePath) : undefined;
    const setting = new TraceSetting(values, file, (done) => this.releaseFile(done.file));
    if (check && setting.active && setting.invalidReason !== '') {
      setting.retire();
      throw invalidArg(`Attempting to set invalid trace setting :${setting.invalidReason}`);
    }
    return setting;
  }

  private useFile(path: string): TraceFile {
    let entry = this.files.get(path);
    if (!entry) {
      entry = { file: new TraceFile(path, this.log), users: 0 };
      this.files.set(path, entry);
    }
    entry.users++;
    return entry.file;
  }

  private releaseFile(file: TraceFile | undefined): void {
    if (!file) return;
    const entry = this.files.get(file.path);
    if (!entry || entry.file !== file || --entry.users > 0) return;
    this.files.delete(file.path);
    void file.close();
  }

  /**
   * Stops sampling and writes what was gathered (traces still in flight are written when they finish);
   * resolves when the files are closed and spans exported.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.anyActive = false;
    const open = [...this.files.values()].map((e) => e.file);
    this.global.retire();
    for (const s of this.perModel.values()) s.retire();
    await Promise.all(open.map((f) => f.flushed()));
    await this.otel?.shutdown();
  }
}
