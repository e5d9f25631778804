/**
 * One loaded ensemble version: a servable object like ModelVersion, but with no backend and no instances.
 * Its infer() validates the request against the ensemble's own config and runs the step graph (run.ts).
 * It is READY while loaded and every member a step names can serve; unload() lets accepted requests finish
 * (the repository unloads an ensemble before its members, so they still serve meanwhile).
 */
import { silentLogger, type Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { VersionCache, type ResponseCache } from '../cache/index.js';
import { admitRequest, versionNotReady } from '../model/admission.js';
import { VersionHolds } from '../model/holds.js';
import { modelMetadataOf } from '../model/model-version.js';
import { ResponseStream, type ResponseSink } from '../response-stream.js';
import { ModelStats } from '../stats/model-stats.js';
import type { StatsRegistry } from '../stats/registry.js';
import type { InferenceRequest, InferenceResponse, ModelMetadata } from '../types.js';
import { StepLimiter } from './limiter.js';
import { requestPlan, type EnsemblePlan, type RequestPlan } from './plan.js';
import { EnsembleRun, type EnsembleContext } from './run.js';
import type { ServableVersion, VersionLookup } from '../model/servable.js';

type State = 'READY' | 'UNLOADING' | 'UNLOADED';

/** Distinct output subsets whose request plans are kept (clients usually ask for one or two). */
const PLAN_CACHE_SIZE = 32;

export interface EnsembleVersionParts {
  /** The ensemble's config, model_transaction_policy.decoupled set from its members (as Triton does). */
  readonly config: FrozenModelConfig;
  readonly version: number;
  readonly plan: EnsemblePlan;
  /** Per step: the member was decoupled at load time. */
  readonly decoupledSteps: readonly boolean[];
  readonly members: VersionLookup;
  readonly labels: ReadonlyMap<string, readonly string[]>;
  readonly statsRegistry?: StatsRegistry;
  readonly loadDurationNs?: number;
  /** Present when the ensemble's top level uses the response cache (load.ts decides). */
  readonly responseCache?: ResponseCache;
  readonly log?: Logger;
}

export class EnsembleVersion implements ServableVersion {
  readonly modelName: string;
  readonly version: number;
  readonly config: FrozenModelConfig;
  readonly metadata: ModelMetadata;
  readonly stats: ModelStats;
  readonly plan: EnsemblePlan;
  readonly decoupled: boolean;
  private state: State = 'READY';
  private readonly ctx: EnsembleContext;
  private readonly fullPlan: RequestPlan;
  private readonly subsetPlans = new Map<string, RequestPlan>();
  private readonly memberRefs: readonly { name: string; version: string | undefined }[];
  private active = 0;
  private drained: (() => void) | undefined;
  private unloading: Promise<void> | undefined;
  private readonly detachStats: (() => void) | undefined;
  private readonly cache: VersionCache | undefined;
  private readonly holds = new VersionHolds();

  constructor(parts: EnsembleVersionParts) {
    this.config = parts.config;
    this.modelName = parts.config.name;
    this.version = parts.version;
    this.plan = parts.plan;
    this.decoupled = parts.config.model_transaction_policy?.decoupled === true;
    this.metadata = modelMetadataOf(parts.config, [String(parts.version)]);
    this.stats = new ModelStats(this.modelName, String(this.version));
    this.detachStats = parts.statsRegistry?.attach(this.stats, parts.config, parts.loadDurationNs);
    this.cache =
      parts.responseCache === undefined
        ? undefined
        : new VersionCache(
            parts.responseCache,
            this.modelName,
            String(this.version),
            this.stats,
            parts.log ?? silentLogger(),
          );
    const maxInflight = parts.config.ensemble_scheduling?.max_inflight_requests ?? 0;
    this.ctx = {
      config: parts.config,
      version: String(parts.version),
      plan: parts.plan,
      decoupled: this.decoupled,
      decoupledSteps: parts.decoupledSteps,
      members: parts.members,
      labels: parts.labels,
      limiters: parts.plan.steps.map(() => (maxInflight > 0 ? new StepLimiter(maxInflight) : undefined)),
      stats: this.stats,
    };
    this.fullPlan = requestPlan(parts.plan, parts.plan.outputs, parts.decoupledSteps);
    const refs = new Map<string, { name: string; version: string | undefined }>();
    for (const s of parts.plan.steps) {
      const version = s.modelVersion < 0 ? undefined : String(s.modelVersion);
      refs.set(`${s.modelName}\0${version ?? ''}`, { name: s.modelName, version });
    }
    this.memberRefs = [...refs.values()];
  }

  /** Loaded, and every member can serve: an ensemble whose member went away is not ready. */
  isReady(): boolean {
    if (this.state !== 'READY') return false;
    for (const m of this.memberRefs) {
      try {
        if (!this.ctx.members.getVersion(m.name, m.version).isReady()) return false;
      } catch {
        return false;
      }
    }
    return true;
  }

  /** Requests accepted and not yet settled (steps may still be running after a failure). */
  get pendingRequests(): number {
    return this.active;
  }

  /** As ModelVersion.hold: a request that resolved this version runs on it although it starts unloading. */
  hold(again = false): () => void {
    if (again ? !this.holds.honoured : this.state !== 'READY') throw this.notReady();
    return this.holds.add();
  }

  /** Requests hold it or run its steps (on-demand mode does not unload it, nor its members, then). */
  isBusy(): boolean {
    return this.active > 0 || this.holds.size > 0;
  }

  infer(request: InferenceRequest, held = false, queuedSince?: bigint): ResponseStream<InferenceResponse> {
    const requestStart = queuedSince ?? process.hrtime.bigint();
    // Queue time starts at admission, also after a wait for an on-demand load (the model's counts the wait).
    const { prepared, record } = admitRequest(
      this,
      this.state,
      this.holds,
      held,
      request,
      requestStart,
      undefined,
    );
    // No queue of its own: the request is "executing" once it reaches the step graph (as in Triton).
    record.computeStart = record.queueStart;
    const stream = new ResponseStream<InferenceResponse>();
    const run = (sink: ResponseSink<InferenceResponse>): void => {
      this.active++;
      new EnsembleRun(
        this.ctx,
        this.planFor(prepared.outputs.map((o) => o.name)),
        prepared,
        request.signal,
        sink,
        record,
        () => this.settled(),
      ).start();
    };
    if (this.cache) this.cache.serve(prepared, record, stream, run);
    else run(stream);
    return stream;
  }

  private notReady(): Error {
    return versionNotReady(this.modelName, this.version);
  }

  private planFor(outputs: readonly string[]): RequestPlan {
    if (outputs.length === this.plan.outputs.length) return this.fullPlan; // names are unique and known
    const key = outputs.join('\0');
    let p = this.subsetPlans.get(key);
    if (!p) {
      p = requestPlan(this.plan, outputs, this.ctx.decoupledSteps);
      if (this.subsetPlans.size >= PLAN_CACHE_SIZE) {
        this.subsetPlans.delete(this.subsetPlans.keys().next().value as string);
      }
      this.subsetPlans.set(key, p);
    }
    return p;
  }

  private settled(): void {
    this.active--;
    if (this.active === 0) this.drained?.();
  }

  unload(): Promise<void> {
    this.unloading ??= this.doUnload();
    return this.unloading;
  }

  private async doUnload(): Promise<void> {
    this.state = 'UNLOADING';
    // Requests that resolved this version before the unload began still run on it (holds.ts).
    await this.holds.whenReleased();
    // Requests still waiting for a cache lookup were accepted: they start their runs before the drain.
    await this.cache?.whenIdle();
    if (this.active > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    this.detachStats?.();
    this.state = 'UNLOADED';
  }
}
