/**
 * Builds the nv_* part of a scrape from what the core reports at that moment: counters and gauges from
 * each series' totals, summaries and histograms from the latency tracker, host values from the poller.
 * Families and their order follow Triton's registry; which ones appear follows --metrics-config.
 */
import {
  type CacheMetrics,
  FAILURE_REASONS,
  type MetricSeries,
  type OnDemandStatus,
} from '../../core/index.js';
import type { MetricsSettings } from './config.js';
import {
  familyText,
  histogramSamples,
  isValidLabelName,
  sample,
  sortLabels,
  summarySamples,
  type Labels,
} from './exposition.js';
import { FAMILIES, type Family } from './families.js';
import type { LatencyTracker, SeriesLatency, WindowedSummary } from './latency.js';
import type { SystemValues } from './system.js';
import type { CountedRequests } from '../request-counts.js';

/** model, version and `_<tag>` labels; tags that cannot be label names are left out. */
export function seriesLabels(series: MetricSeries): Labels {
  const labels: [string, string][] = [
    ['model', series.model],
    ['version', series.version],
  ];
  for (const [k, v] of Object.entries(series.tags)) {
    if (isValidLabelName(`_${k}`)) labels.push([`_${k}`, v]);
  }
  return sortLabels(labels);
}

/** Microseconds from cumulative nanoseconds, whole like Triton's counters. */
const us = (ns: number): number => Math.floor(ns / 1000);

export interface RenderInput {
  readonly series: readonly MetricSeries[];
  readonly settings: MetricsSettings;
  /** Present when summaries or histograms are enabled. */
  readonly latency?: LatencyTracker;
  /** Present when CPU metrics are enabled. */
  readonly system?: SystemValues;
  /** Present when the server has a response cache: its own counters (nv_cache_*, server-wide). */
  readonly cache?: CacheMetrics;
  /** Nereid's operator families (renderOperatorMetrics), when the server gives them. */
  readonly operator?: OperatorValues;
}

/** What the nereid_* operator families show. */
export interface OperatorValues {
  readonly build?: { readonly version: string; readonly nodeVersion: string };
  /** The repository index: one row per model version (a model never attempted has version ''). */
  readonly models?: readonly { readonly model: string; readonly version: string; readonly state: string }[];
  /** The instances of each READY model version. */
  readonly instances?: readonly {
    readonly model: string;
    readonly version: string;
    readonly count: number;
    /** Instances in processes of their own (Python stubs) only: processes replaced since the load. */
    readonly restarts?: number;
    /** Same: their resident memory now. */
    readonly residentBytes?: number;
  }[];
  readonly requests?: readonly CountedRequests[];
  /** On-demand mode's counters and limits (absent in the other modes). */
  readonly onDemand?: OnDemandMetrics;
}

/** On-demand mode's counters and limits, as the repository reports them. */
export type OnDemandMetrics = OnDemandStatus;

