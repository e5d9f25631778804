/**
 * Tracing's start-up options (`--trace-config` and the older `--trace-*` flags, parsed in cli/), as the
 * Tracer takes them.
 */
import type { TraceMode } from './setting.js';

export interface OtelOptions {
  /** OTLP/HTTP endpoint (`opentelemetry,url=`); Triton's default http://localhost:4318/v1/traces. */
  readonly url: string;
  /** Resource attributes (`opentelemetry,resource=k=v`, OTEL_RESOURCE_ATTRIBUTES). */
  readonly resource: Readonly<Record<string, string>>;
  readonly bspMaxQueueSize: number;
  readonly bspScheduleDelayMs: number;
  readonly bspMaxExportBatchSize: number;
}

export interface TraceOptions {
  readonly mode: TraceMode;
  /** Empty = OFF. */
  readonly level: readonly ('TIMESTAMPS' | 'TENSORS')[];
  readonly rate: number;
  readonly count: number;
  readonly logFrequency: number;
  readonly file: string;
  readonly otel: OtelOptions;
}

export const DEFAULT_OTEL_URL = 'http://localhost:4318/v1/traces';

export const DEFAULT_TRACE_OPTIONS: TraceOptions = Object.freeze({
  mode: 'triton',
  level: [],
  rate: 1000,
  count: -1,
  logFrequency: 0,
  file: '',
  otel: Object.freeze({
    url: DEFAULT_OTEL_URL,
    resource: Object.freeze({ 'service.name': 'triton-inference-server' }),
    bspMaxQueueSize: 2048,
    bspScheduleDelayMs: 5000,
    bspMaxExportBatchSize: 512,
  }),
});
