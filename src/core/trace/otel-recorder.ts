/**
 * OpenTelemetry mode, on the OpenTelemetry JS SDK with the OTLP/HTTP (JSON) exporter and a batch span
 * processor, as Triton exports. Loaded by the Tracer only in this mode (a dynamic import), so a server
 * that does not use it never loads the SDK. Spans as Triton makes them: "InferRequest" for the exchange
 * (a child of the caller's span when the request carried a W3C traceparent; the frontend's timestamps are
 * its events), a span named after the model from REQUEST_START to REQUEST_END, and a "compute" span from
 * COMPUTE_START to COMPUTE_END, the other timestamps as events of the innermost open span. A child trace
 * (ensemble step, BLS call) opens its model span under its parent's innermost open span. Span times are
 * the monotonic clock moved onto the wall clock by one offset taken when the exporter starts.
 */
import {
  context as otelContext,
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace as otelTrace,
  TraceFlags,
  type Context,
  type HrTime,
  type Span,
  type Tracer as OtelTracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import type { OtelOptions } from './options.js';
import { edgeAttributes, outcomeAttributes } from './semconv.js';
import type { TraceNodeInfo, TraceRecorder } from './sampled-trace.js';
import type { TraceLevel, TraceSetting } from './setting.js';
import type { TensorActivity, TraceActivity, TraceCarrier, TraceEdge } from './types.js';

export interface OtelExporter {
  recorder(setting: TraceSetting, level: TraceLevel, carrier: TraceCarrier | undefined): TraceRecorder;
  /** Exports what is queued and stops. */
  shutdown(): Promise<void>;
}

/** The caller's span from a W3C traceparent (already checked by the Tracer) and tracestate. */
function parentContext(carrier: TraceCarrier | undefined): Context | undefined {
  const tp = carrier?.traceparent;
  if (!tp) return undefined;
  const [, traceId, spanId, flags] = tp.split('-');
  if (!traceId || !spanId || !flags) return undefined;
  let traceState;
  try {
    traceState = carrier?.tracestate ? createTraceState(carrier.tracestate) : undefined;
  } catch {
    traceState = undefined;
  }
  return otelTrace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    traceState,
  });
}

class OtelRecorder implements TraceRecorder {
  /** Open spans per trace id, innermost last. */
  private readonly stacks = new Map<number, Span[]>();
  private readonly root: Span;
  private readonly edge: TraceEdge | undefined;

  constructor(
    private readonly tracer: OtelTracer,
    private readonly setting: TraceSetting,
    private readonly level: TraceLevel,
    private readonly toWall: (ns: bigint) => HrTime,
    carrier: TraceCarrier | undefined,
  ) {
    const parent = parentContext(carrier) ?? ROOT_CONTEXT;
    this.edge = carrier?.edge?.();
    // The exchange is the SERVER span (with the conventions' HTTP or RPC attributes); the model and compute
    // spans under it are INTERNAL: they are work inside this server, not requests it served.
    this.root = tracer.startSpan(
      'InferRequest',
      {
        kind: SpanKind.SERVER,
        startTime: toWall(process.hrtime.bigint()),
        ...(this.edge && { attributes: edgeAttributes(this.edge) }),
      },
      parent,
    );
  }

  get traceId(): string {
    return this.root.spanContext().traceId;
  }

  get wantsTensors(): boolean {
    return false; // Triton's OpenTelemetry mode records no tensors
  }

  private stack(id: number): Span[] {
    let s = this.stacks.get(id);
    if (!s) {
      s = [];
      this.stacks.set(id, s);
    }
    return s;
  }

  private top(id: number): Span | undefined {
    const s = this.stacks.get(id);
    return s?.[s.length - 1];
  }

  capture(_root: TraceNodeInfo, name: string, ns: bigint): void {
    if (this.level.timestamps) this.root.addEvent(name, this.toWall(ns));
  }

  activity(node: TraceNodeInfo, activity: TraceActivity, ns: bigint): void {
    if (!this.level.timestamps) return;
    const at = this.toWall(ns);
    if (activity === 'REQUEST_START' || activity === 'COMPUTE_START') {
      let parent: Span | undefined;
      if (activity === 'COMPUTE_START') parent = this.top(node.id);
      else if (node.parentId === 0) parent = this.root;
      else parent = this.top(node.parentId) ?? this.root;
      const ctx = otelTrace.setSpan(otelContext.active(), parent ?? this.root);
      const name = activity === 'COMPUTE_START' ? 'compute' : node.modelName;
      const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: at }, ctx);
      if (activity === 'REQUEST_START') {
        span.setAttributes({
          'triton.model_name': node.modelName,
          'triton.model_version': node.modelVersion,
          'triton.trace_id': node.id,
          'triton.trace_parent_id': node.parentId,
        });
        if (node.requestId !== '') span.setAttribute('triton.request_id', node.requestId);
      }
      this.stack(node.id).push(span);
    }
    this.top(node.id)?.addEvent(activity, at);
    if (activity === 'REQUEST_END' || activity === 'COMPUTE_END') this.stacks.get(node.id)?.pop()?.end(at);
  }

  tensor(_node: TraceNodeInfo, _activity: TensorActivity, _tensor: Tensor): void {}

  context(node: TraceNodeInfo): string | undefined {
    const s = this.stacks.get(node.id)?.[0] ?? this.root;
    const c = s.spanContext();
    const flags = c.traceFlags & TraceFlags.SAMPLED ? '01' : '00';
    const state = c.traceState?.serialize();
    return JSON.stringify({
      traceparent: `00-${c.traceId}-${c.spanId}-${flags}`,
      ...(state ? { tracestate: state } : {}),
    });
  }

  finish(status: number | undefined): void {
    // Spans a request left open (it failed between a start and its end) end now, innermost first.
    const now = this.toWall(process.hrtime.bigint());
    for (const s of this.stacks.values()) for (const span of s.reverse()) span.end(now);
    this.stacks.clear();
    if (this.edge !== undefined && status !== undefined) {
      const outcome = outcomeAttributes(this.edge, status);
      this.root.setAttributes(outcome.attributes);
      if (outcome.error !== undefined) this.root.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.root.end(now);
    this.setting.traceFinished('');
  }
}

export function createOtelExporter(options: OtelOptions, log: Logger): OtelExporter {
  const exporter = new OTLPTraceExporter({ url: options.url });
  const processor = new BatchSpanProcessor(exporter, {
    maxQueueSize: options.bspMaxQueueSize,
    maxExportBatchSize: options.bspMaxExportBatchSize,
    scheduledDelayMillis: options.bspScheduleDelayMs,
  });
  const provider = new BasicTracerProvider({
    // The SDK's telemetry.sdk.* attributes as Triton's C++ SDK sends its own; the configured ones win.
    resource: defaultResource().merge(resourceFromAttributes({ ...options.resource })),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('triton-server');
  // One offset from the monotonic clock to the wall clock, so span times keep their monotonic order.
  const offset = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
  const toWall = (ns: bigint): HrTime => {
    const wall = ns + offset;
    return [Number(wall / 1_000_000_000n), Number(wall % 1_000_000_000n)];
  };
  log.info(`OpenTelemetry tracing: exporting spans to ${options.url} (OTLP/HTTP)`);
  return {
    recorder: (setting, level, carrier) => new OtelRecorder(tracer, setting, level, toWall, carrier),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } catch (err) {
        log.error(`OpenTelemetry exporter shutdown failed: ${(err as Error).message}`);
      }
    },
  };
}