export function renderMetrics(input: RenderInput): string {
  const { settings, latency } = input;
  const rows = input.series.map((s) => ({ s, labels: seriesLabels(s), t: s.totals() }));
  const per = (family: Family, value: (r: (typeof rows)[number]) => number | undefined): string =>
    familyText(
      family,
      rows.flatMap((r) => {
        const v = value(r);
        return v === undefined ? [] : [sample(family.name, r.labels, v)];
      }),
    );

  let out = '';
  out += per(FAMILIES.success, (r) => r.t.success);
  out += familyText(
    FAMILIES.failure,
    rows.flatMap((r) =>
      FAILURE_REASONS.map((reason) =>
        sample(FAMILIES.failure.name, sortLabels([...r.labels, ['reason', reason]]), r.t.failure[reason]),
      ),
    ),
  );
  out += per(FAMILIES.count, (r) => r.t.inferenceCount);
  out += per(FAMILIES.execCount, (r) => r.t.executionCount);
  if (settings.counterLatencies) {
    out += per(FAMILIES.requestDuration, (r) => us(r.t.requestNs));
    out += per(FAMILIES.queueDuration, (r) => us(r.t.queueNs));
    out += per(FAMILIES.computeInputDuration, (r) => us(r.t.computeInputNs));
    out += per(FAMILIES.computeInferDuration, (r) => us(r.t.computeInferNs));
    out += per(FAMILIES.computeOutputDuration, (r) => us(r.t.computeOutputNs));
  }
  out += per(FAMILIES.pending, (r) => r.s.pending());
  out += per(FAMILIES.loadDuration, (r) => r.s.loadDurationSecs);
  // This server has no pinned memory pool (no GPU); Triton always reports the pool, so report it empty.
  out += familyText(FAMILIES.pinnedTotal, [sample(FAMILIES.pinnedTotal.name, [], 0)]);
  out += familyText(FAMILIES.pinnedUsed, [sample(FAMILIES.pinnedUsed.name, [], 0)]);
  if (settings.counterLatencies) {
    const cached = (v: (r: (typeof rows)[number]) => number) => (r: (typeof rows)[number]) =>
      r.s.cacheEnabled ? v(r) : undefined;
    out += per(
      FAMILIES.cacheHits,
      cached((r) => r.t.cacheHitCount),
    );
    out += per(
      FAMILIES.cacheMisses,
      cached((r) => r.t.cacheMissCount),
    );
    out += per(
      FAMILIES.cacheHitDuration,
      cached((r) => us(r.t.cacheHitNs)),
    );
    out += per(
      FAMILIES.cacheMissDuration,
      cached((r) => us(r.t.cacheMissNs)),
    );
  }
  if (latency && settings.histogramLatencies) {
    const name = FAMILIES.firstResponse.name;
    out += familyText(
      FAMILIES.firstResponse,
      rows.map((r) => histogramSamples(name, r.labels, latency.of(r.s).firstResponse.values())),
    );
  }
  if (latency && settings.summaryLatencies) {
    const summaries: [Family, (l: SeriesLatency) => WindowedSummary | undefined][] = [
      [FAMILIES.requestSummary, (l) => l.request],
      [FAMILIES.queueSummary, (l) => l.queue],
      [FAMILIES.computeInputSummary, (l) => l.computeInput],
      [FAMILIES.computeInferSummary, (l) => l.computeInfer],
      [FAMILIES.computeOutputSummary, (l) => l.computeOutput],
      [FAMILIES.cacheHitSummary, (l) => l.cacheHit],
      [FAMILIES.cacheMissSummary, (l) => l.cacheMiss],
    ];
    for (const [family, pick] of summaries) {
      out += familyText(
        family,
        rows.flatMap((r) => {
          const s = pick(latency.of(r.s));
          return s ? [summarySamples(family.name, r.labels, s.values())] : [];
        }),
      );
    }
  }
  if (input.cache) out += renderCacheMetrics(input.cache);
  if (input.operator) out += renderOperatorMetrics(input.operator);
  if (input.system) {
    const v = input.system;
    out += familyText(FAMILIES.cpuUtilization, [sample(FAMILIES.cpuUtilization.name, [], v.cpuUtilization)]);
    out += familyText(FAMILIES.cpuMemoryTotal, [
      sample(FAMILIES.cpuMemoryTotal.name, [], v.memoryTotalBytes),
    ]);
    out += familyText(FAMILIES.cpuMemoryUsed, [sample(FAMILIES.cpuMemoryUsed.name, [], v.memoryUsedBytes)]);
  }
  return out;
}

/**
 * The cache's own families: Triton's local cache publishes these eight gauges (no labels); a Redis cache
 * has no entry count, utilisation or evictions of its own to report (Redis evicts by itself), so those
 * three are left out for it. Nereid adds the error count and, for Redis, whether it is connected.
 */
export function renderCacheMetrics(m: CacheMetrics): string {
  const one = (family: Family, v: number | undefined): string =>
    v === undefined ? '' : familyText(family, [sample(family.name, [], v)]);
  let out = '';
  out += one(FAMILIES.cacheUtil, m.utilization);
  out += one(FAMILIES.cacheEntries, m.entries);
  out += one(FAMILIES.cacheNumHits, m.hits);
  out += one(FAMILIES.cacheNumMisses, m.misses);
  out += one(FAMILIES.cacheLookups, m.lookups);
  out += one(FAMILIES.cacheEvictions, m.evictions);
  out += one(FAMILIES.cacheLookupDuration, us(m.lookupNs));
  out += one(FAMILIES.cacheInsertionDuration, us(m.insertNs));
  out += one(FAMILIES.cacheErrors, m.errors);
  out += one(FAMILIES.cacheConnected, m.connected === undefined ? undefined : m.connected ? 1 : 0);
  return out;
}

