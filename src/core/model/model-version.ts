/**
 * One loaded model version: its frozen config, its instances, its scheduler and statistics. It accepts
 * requests while READY, and unload() lets every accepted request finish (a decoupled model's open response
 * streams included) before the instances go away.
 * An unload that waits longer than its timeout (a hung model) stops waiting: the requests still queued or
 * running fail with UNAVAILABLE and the instances are aborted (InstanceHandle.abort kills a hung stub or
 * worker), so unloads and reloads always finish.
 * When the backend can tell the model's own readiness (ModelHandle.isReady), it is polled while READY
 * (model-health.ts): a model that says it is not ready makes isReady() false — readiness probes, the
 * repository index and strict server readiness follow — but requests are still accepted, as a readiness
 * probe only steers traffic (Triton's model-ready endpoint is such a probe).
 */
import type {
  CustomMetricFamily,
  InstanceHandle,
  ModelChatTemplate,
  ModelHandle,
} from '../../backend-api/backend.js';
import { fromConfigDataType } from '../../common/datatype.js';
import { unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { DEFAULT_READINESS_POLL, ModelHealthMonitor, type ReadinessPollOptions } from '../model-health.js';
import { VersionCache, type ResponseCache } from '../cache/index.js';
import type { LoadedVersion } from '../repository/contract.js';
import { ResponseStream, type ResponseSink } from '../response-stream.js';
import { createScheduler } from '../scheduling/factory.js';
import { InstancePool } from '../scheduling/instance-pool.js';
import type { ModelRateLimit } from '../scheduling/rate-limiter.js';
import type { Scheduler } from '../scheduling/scheduler.js';
import { ModelStats } from '../stats/model-stats.js';
import type { StatsRegistry } from '../stats/registry.js';
import type { InferenceRequest, InferenceResponse, ModelMetadata, TensorMetadata } from '../types.js';
import { admitRequest, versionNotReady } from './admission.js';
import { VersionHolds } from './holds.js';
import { InstanceProcesses, type InstanceProcessesSnapshot } from './instance-processes.js';
import type { VersionMemory } from './memory.js';
import { JobSender, type OutputContext } from '../scheduling/job-sender.js';
import { OutputContract } from '../scheduling/output-contract.js';
import { NEVER_ABORTED } from '../../common/never-aborted.js';

type State = 'READY' | 'UNLOADING' | 'UNLOADED';

export interface ModelVersionParts {
  readonly config: FrozenModelConfig;
  readonly version: number;
  readonly handle: ModelHandle;
  readonly instances: readonly InstanceHandle[];
  readonly labels: ReadonlyMap<string, readonly string[]>;
  readonly log: Logger;
  /** `--strict-model-outputs`: an output whose datatype or shape is not the config's fails its request. */
  readonly strictModelOutputs?: boolean;
  /** The server's metrics registry; the version's statistics join its series while it is loaded. */
  readonly statsRegistry?: StatsRegistry;
  /** How long loading this version took (nv_model_load_duration_secs). */
  readonly loadDurationNs?: number;
  /** The instances' registration with the server's rate limiter (when --rate-limit is on). */
  readonly rateLimit?: ModelRateLimit;
  /** How the model's own readiness is polled (when its handle has isReady); default every 5 s. */
  readonly readinessPoll?: ReadinessPollOptions;
  /**
   * How long unload() waits for accepted requests before it fails them and aborts the instances
   * (--model-unload-timeout-secs); 0 or omitted = as long as they take.
   */
  readonly unloadTimeoutMs?: number;
  /** Called once the version's instances are closed (the loader gives their budget back). */
  readonly onUnloaded?: () => void;
  /** The server's response cache; used when the config enables it (response_cache { enable: true }). */
  readonly responseCache?: ResponseCache;
  /** What the version costs in memory, when the server measures it (on-demand mode's budget). */
  readonly memory?: VersionMemory;
}

/**
 * The cache a version uses, or undefined: the server has one and the config enables it. Decoupled and
 * sequence models never get here with the cache enabled (their configs are refused), checked again so
 * a future config path cannot cache them by accident.
 */
export function versionCacheOf(
  cache: ResponseCache | undefined,
  config: FrozenModelConfig,
  version: number,
  stats: ModelStats,
  log: Logger,
): VersionCache | undefined {
  if (cache === undefined || config.response_cache?.enable !== true) return undefined;
  if (config.model_transaction_policy?.decoupled === true || config.sequence_batching !== undefined) {
    return undefined;
  }
  return new VersionCache(cache, config.name, String(version), stats, log);
}

export function modelMetadataOf(config: FrozenModelConfig, versions: readonly string[]): ModelMetadata {
  const batching = config.max_batch_size > 0;
  const tensor = (t: { name: string; data_type: string; dims: readonly number[] }): TensorMetadata => ({
    name: t.name,
    datatype: fromConfigDataType(t.data_type) ?? 'BYTES',
    shape: batching ? [-1, ...t.dims] : [...t.dims],
  });
  return {
    name: config.name,
    versions: [...versions],
    platform: config.platform || config.backend,
    inputs: config.input.map(tensor),
    outputs: config.output.map(tensor),
  };
}

export class ModelVersion implements LoadedVersion {
  readonly modelName: string;
  readonly version: number;
  readonly config: FrozenModelConfig;
  readonly metadata: ModelMetadata;
  readonly stats: ModelStats;
  private state: State = 'READY';
  private readonly pool: InstancePool;
  private readonly scheduler: Scheduler;
  private readonly outputContext: OutputContext;
  readonly decoupled: boolean;
  private unloading: Promise<void> | undefined;
  private readonly detachStats: (() => void) | undefined;
  private readonly health: ModelHealthMonitor | undefined;
  private readonly cache: VersionCache | undefined;
  private readonly holds = new VersionHolds();
  /** Restarts and memory of instances that run in processes of their own (Python stubs). */
  private readonly processes: InstanceProcesses | undefined;
  /** Requests accepted whose response stream has not ended. */
  private inFlight = 0;
  private readonly requestEnded = (): void => {
    this.inFlight--;
  };

  constructor(private readonly parts: ModelVersionParts) {
    this.config = parts.config;
    this.modelName = parts.config.name;
    this.version = parts.version;
    this.metadata = modelMetadataOf(parts.config, [String(parts.version)]);
    this.stats = new ModelStats(this.modelName, String(this.version));
    this.decoupled = parts.config.model_transaction_policy?.decoupled === true;
    this.pool = new InstancePool(parts.instances, this.stats, parts.log, parts.rateLimit, {
      decoupled: this.decoupled,
    });
    this.scheduler = createScheduler({ config: parts.config, pool: this.pool, log: parts.log });
    this.stats.pendingSource = () => this.scheduler.queued;
    this.detachStats = parts.statsRegistry?.attach(this.stats, parts.config, parts.loadDurationNs);
    this.cache = versionCacheOf(parts.responseCache, parts.config, parts.version, this.stats, parts.log);
    this.outputContext = {
      config: parts.config,
      version: String(parts.version),
      labels: parts.labels,
      stats: this.stats,
      contract: new OutputContract({
        config: parts.config,
        version: String(parts.version),
        strict: parts.strictModelOutputs === true,
        log: parts.log,
      }),
    };
    this.processes = InstanceProcesses.of(parts.instances);
    const handle = parts.handle;
    if (handle.isReady) {
      this.health = new ModelHealthMonitor(
        () => handle.isReady!(),
        parts.readinessPoll ?? DEFAULT_READINESS_POLL,
        parts.log,
        `model '${this.modelName}' version ${this.version}`,
      );
      this.health.start();
    }
  }

  /** Loaded, not unloading, and the model does not say otherwise. */
  isReady(): boolean {
    return this.state === 'READY' && this.health?.ready !== false;
  }

  /** Why a READY version is not ready (the model said so); undefined otherwise. */
  notReadyReason(): string | undefined {
    return this.state === 'READY' ? this.health?.reason : undefined;
  }

  /** The readiness poller, if the model has one (tests). */
  /** How many instances serve this version. */
  get instanceCount(): number {
    return this.parts.instances.length;
  }

  /** Restarts and resident memory of the instances' own processes; undefined when they have none. */
  instanceProcesses(): InstanceProcessesSnapshot | undefined {
    return this.processes?.snapshot();
  }

  get healthMonitor(): ModelHealthMonitor | undefined {
    return this.health;
  }

  /**
   * The families the model's instances defined (empty when its backend has none). Only while READY: a
   * reload's old version draining next to the new one must not add a second copy of the same series.
   */
  async customMetrics(): Promise<readonly CustomMetricFamily[]> {
    const handle = this.parts.handle;
    if (this.state !== 'READY' || !handle.customMetrics) return [];
    return handle.customMetrics();
  }

  /**
   * Holds this version for one request (model-handle.ts): while held, unload() waits before draining and
   * infer(request, true) is accepted although the version is unloading. Only a READY version can be held
   * (`again`: the caller already holds it, so an unloading version can be held once more).
   */
  hold(again = false): () => void {
    if (again ? !this.holds.honoured : this.state !== 'READY') throw this.notReady();
    return this.holds.add();
  }

  /**
   * Validates and enqueues; validation errors throw synchronously (nothing was accepted). `held`: the
   * caller holds the version (hold()), so an unloading version still accepts the request.
   */
  infer(request: InferenceRequest, held = false, queuedSince?: bigint): ResponseStream<InferenceResponse> {
    // A request that waited for an on-demand load arrived then: the wait counts as its queue time.
    const requestStart = queuedSince ?? process.hrtime.bigint();
    const { prepared, record } = admitRequest(
      this,
      this.state,
      this.holds,
      held,
      request,
      requestStart,
      queuedSince,
    );
    const signal = request.signal ?? NEVER_ABORTED;
    const stream = new ResponseStream<InferenceResponse>({ signal, onEnd: this.requestEnded });
    this.inFlight++;
    const run = (sink: ResponseSink<InferenceResponse>): void => {
      const sender = new JobSender(this.outputContext, prepared, sink, record, this.decoupled);
      this.scheduler.enqueue({ request: prepared, sender, signal, acceptedAt: record.queueStart });
    };
    if (this.cache) this.cache.serve(prepared, record, stream, run);
    else run(stream);
    return stream;
  }

  private notReady(): Error {
    return versionNotReady(this.modelName, this.version);
  }

  get sharesInputMemory(): boolean {
    return this.parts.handle.sharesInputMemory === true;
  }

  get chatTemplate(): ModelChatTemplate | undefined {
    return this.parts.handle.chatTemplate;
  }

  /** Requests hold the version or are in flight (on-demand mode does not unload it to make room). */
  isBusy(): boolean {
    return this.inFlight > 0 || this.holds.size > 0;
  }

  /** Measured bytes the version holds (0 when the server does not measure). */
  residentBytes(): number {
    return this.parts.memory?.bytes() ?? 0;
  }

  get pendingRequests(): number {
    return this.scheduler.queued;
  }

  unload(): Promise<void> {
    this.unloading ??= this.doUnload();
    return this.unloading;
  }

  private async doUnload(): Promise<void> {
    this.state = 'UNLOADING';
    this.health?.stop();
    this.processes?.stop();
    try {
      await this.drainWithin(this.parts.unloadTimeoutMs ?? 0);
      // Every accepted request has ended: the statistics are final and can leave the metrics series.
      this.detachStats?.();
      await this.pool.close();
      await this.parts.handle.unload();
    } finally {
      this.state = 'UNLOADED';
      this.parts.onUnloaded?.();
    }
  }

  /**
   * Lets accepted requests finish (queued ones run, a decoupled model's open streams end). After
   * `timeoutMs` (0 = never) the rest fail and the instances are aborted, which ends a hung execution;
   * an instance that cannot be aborted (an onnxruntime run) is still waited for, as it always ends.
   */
  private async drainWithin(timeoutMs: number): Promise<void> {
    const drained = (async (): Promise<void> => {
      // Requests that resolved this version before the unload began run on it (Triton's requests hold
      // their model): every hold is released (the request accepted or given up) before the drain.
      await this.holds.whenReleased();
      // Requests still waiting for a cache lookup were accepted: they reach the scheduler before it drains.
      await this.cache?.whenIdle();
      await this.scheduler.drain();
      // Executions are over; a decoupled model's streams may still be open (their clients may cancel them).
      await this.pool.whenStreamsEnded();
    })();
    if (timeoutMs <= 0) return drained;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeoutMs);
    });
    const timedOut = await Promise.race([drained.then(() => false), expired]);
    clearTimeout(timer);
    if (!timedOut) return;
    const secs = timeoutMs / 1000;
    const what = `model '${this.modelName}' version ${this.version}`;
    this.parts.log.error(
      `${what} did not finish its requests within ${secs} s of being unloaded (--model-unload-timeout-secs); failing them and stopping its instances`,
    );
    this.holds.revoke();
    this.pool.abort(
      unavailable(
        `${what} was unloaded and its requests did not finish within ${secs} s (--model-unload-timeout-secs)`,
      ),
    );
    await drained;
  }
}
