/**
 * On-demand model control (`--model-control-mode=on-demand`, a Nereid addition): a request for a model
 * of the repository that is not loaded loads it, and the least recently used idle models are unloaded
 * first when the load would pass `--max-loaded-models` or `--model-memory-budget` (eviction.ts decides).
 *
 * - One load per model: concurrent requests for a model that is loading wait for that load; each waits at
 *   most `--model-load-wait-secs` (the load goes on without it) and the wait counts as its queue time.
 * - A load that fails answers every request with its error, and is not tried again before a back-off
 *   (1 s, doubling to 60 s) has passed; an explicit load (the repository API) tries at once.
 * - When no loaded model can be unloaded (all busy or pinned), a request waits for one to become idle,
 *   for at most the same wait, then fails UNAVAILABLE (HTTP 503, gRPC UNAVAILABLE) saying why.
 *
 * The manager does the loads and unloads (its locks serialise them with everything else); this module
 * owns only the decisions and the counters the metrics report.
 */
import { NereidError, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { formatBytes, planEviction, type Limits, type Resident } from './eviction.js';

/** What the controller needs from the repository manager. */
export interface OnDemandHost {
  /** The model has a READY version now. */
  isServable(name: string): boolean;
  /** Throws the request error for a model no repository has (NOT_FOUND); returns otherwise. */
  assertInRepository(name: string): void;
  /** Loads (or reloads) the model and the members it needs; rejects with the load's error. */
  loadModel(name: string): Promise<void>;
  /** Unloads the model (its dependents first); resolves when its versions are gone. */
  unloadModel(name: string): Promise<void>;
  /** Every model with a loaded version, with its measured cost and whether it may be unloaded. */
  residents(): Resident[];
}

export interface OnDemandOptions extends Limits {
  /** --model-load-wait-secs in ms: longest a request waits for its model's load (and for room). */
  readonly waitMs: number;
  readonly log: Logger;
  /** How often a request waiting for room looks again; default 20 ms. */
  readonly retryMs?: number;
}

/** Per model: what the metrics report. */
export interface OnDemandModelCounters {
  loads: number;
  loadFailures: number;
  evictions: number;
  /** Sum of the on-demand loads' durations, in ns. */
  loadNs: number;
}

interface Failure {
  readonly error: NereidError;
  readonly until: number;
  readonly delayMs: number;
}

const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class OnDemandController {
  private tick = 0;
  private readonly lastUsed = new Map<string, number>();
  private readonly loading = new Map<string, Promise<void>>();
  /** Loads admitted and not finished: their estimated cost. */
  private readonly reserved = new Map<string, number>();
  private readonly evicting = new Set<string>();
  /** Loads still waiting for room, each with why the last look found none (eviction.ts's reason). */
  private readonly noRoom = new Map<string, string>();
  private readonly failures = new Map<string, Failure>();
  /** The last measured cost of each model that was loaded: the estimate for its next load. */
  private readonly lastCost = new Map<string, number>();
  readonly counters = new Map<string, OnDemandModelCounters>();
  private closed = false;

  constructor(
    private readonly host: OnDemandHost,
    readonly options: OnDemandOptions,
  ) {}

  /** Marks a use of the model (the LRU order). */
  touch(name: string): void {
    this.lastUsed.set(name, ++this.tick);
  }

  /**
   * For a request: undefined when the model serves now (its use is recorded), else a promise that
   * resolves (with the time the wait began, for the request's queue time) once it does, or rejects with
   * why it cannot (its load failed, no room within the wait, not in the repository).
   */
  ensure(name: string): Promise<bigint> | undefined {
    this.touch(name);
    if (this.host.isServable(name)) return undefined;
    const since = process.hrtime.bigint();
    return this.waitFor(name).then(() => since);
  }

  /** Loads a model by request of the repository API: back-off cleared, admitted under the limits. */
  async explicitLoad(name: string, load: () => Promise<void>): Promise<void> {
    this.failures.delete(name);
    this.touch(name);
    await this.admitted(name, load, Date.now() + this.options.waitMs);
  }

  /** The model's on-demand load failed lately: why (shown in the index until it is tried again). */
  failureOf(name: string): NereidError | undefined {
    const f = this.failures.get(name);
    return f && Date.now() < f.until ? f.error : undefined;
  }

  lastUse(name: string): number {
    return this.lastUsed.get(name) ?? 0;
  }

  /** Loads in progress (the count limit counts them). */
  get loadsInProgress(): number {
    return this.loading.size;
  }

  close(): void {
    this.closed = true;
  }

  private waitFor(name: string): Promise<void> {
    const failure = this.failures.get(name);
    if (failure && Date.now() < failure.until) return Promise.reject(failure.error);
    let pending = this.loading.get(name);
    if (!pending) {
      try {
        this.host.assertInRepository(name);
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      pending = this.start(name);
    }
    return this.bounded(pending, name);
  }

  private start(name: string): Promise<void> {
    const deadline = Date.now() + this.options.waitMs;
    const p = this.admitted(name, () => this.host.loadModel(name), deadline).then(
      () => {
        this.failures.delete(name);
      },
      (err: unknown) => {
        const e = NereidError.from(err);
        // Room that never came is not the model's fault: the next request tries again at once.
        if (!(e instanceof NoRoomError)) {
          const prev = this.failures.get(name);
          const delayMs = prev ? Math.min(prev.delayMs * 2, MAX_BACKOFF_MS) : FIRST_BACKOFF_MS;
          this.failures.set(name, { error: e, until: Date.now() + delayMs, delayMs });
          this.count(name).loadFailures++;
        }
        throw e;
      },
    );
    this.loading.set(name, p);
    void p.then(
      () => this.loading.delete(name),
      () => this.loading.delete(name),
    );
    return p;
  }

  /** A request waits at most waitMs for the load; the load itself goes on. */
  private bounded(p: Promise<void>, name: string): Promise<void> {
    const ms = this.options.waitMs;
    if (ms <= 0) return p;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // Say which wait ran out: the one for room (no load has begun) or the load itself.
      timer = setTimeout(() => {
        const reason = this.noRoom.get(name);
        reject(
          reason === undefined
            ? unavailable(
                `model '${name}' did not finish loading within ${ms / 1000} s (--model-load-wait-secs); its load is still running, try again`,
              )
            : noRoomError(name, reason, ms),
        );
      }, ms);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }

  /** Makes room for `name` (unloading LRU idle models), runs `load`, then trims back under the budget. */
  private async admitted(name: string, load: () => Promise<void>, deadline: number): Promise<void> {
    const estimate = this.estimate(name);
    await this.makeRoom(name, estimate, deadline);
    const started = process.hrtime.bigint();
    try {
      await load();
    } finally {
      this.reserved.delete(name);
    }
    const c = this.count(name);
    c.loads++;
    c.loadNs += Number(process.hrtime.bigint() - started);
    const cost = this.host.residents().find((r) => r.name === name)?.bytes;
    if (cost !== undefined) this.lastCost.set(name, cost);
    if (this.options.log.isVerbose()) {
      this.options.log.verbose(
        `on-demand: loaded '${name}' (${cost === undefined ? 'cost unknown' : formatBytes(cost)})`,
      );
    }
    await this.trimToBudget(name);
  }

  /** The cost a model is expected to have: its last measured one, else the mean of those loaded. */
  private estimate(name: string): number {
    const known = this.lastCost.get(name);
    if (known !== undefined) return known;
    const loaded = this.host.residents().filter((r) => r.bytes > 0);
    if (loaded.length === 0) return 0;
    return Math.round(loaded.reduce((s, r) => s + r.bytes, 0) / loaded.length);
  }

  private residents(exclude?: string): Resident[] {
    return this.host
      .residents()
      .filter((r) => r.name !== exclude)
      .map((r) => ({
        ...r,
        lastUsed: this.lastUse(r.name),
        // A model being unloaded still holds its memory and its slot, and cannot be chosen twice.
        busy: r.busy || this.evicting.has(r.name) || this.reserved.has(r.name),
      }));
  }

  private async makeRoom(name: string, estimate: number, deadline: number): Promise<void> {
    try {
      await this.findRoom(name, estimate, deadline);
    } finally {
      this.noRoom.delete(name);
    }
  }

  private async findRoom(name: string, estimate: number, deadline: number): Promise<void> {
    for (;;) {
      if (this.closed) throw unavailable('the model repository manager is shut down');
      const others = new Map(this.reserved);
      others.delete(name);
      const reservedBytes = [...others.values()].reduce((s, b) => s + b, 0);
      const plan = planEviction(this.residents(name), this.options, estimate, others.size, reservedBytes);
      if (plan.fits) {
        this.reserved.set(name, estimate);
        await Promise.all(plan.victims.map((v) => this.evict(v, `to make room for '${name}'`)));
        return;
      }
      this.noRoom.set(name, plan.reason);
      if (Date.now() >= deadline) throw noRoomError(name, plan.reason, this.options.waitMs);
      await sleep(this.options.retryMs ?? 20);
    }
  }

  /** After a load measured more than estimated: unload LRU idle models until the budget holds again. */
  private async trimToBudget(loaded: string): Promise<void> {
    if (this.options.budgetBytes <= 0) return;
    const self = this.host.residents().find((r) => r.name === loaded);
    if (!self) return;
    const others = new Map(this.reserved);
    const plan = planEviction(
      this.residents(loaded),
      { maxModels: 0, budgetBytes: this.options.budgetBytes },
      self.bytes,
      others.size,
      [...others.values()].reduce((s, b) => s + b, 0),
    );
    if (!plan.fits) {
      this.options.log.warn(
        `on-demand: model '${loaded}' measured ${formatBytes(self.bytes)} after its load, more than the budget leaves: ${plan.reason}`,
      );
      return;
    }
    await Promise.all(plan.victims.map((v) => this.evict(v, `the budget after '${loaded}' loaded`)));
  }

  private async evict(name: string, why: string): Promise<void> {
    this.evicting.add(name);
    try {
      this.options.log.info(`on-demand: unloading least recently used model '${name}' (${why})`);
      await this.host.unloadModel(name);
      this.count(name).evictions++;
    } finally {
      this.evicting.delete(name);
    }
  }

  private count(name: string): OnDemandModelCounters {
    let c = this.counters.get(name);
    if (!c) {
      c = { loads: 0, loadFailures: 0, evictions: 0, loadNs: 0 };
      this.counters.set(name, c);
    }
    return c;
  }
}

/** No room within the wait (UNAVAILABLE): not a failure of the model, so no back-off. */
class NoRoomError extends NereidError {
  constructor(message: string) {
    super('UNAVAILABLE', message);
  }
}

function noRoomError(name: string, reason: string, waitMs: number): NoRoomError {
  return new NoRoomError(
    `cannot load model '${name}': ${reason} (waited ${waitMs / 1000} s for room, --model-load-wait-secs); no load has begun, try again`,
  );
}