/** Nereid's own operator families: build info, each model version's state, requests by endpoint and status. */
export function renderOperatorMetrics(v: OperatorValues): string {
  let out = '';
  if (v.build) {
    const labels = sortLabels([
      ['version', v.build.version],
      ['node_version', v.build.nodeVersion],
    ]);
    out += familyText(FAMILIES.buildInfo, [sample(FAMILIES.buildInfo.name, labels, 1)]);
  }
  if (v.models) {
    out += familyText(
      FAMILIES.modelState,
      v.models.map((m) =>
        sample(
          FAMILIES.modelState.name,
          sortLabels([
            ['model', m.model],
            ['version', m.version],
            ['state', m.state],
          ]),
          1,
        ),
      ),
    );
  }
  const instances = v.instances;
  if (instances) {
    out += familyText(
      FAMILIES.modelInstances,
      v.instances.map((m) =>
        sample(
          FAMILIES.modelInstances.name,
          sortLabels([
            ['model', m.model],
            ['version', m.version],
          ]),
          m.count,
        ),
      ),
    );
    const ofProcesses = (
      family: Family,
      value: (m: NonNullable<OperatorValues['instances']>[number]) => number | undefined,
    ) =>
      familyText(
        family,
        instances.flatMap((m) => {
          const x = value(m);
          const labels = sortLabels([
            ['model', m.model],
            ['version', m.version],
          ]);
          return x === undefined ? [] : [sample(family.name, labels, x)];
        }),
      );
    out += ofProcesses(FAMILIES.instanceRestarts, (m) => m.restarts);
    out += ofProcesses(FAMILIES.instanceResidentBytes, (m) => m.residentBytes);
  }
  if (v.requests) {
    for (const [protocol, family, key] of [
      ['http', FAMILIES.httpRequests, 'endpoint'],
      ['grpc', FAMILIES.grpcRequests, 'rpc'],
    ] as const) {
      out += familyText(
        family,
        v.requests
          .filter((r) => r.protocol === protocol)
          .map((r) =>
            sample(
              family.name,
              sortLabels([
                [key, r.endpoint],
                ['code', r.code],
              ]),
              r.count,
            ),
          ),
      );
    }
  }
  if (v.onDemand) out += renderOnDemand(v.onDemand);
  return out;
}

function renderOnDemand(d: OnDemandMetrics): string {
  let out = '';
  const perModel = (
    family: (typeof FAMILIES)['onDemandLoads'],
    value: (m: OnDemandMetrics['models'][number]) => number | undefined,
  ): void => {
    const samples: string[] = [];
    for (const m of d.models) {
      const x = value(m);
      if (x !== undefined) samples.push(sample(family.name, sortLabels([['model', m.model]]), x));
    }
    out += familyText(family, samples);
  };
  perModel(FAMILIES.onDemandLoads, (m) => m.loads);
  perModel(FAMILIES.onDemandLoadFailures, (m) => m.loadFailures);
  perModel(FAMILIES.onDemandLoadSeconds, (m) => m.loadSeconds);
  perModel(FAMILIES.onDemandEvictions, (m) => m.evictions);
  perModel(FAMILIES.modelResidentBytes, (m) => m.residentBytes);
  out += familyText(FAMILIES.modelsLoaded, [sample(FAMILIES.modelsLoaded.name, [], d.loaded)]);
  out += familyText(FAMILIES.maxLoadedModels, [sample(FAMILIES.maxLoadedModels.name, [], d.maxLoadedModels)]);
  out += familyText(FAMILIES.modelMemoryBudget, [sample(FAMILIES.modelMemoryBudget.name, [], d.budgetBytes)]);
  return out;
}
