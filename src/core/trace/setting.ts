/**
 * One set of effective trace settings, live (Triton's TraceManager::TraceSetting): it samples requests by
 * rate and count, gathers finished traces and writes them to its trace file by log frequency. A settings
 * update replaces the object instead of changing it, so a trace always finishes under the settings it was
 * sampled with; a replaced object writes what it still holds once its last trace has finished.
 */
import type { TraceFile } from './trace-file.js';

export type TraceMode = 'triton' | 'opentelemetry';

export interface TraceLevel {
  readonly timestamps: boolean;
  readonly tensors: boolean;
}

export interface TraceSettingValues {
  readonly level: TraceLevel;
  readonly rate: number;
  /** Traces still to take; -1 = no limit. */
  readonly count: number;
  readonly logFrequency: number;
  readonly filePath: string;
  readonly mode: TraceMode;
}

export function levelOn(level: TraceLevel): boolean {
  return level.timestamps || level.tensors;
}

export class TraceSetting {
  /** Requests seen (the rate counts them all). */
  private sampled = 0;
  /** Traces finished and gathered. */
  private collected = 0;
  /** Traces gathered since the last indexed file. */
  private inStream = 0;
  private stream: string[] = [];
  /** Traces sampled and not yet finished. */
  private live = 0;
  private retired = false;
  private disposed = false;
  /** Traces still to take (-1: no limit); the settings API shows it as trace_count. */
  count: number;
  readonly invalidReason: string;

  constructor(
    readonly values: TraceSettingValues,
    readonly file: TraceFile | undefined,
    /** Called once, when the object is retired and its last trace has finished. */
    private readonly onDisposed: (setting: TraceSetting) => void,
  ) {
    this.count = values.count;
    if (!levelOn(values.level)) this.invalidReason = 'tracing is disabled';
    else if (values.rate === 0) this.invalidReason = 'sample rate must be non-zero';
    else if (values.mode === 'triton' && values.filePath === '')
      this.invalidReason = 'trace file name is not given';
    else this.invalidReason = '';
  }

  /** Could sample anything at all (the fast "tracing is off" check). */
  get active(): boolean {
    return levelOn(this.values.level);
  }

  private valid(): boolean {
    return this.invalidReason === '' && this.count !== 0;
  }

  /**
   * Whether this request is traced: every `rate`-th request while `count` lasts; `force` (a propagated
   * OpenTelemetry context) traces it regardless, as in Triton.
   */
  trySample(force: boolean): boolean {
    let hit = false;
    if (this.values.rate !== 0) {
      if (!this.valid() && !force) return false;
      hit = ++this.sampled % this.values.rate === 0;
      if (hit && this.count > 0) this.count--;
      else if (hit && this.count === 0) hit = false;
    }
    if (!hit && !force) return false;
    this.live++;
    return true;
  }

  /** A sampled trace finished: `body` is its objects, joined by ','; '' in OpenTelemetry mode. */
  traceFinished(body: string): void {
    this.live--;
    if (this.values.mode === 'triton' && this.file) {
      this.inStream++;
      this.collected++;
      if (body !== '') this.stream.push(body);
      const f = this.values.logFrequency;
      // As Triton: a finished count (every sampled request collected) or a full batch goes to `<file>.<n>`.
      if ((this.count === 0 && this.collected === this.sampled) || (f !== 0 && this.inStream >= f)) {
        const text = this.stream.join(',');
        this.stream = [];
        this.inStream = 0;
        this.file.save(text, true);
      }
    }
    if (this.retired && this.live === 0) this.dispose();
  }

  /** Replaced by newer settings (or the server stops): write the rest once the last trace is done. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    if (this.live === 0) this.dispose();
  }

  private dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.values.mode === 'triton' && this.file && this.inStream !== 0) {
      this.file.save(this.stream.join(','), this.values.logFrequency !== 0);
      this.stream = [];
      this.inStream = 0;
    }
    this.onDisposed(this);
  }
}
