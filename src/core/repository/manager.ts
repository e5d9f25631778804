/**
 * ModelRepositoryManager: owns every model version the server can serve. It reads the repositories
 * (layout.ts, reader.ts), applies the model control mode (none / poll / explicit / on-demand, whose
 * decisions on-demand.ts makes; a poll is read here, planned by poll-plan.ts, applied by poll-apply.ts),
 * orders loads and unloads along ensemble dependencies (dependencies.ts), and has versions.ts load, swap
 * and unload each model's versions with Triton's states (lifecycle.ts; a record's state, record-state.ts). The server asks it synchronous questions
 * (getVersion, index, allReady) that never wait for a load; state-changing operations are serialised per
 * model (locks.ts).
 *
 * Reloads are make-before-break: new versions load beside the serving ones, are swapped in at once, and
 * only then are the old ones unloaded (LoadedVersion.unload drains accepted requests). A failed reload
 * leaves the serving versions untouched.
 *
 * Watch mode (poll mode plus watcher.ts) polls on file events, and backs off from broken models: a model
 * whose load failed is not tried again (nor its error logged again) until its folder's fingerprint changes.
 */
import { stat } from 'node:fs/promises';
import { NereidError } from '../../common/errors.js';
import type { DirEntry } from '../storage/filesystem.js';
import { LocalFileSystem } from '../storage/local.js';
import { RepositoryStorage } from '../storage/storage.js';
import type { Logger } from '../../common/logger.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import type { LoadOptions, ModelVersionState, RepositoryIndexEntry } from '../types.js';
import type { LoadedVersion, VersionLoader } from './contract.js';
import { closure, findCycle } from './dependencies.js';
import {
  scanRepositories,
  scanRepositoriesSync,
  validateModelName,
  type RepositoryRoot,
  type RepositoryScan,
} from './layout.js';
import { ModelRecord, allReady, buildIndex, findServingVersion, type ModelSource } from './lifecycle.js';
import { Limiter, NameLocks } from './locks.js';
import type { Resident } from './eviction.js';
import { OnDemandController } from './on-demand.js';
import { msg } from './messages.js';
import {
  resolveOptions,
  type ModelControlMode,
  type RepositoryOptions,
  type ResolvedRepositoryOptions,
} from './options.js';
import {
  materializeOverrides,
  removeStaleOverrides,
  removeTree,
  type MaterializedModel,
} from './overrides.js';
import { Poller } from './poller.js';
import { RepositoryWatcher } from './watcher.js';
import { readModel, withModelName, type PolledModel, type ReadSettings } from './reader.js';
import { applyPoll, type ModelLoadFailure, type PollApplyHost, type PollSummary } from './poll-apply.js';
import { planPoll, type PollReading } from './poll-plan.js';
import { VersionLifecycle } from './versions.js';

export type { ModelLoadFailure, PollSummary } from './poll-apply.js';

export interface OnDemandStatus {
  readonly maxLoadedModels: number;
  readonly budgetBytes: number;
  /** Models with a loaded version now. */
  readonly loaded: number;
  readonly models: readonly {
    readonly model: string;
    readonly loads: number;
    readonly loadFailures: number;
    readonly evictions: number;
    readonly loadSeconds: number;
    /** Measured bytes; absent while the model is not loaded. */
    readonly residentBytes?: number;
  }[];
}

export interface VersionStatus {
  readonly version: number;
  readonly state: ModelVersionState;
  readonly reason: string;
}

/** A model folder's fingerprint, or undefined when even that cannot be read. */
async function fingerprintOf(source: ModelSource): Promise<string | undefined> {
  if (source.override) return undefined;
  try {
    return await (await source.fs.openFolder(source.modelDir)).fingerprint();
  } catch {
    return undefined;
  }
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
/** Parallelism of folder reads during a full poll; reads are cheap but a repository may hold thousands. */
const POLL_READ_CONCURRENCY = 16;
/** The index re-lists an object-store repository in the background when its last listing is older. */
const REMOTE_INDEX_REFRESH_MS = 1000;

/** The last listing of an object-store repository root, for the synchronous index. */
interface RemoteListing {
  entries: readonly DirEntry[] | undefined;
  error: string | undefined;
  at: number;
  refreshing: boolean;
}

export class ModelRepositoryManager<V extends LoadedVersion = LoadedVersion> {
  readonly options: ResolvedRepositoryOptions;
  private readonly log: Logger;
  private readonly readSettings: ReadSettings;
  private readonly records = new Map<string, ModelRecord<V>>();
  private readonly locks = new NameLocks();
  private readonly limiter: Limiter;
  private readonly versions: VersionLifecycle<V>;
  private poller: Poller | undefined;
  private watcher: RepositoryWatcher | undefined;
  private started = false;
  private closing: Promise<void> | undefined;
  private readonly storage: RepositoryStorage;
  private readonly ownsStorage: boolean;
  private readonly roots: readonly RepositoryRoot[];
  private readonly remoteListings = new Map<string, RemoteListing>();
  /** On-demand mode's decisions (undefined in the other modes). */
  readonly onDemand: OnDemandController | undefined;
  /** On-demand mode: the repository's model names as last scanned, for a request's quick check. */
  private repositoryNames: { names: ReadonlySet<string>; at: number } = { names: new Set(), at: 0 };
  /** On-demand mode: models that called a model through the server (BLS), by callee. */
  private readonly callers = new Map<string, Set<string>>();

  constructor(
    options: RepositoryOptions,
    private readonly loader: VersionLoader<V>,
  ) {
    this.options = resolveOptions(options);
    this.log = this.options.log;
    this.ownsStorage = options.storage === undefined;
    this.storage = options.storage ?? new RepositoryStorage({ tempDirectory: this.options.tempDirectory });
    this.roots = this.options.repositoryPaths.map((p) => ({
      path: p,
      fs: this.storage.open(this.options.repositorySources.get(p) ?? p),
    }));
    for (const r of this.roots) {
      if (r.fs.remote)
        this.remoteListings.set(r.path, { entries: undefined, error: undefined, at: 0, refreshing: false });
    }
    this.limiter = new Limiter(this.options.modelLoadThreadCount);
    this.versions = new VersionLifecycle(loader, this.limiter, this.log);
    this.readSettings = Object.freeze({
      modelConfigName: this.options.modelConfigName,
      maxConfigFileBytes: this.options.maxConfigFileBytes,
      parseConfigText: this.options.parseConfigText,
      log: this.log,
    });
    this.onDemand =
      this.options.controlMode === 'on-demand'
        ? new OnDemandController(
            {
              isServable: (name) => this.records.get(name)?.hasReady() === true,
              assertInRepository: (name) => this.assertInRepository(name),
              loadModel: (name) => this.loadByName(name, {}),
              unloadModel: (name) => this.unloadByName(name, {}),
              residents: () => this.residents(),
            },
            {
              maxModels: this.options.maxLoadedModels,
              budgetBytes: this.options.memoryBudgetBytes,
              waitMs: this.options.loadWaitMs,
              log: this.log,
            },
          )
        : undefined;
  }

  get mode(): ModelControlMode {
    return this.options.controlMode;
  }

  // ---------------------------------------------------------------- queries (synchronous, never wait)

  /** The version that serves a request: '' / undefined = the highest READY one. Triton's errors. */
  getVersion(name: string, version?: string): V {
    return findServingVersion(this.records.get(name), name, version);
  }

  /** Every version that is READY or still draining (UNLOADING). */
  loadedVersions(): V[] {
    const out: V[] = [];
    for (const r of this.records.values()) {
      for (const s of r.slots.values()) if (s.loaded) out.push(s.loaded);
    }
    return out;
  }

  /** READY versions of a model, ascending ([] for an unknown model). */
  readyVersions(name: string): number[] {
    return this.records.get(name)?.readyVersions() ?? [];
  }

  /** Strict readiness: every model a load was attempted for is READY (or deliberately unloaded). */
  allReady(): boolean {
    // On-demand mode: only the pinned models must be READY; the others load when asked for.
    if (this.onDemand) return allReady([...this.records.values()].filter((r) => r.pinned));
    return allReady(this.records.values());
  }

  /** Names of the models a load was ever attempted for, sorted. */
  modelNames(): string[] {
    return [...this.records.values()]
      .filter((r) => r.tracked)
      .map((r) => r.name)
      .sort();
  }

  /** Every version the lifecycle knows of a model, ascending. */
  versionStates(name: string): VersionStatus[] {
    const r = this.records.get(name);
    if (!r) return [];
    return [...r.slots]
      .sort(([a], [b]) => a - b)
      .map(([version, s]) => ({ version, state: s.state, reason: s.reason }));
  }

  /**
   * The repository index (POST /v2/repository/index), read from disk and the lifecycle. An object-store
   * repository answers from its latest listing (every poll and load lists it again; the index itself
   * starts a background re-listing when the last one is older than a second), so the index never waits on
   * the network.
   */
  index(readyOnly: boolean): RepositoryIndexEntry[] {
    let scan: RepositoryScan;
    try {
      scan = scanRepositoriesSync(this.roots, (root) => this.lastListing(root));
    } catch (err) {
      throw NereidError.from(err, 'INTERNAL');
    }
    return buildIndex(this.records, scan, readyOnly);
  }

  private lastListing(root: RepositoryRoot): readonly DirEntry[] {
    const l = this.remoteListings.get(root.path);
    if (!l) return [];
    if (!l.refreshing && !this.closing && Date.now() - l.at > REMOTE_INDEX_REFRESH_MS) {
      l.refreshing = true;
      root.fs
        .list(root.path)
        .then(
          (entries) => this.rememberListing(root, entries),
          (err: unknown) => {
            l.error = errText(err);
            l.at = Date.now();
          },
        )
        .finally(() => (l.refreshing = false));
    }
    if (l.entries === undefined) throw new Error(l.error ?? `'${root.path}' has not been listed yet`);
    return l.entries;
  }

  private rememberListing(root: RepositoryRoot, entries: readonly DirEntry[]): void {
    const l = this.remoteListings.get(root.path);
    if (!l) return;
    l.entries = entries;
    l.error = undefined;
    l.at = Date.now();
  }

  private scan(): Promise<RepositoryScan> {
    return scanRepositories(this.roots, (root, entries) => this.rememberListing(root, entries));
  }

  // ---------------------------------------------------------------- lifecycle of the manager

  /**
   * Loads the startup models: every model in none and poll modes (and explicit with `*`), the
   * `startupModels` otherwise; starts polling in poll mode. Returns the models that failed (the caller
   * decides whether that is fatal, as --exit-on-error does). A repository path that is not a directory
   * throws.
   */
  async startup(): Promise<ModelLoadFailure[]> {
    this.assertOpen();
    if (this.started) throw new NereidError('INTERNAL', 'the model repository manager was already started');
    this.started = true;
    for (const dir of await removeStaleOverrides(this.options.tempDirectory)) {
      this.log.info(`removed '${dir}', model files a server that is no longer running left behind`);
    }
    // A local repository that is not a folder stops the start (as in Triton). An object store that cannot
    // be reached (credentials, a missing bucket, the network) is a failure like a model's: the others are
    // served, and --exit-on-error decides.
    const storeFailures: ModelLoadFailure[] = [];
    await Promise.all(
      this.roots.map(async (r) => {
        if (!r.fs.remote) {
          let isDir = false;
          try {
            isDir = (await stat(r.path)).isDirectory();
          } catch {
            isDir = false;
          }
          if (!isDir) throw msg.notADirectory(r.path);
          return;
        }
        try {
          // The listing also seeds the index (explicit mode may load nothing at start).
          const entries = await r.fs.list(r.path);
          if (entries.length === 0 && (await r.fs.stat(r.path)) !== 'dir') throw msg.notADirectory(r.path);
          this.rememberListing(r, entries);
        } catch (err) {
          const reason = errText(err);
          this.log.error(`failed to open model repository '${r.path}': ${reason}`);
          storeFailures.push({ name: r.path, reason });
        }
      }),
    );
    if (this.options.watch) {
      // Watching starts before the first poll, so an edit made while the models load is not missed: its
      // event triggers a poll that runs after the startup poll (the poller never runs two at once).
      const poller = new Poller(this.options.repositoryPollSecs * 1000, () => this.pollOnce(), this.log);
      this.poller = poller;
      this.watcher = new RepositoryWatcher({
        roots: this.roots.map((r) => r.path),
        maxDirectories: this.options.watchMaxDirectories,
        onChange: () => poller.trigger(),
        log: this.log,
      });
      await this.watcher.start();
      this.log.info(
        `watching ${this.watcher.size} folder(s) of the model repositories: a changed model reloads, a model that fails to load is retried when its files change`,
      );
    }
    const { startupModels } = this.options;
    let failures: ModelLoadFailure[];
    const selective = this.mode === 'explicit' || this.mode === 'on-demand';
    if (!selective || (startupModels.length === 1 && startupModels[0] === '*')) {
      if (!selective && startupModels.length > 0) {
        this.log.warn('--load-model is ignored unless --model-control-mode=explicit');
      }
      failures = [...(await this.pollAll()).failed];
    } else {
      failures = [];
      await Promise.all(
        startupModels.map((name) =>
          Promise.resolve()
            .then(() => {
              validateModelName(name);
              // On-demand mode: the startup models are pinned (never unloaded to make room).
              if (this.onDemand) this.record(name).on({ type: 'pin' });
              return this.loadByName(name, {});
            })
            .catch((err: unknown) => {
              failures.push({ name, reason: errText(err).trimEnd() });
            }),
        ),
      );
      failures.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    failures.unshift(...storeFailures);
    if (this.mode === 'poll' && this.options.repositoryPollSecs > 0 && !this.closing) {
      this.poller ??= new Poller(this.options.repositoryPollSecs * 1000, () => this.pollOnce(), this.log);
    }
    this.poller?.start();
    return failures;
  }

  /** Stops polling, waits for running operations, unloads every version, removes override copies. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  /** Resolves once background unloads (versions replaced by a reload, dropped by policy) are done. */
  idle(): Promise<void> {
    return this.versions.idle();
  }

  private async doClose(): Promise<void> {
    this.watcher?.close();
    this.onDemand?.close();
    // A load that is warming up would keep the lock below for as long as its warmup runs.
    this.versions.cancelLoads(null, msg.loadCancelled('the server is shutting down'));
    await this.poller?.stop();
    const release = await this.locks.acquire(null);
    try {
      const names = [...this.records.values()].filter((r) => r.slots.size > 0).map((r) => r.name);
      for (const n of names) this.records.get(n)?.on({ type: 'drop' });
      await this.unloadInOrder(new Set(names));
      await this.idle();
      if (this.ownsStorage) await this.storage.close();
    } finally {
      release();
    }
  }

  private assertOpen(): void {
    if (this.closing) throw msg.closed();
  }

  // ---------------------------------------------------------------- model control API

  /** Poll mode: rescan every repository; load new models, reload changed ones, unload removed ones. */
  async pollOnce(): Promise<PollSummary> {
    this.assertOpen();
    if (this.mode !== 'poll') throw msg.pollingDisabled();
    return this.pollAll();
  }

  /** Explicit mode: load or reload a model (and the ensemble members it needs). */
  async load(name: string, options: LoadOptions = {}): Promise<void> {
    this.assertOpen();
    if (this.mode !== 'explicit' && this.mode !== 'on-demand') throw msg.controlNotAllowed();
    validateModelName(name);
    // On-demand mode: an explicit load is admitted under the limits like a request's (it may unload others).
    if (this.onDemand) await this.onDemand.explicitLoad(name, () => this.loadByName(name, options));
    else await this.loadByName(name, options);
  }

  /**
   * On-demand mode, for a request: undefined when the model serves now (its use is recorded for the
   * LRU order), else a promise of its load (see on-demand.ts) resolving with the time the wait began.
   * `caller`: the model that sends the request (BLS); the callee stays loaded while the caller is busy.
   * Undefined in the other modes.
   */
  ensureServable(name: string, caller?: string): Promise<bigint> | undefined {
    const od = this.onDemand;
    if (!od) return undefined;
    if (caller !== undefined && caller !== name) {
      let set = this.callers.get(name);
      if (!set) this.callers.set(name, (set = new Set()));
      set.add(caller);
    }
    return od.ensure(name);
  }

  /** On-demand mode's limits, counters and each model's measured memory (the metrics); undefined otherwise. */
  onDemandStatus(): OnDemandStatus | undefined {
    const od = this.onDemand;
    if (!od) return undefined;
    const residents = new Map(this.residents().map((r) => [r.name, r.bytes]));
    const names = new Set([...od.counters.keys(), ...residents.keys()]);
    return {
      maxLoadedModels: this.options.maxLoadedModels,
      budgetBytes: this.options.memoryBudgetBytes,
      loaded: residents.size,
      models: [...names].sort().map((model) => {
        const c = od.counters.get(model);
        return {
          model,
          loads: c?.loads ?? 0,
          loadFailures: c?.loadFailures ?? 0,
          evictions: c?.evictions ?? 0,
          loadSeconds: (c?.loadNs ?? 0) / 1e9,
          ...(residents.has(model) && { residentBytes: residents.get(model) }),
        };
      }),
    };
  }

  /** On-demand mode: a request's model must be in a repository (a rescan at most once a second). */
  private assertInRepository(name: string): void {
    validateModelName(name);
    if (this.repositoryNames.names.has(name)) return;
    if (Date.now() - this.repositoryNames.at > REMOTE_INDEX_REFRESH_MS) {
      try {
        const scan = scanRepositoriesSync(this.roots, (root) => this.lastListing(root));
        this.repositoryNames = {
          names: new Set([...scan.models.keys(), ...scan.duplicates]),
          at: Date.now(),
        };
      } catch (err) {
        throw NereidError.from(err, 'INTERNAL');
      }
      if (this.repositoryNames.names.has(name)) return;
    }
    throw msg.unknownModel(name);
  }

  /**
   * On-demand mode: every model with a loaded version, its measured cost, and whether it must stay: busy
   * (requests in flight or held, unloading), used by a loaded ensemble, called (BLS) by a busy model,
   * pinned (--load-model, or `nereid.pinned: "true"` in its config parameters).
   */
  private residents(): Resident[] {
    const loaded = [...this.records.values()].filter((r) => [...r.slots.values()].some((s) => s.loaded));
    const names = new Set(loaded.map((r) => r.name));
    const ownBusy = new Map<string, boolean>();
    for (const r of loaded) {
      let busy = false;
      for (const s of r.slots.values()) {
        if (!s.loaded) continue;
        if (s.state !== 'READY' || s.loaded.isBusy?.() === true) busy = true;
      }
      ownBusy.set(r.name, busy);
    }
    return loaded.map((r) => {
      let bytes = 0;
      for (const s of r.slots.values()) bytes += s.loaded?.residentBytes?.() ?? 0;
      const usedByEnsemble = loaded.some((e) => e.name !== r.name && e.memberNames().includes(r.name));
      const calledByBusy = [...(this.callers.get(r.name) ?? [])].some(
        (c) => names.has(c) && ownBusy.get(c) === true,
      );
      const pinnedByConfig = r.config?.parameters?.['nereid.pinned']?.string_value === 'true';
      return {
        name: r.name,
        bytes,
        lastUsed: 0,
        busy: ownBusy.get(r.name) === true || usedByEnsemble || calledByBusy,
        pinned: r.pinned || pinnedByConfig,
      };
    });
  }

  /**
   * Explicit mode: unload every version of a model, and the ensembles that depend on it (they cannot
   * serve without it). With `unloadDependents`, also the models it pulled in as ensemble members that
   * nothing else needs. Resolves when the versions are unloaded. An unknown model is not an error.
   */
  async unload(name: string, options: { unloadDependents?: boolean } = {}): Promise<void> {
    this.assertOpen();
    if (this.mode !== 'explicit' && this.mode !== 'on-demand') throw msg.controlNotAllowed();
    await this.unloadByName(name, options);
  }

  private async unloadByName(name: string, options: { unloadDependents?: boolean }): Promise<void> {
    const cascade = options.unloadDependents === true;
    const lockSet = new Set([
      ...closure([name], (n) => (cascade ? (this.records.get(n)?.memberNames() ?? []) : [])),
    ]);
    for (const d of this.dependentsOf(lockSet)) lockSet.add(d);
    // A load of the model still running (a long warmup) is not waited for: it stops and fails.
    this.versions.cancelLoads(new Set([name]), msg.loadCancelled(`model '${name}' was unloaded`));
    const release = await this.locks.acquire(lockSet);
    try {
      this.assertOpen();
      const rec = this.records.get(name);
      if (!rec) return;
      const removed = new Set([name]);
      if (cascade) {
        // Members this model pulled in go too, unless asked for by name or still needed elsewhere.
        let grew = true;
        while (grew) {
          grew = false;
          for (const n of [...removed]) {
            for (const m of this.records.get(n)?.memberNames() ?? []) {
              const mrec = this.records.get(m);
              if (!mrec || removed.has(m) || mrec.explicit) continue;
              const neededElsewhere = [...this.records.values()].some(
                (r) => r.wanted && !removed.has(r.name) && r.memberNames().includes(m),
              );
              if (!neededElsewhere) {
                removed.add(m);
                grew = true;
              }
            }
          }
        }
      }
      for (const n of removed) this.records.get(n)?.on({ type: 'drop' });
      const invalidated = this.invalidateDependents(removed);
      await this.unloadInOrder(new Set([...removed, ...invalidated]));
    } finally {
      release();
    }
  }

  // ---------------------------------------------------------------- operations

  /**
   * The code of a load request refused for the client's mistake: Triton's INTERNAL by default, `code` with
   * --load-error-status=client-error (options.ts).
   */
  private requestErrorCode(code: 'INVALID_ARG' | 'NOT_FOUND'): 'INVALID_ARG' | 'NOT_FOUND' | 'INTERNAL' {
    return this.options.loadErrorStatus === 'client-error' ? code : 'INTERNAL';
  }

  private async loadByName(name: string, options: LoadOptions): Promise<void> {
    // Request checks run synchronously, so the lock below is queued in call order.
    const files = options.files && options.files.size > 0 ? options.files : undefined;
    let configOverride: ModelConfig | undefined;
    if (files && options.config === undefined) {
      throw msg.pollFailed(name, msg.configOverrideRequired(), this.requestErrorCode('INVALID_ARG'));
    }
    if (options.config !== undefined) {
      try {
        configOverride = withModelName(
          this.options.parseConfigJson(options.config, `config override of model '${name}'`),
          name,
        );
      } catch (err) {
        throw msg.pollFailed(
          name,
          msg.invalidConfigOverride(errText(err)),
          this.requestErrorCode('INVALID_ARG'),
        );
      }
    }
    // Lock what the known graph says this load touches; widen below if the fresh configs say more.
    let held = closure([name], (n) => this.records.get(n)?.memberNames() ?? []);
    for (const d of this.dependentsOf(held)) held.add(d);
    let release = await this.locks.acquire(held);
    let materialized: MaterializedModel | undefined;
    try {
      this.assertOpen();
      if (files) {
        try {
          materialized = await materializeOverrides(this.options.tempDirectory, name, files);
        } catch (err) {
          const e = NereidError.from(err);
          throw msg.pollFailed(
            name,
            e.message,
            e.code === 'INVALID_ARG' ? this.requestErrorCode('INVALID_ARG') : 'INTERNAL',
          );
        }
      }
      let found = await this.pollClosure(name, configOverride, materialized);
      for (;;) {
        const needed = new Set<string>([...found.polled.keys(), ...found.invalid.keys()]);
        for (const d of this.dependentsOf(needed)) needed.add(d);
        if ([...needed].every((n) => held.has(n))) break;
        release();
        held = new Set([...held, ...needed]);
        release = await this.locks.acquire(held);
        this.assertOpen();
        found = await this.pollClosure(name, configOverride, materialized);
      }
      await this.applyExplicitLoad(name, found);
    } finally {
      release();
      if (materialized && !this.versions.generationInUse(this.records.values(), materialized.root))
        await removeTree(materialized.root);
    }
  }

  /** Reads the model and, transitively, the members it names (Triton's polling chain). */
  private async pollClosure(
    name: string,
    configOverride: ModelConfig | undefined,
    materialized: MaterializedModel | undefined,
  ): Promise<{ polled: Map<string, PolledModel>; invalid: Map<string, string>; pollErrors: string[] }> {
    const scan = await this.scan();
    const polled = new Map<string, PolledModel>();
    const invalid = new Map<string, string>();
    const pollErrors: string[] = [];
    const locate = (n: string): ModelSource | string => {
      if (scan.duplicates.has(n)) return msg.notUnique(n);
      const f = scan.models.get(n);
      if (!f) {
        // A repository that could not be listed is the likelier reason: say so.
        const unreachable = scan.errors.map((e) => `'${e.repositoryPath}': ${e.message}`);
        return unreachable.length > 0
          ? `${msg.notInAnyRepository(n)} Repositories that could not be read: ${unreachable.join('; ')}`
          : msg.notInAnyRepository(n);
      }
      return this.sourceOf(f);
    };

    const first = materialized
      ? ({
          repositoryPath: materialized.root,
          modelDir: materialized.modelDir,
          override: true,
          fs: new LocalFileSystem(materialized.root),
        } as const)
      : locate(name);
    if (typeof first === 'string') {
      // A name no repository has is the client's mistake (404 with --load-error-status=client-error);
      // Triton answers 500 here.
      throw msg.pollFailed(
        name,
        first,
        scan.duplicates.has(name) ? 'INTERNAL' : this.requestErrorCode('NOT_FOUND'),
      );
    }
    try {
      polled.set(name, await readModel(name, first, this.readSettings, configOverride));
    } catch (err) {
      throw msg.pollFailed(name, errText(err));
    }
    const queue = [...(polled.get(name)?.members ?? [])].map((m) => m.name);
    const notFound = new Set<string>();
    while (queue.length > 0) {
      const m = queue.shift() as string;
      if (polled.has(m) || invalid.has(m) || notFound.has(m)) continue;
      const src = locate(m);
      if (typeof src === 'string') {
        notFound.add(m);
        pollErrors.push(src);
        continue;
      }
      try {
        const p = await readModel(m, src, this.readSettings);
        polled.set(m, p);
        queue.push(...p.members.map((x) => x.name));
      } catch (err) {
        invalid.set(m, errText(err));
        pollErrors.push(`failed to poll model '${m}': ${errText(err)}`);
      }
    }
    return { polled, invalid, pollErrors };
  }

  private async applyExplicitLoad(
    name: string,
    found: { polled: Map<string, PolledModel>; invalid: Map<string, string>; pollErrors: string[] },
  ): Promise<void> {
    const plan = new Map<string, PolledModel>();
    for (const p of found.polled.values()) {
      const rec = this.record(p.name);
      const unchanged =
        !p.overridden &&
        !rec.overridden &&
        rec.hasReady() &&
        rec.fingerprint !== undefined &&
        rec.fingerprint === p.fingerprint;
      rec.on({ type: 'want', byName: p.name === name });
      if (!unchanged) plan.set(p.name, p);
    }
    for (const [m, reason] of found.invalid) {
      const rec = this.record(m);
      if (!rec.hasReady()) rec.modelError = reason;
    }
    const outcomes = await this.applyLoads(plan, found.invalid);
    await this.revive(outcomes);
    const failure = outcomes.get(name);
    if (failure !== undefined) throw msg.loadFailed(name, failure);
    if (found.pollErrors.length > 0) throw msg.pollFailed(name, found.pollErrors.join('; '));
  }

  /** One poll of every repository: read (readPoll) → plan (poll-plan.ts) → apply (poll-apply.ts). */
  private async pollAll(): Promise<PollSummary> {
    // Reads happen under the lock too: two overlapping polls must not apply an older read after a newer one.
    const release = await this.locks.acquire(null);
    try {
      this.assertOpen();
      const backOff = this.options.watch;
      const reading = await this.readPoll(backOff);
      const plan = planPoll(reading, this.records.values(), (name) => this.records.get(name), backOff);
      return await applyPoll(this.pollHost(), reading, plan, backOff);
    } finally {
      release();
    }
  }

  /** Lists the repositories and reads every model folder in them (logging what cannot be listed). */
  private async readPoll(backOff: boolean): Promise<PollReading> {
    const scan = await this.scan();
    for (const e of scan.errors) {
      this.log.error(`failed to poll model repository '${e.repositoryPath}': ${e.message}`);
    }
    for (const d of scan.duplicates) this.log.error(msg.notUnique(d));
    const polled = new Map<string, PolledModel>();
    const invalid = new Map<string, { reason: string; fingerprint?: string }>();
    const reads = new Limiter(POLL_READ_CONCURRENCY);
    await Promise.all(
      [...scan.models.values()].map((f) =>
        reads.run(async () => {
          const source = this.sourceOf(f);
          try {
            polled.set(f.name, await readModel(f.name, source, this.readSettings));
          } catch (err) {
            const reason = errText(err);
            invalid.set(f.name, backOff ? { reason, fingerprint: await fingerprintOf(source) } : { reason });
          }
        }),
      ),
    );
    return {
      listed: new Set(scan.models.keys()),
      duplicates: scan.duplicates,
      // A repository that could not be listed says nothing about its models: they keep serving.
      unreadable: new Set(scan.errors.map((e) => e.repositoryPath)),
      polled,
      invalid,
    };
  }

  /** What poll-apply.ts does its loads and unloads with. */
  private pollHost(): PollApplyHost<V> {
    return {
      log: this.log,
      find: (name) => this.records.get(name),
      record: (name) => this.record(name),
      invalidateDependents: (gone, exclude) => this.invalidateDependents(gone, exclude),
      unloadInOrder: (names) => this.unloadInOrder(names),
      applyLoads: (plan, invalid) => this.applyLoads(plan, invalid),
      revive: (outcomes) => this.revive(outcomes),
    };
  }

  /**
   * Loads every planned model, members before the ensembles that need them, independent models in
   * parallel (the Limiter bounds loader calls). Returns each planned model's failure reason (undefined =
   * loaded).
   */
  private async applyLoads(
    plan: ReadonlyMap<string, PolledModel>,
    invalid: ReadonlyMap<string, string>,
  ): Promise<Map<string, string | undefined>> {
    const running = new Map<string, Promise<string | undefined>>();
    const membersNow = (n: string): string[] => {
      const p = plan.get(n);
      return p ? [...new Set(p.members.map((m) => m.name))] : (this.records.get(n)?.memberNames() ?? []);
    };

    const run = (name: string): Promise<string | undefined> => {
      let pending = running.get(name);
      if (!pending) {
        pending = this.loadWithMembers(name, plan, invalid, membersNow, run);
        running.set(name, pending);
      }
      return pending;
    };
    const results = await Promise.all([...plan.keys()].map(async (n) => [n, await run(n)] as const));
    return new Map(results);
  }

  private async loadWithMembers(
    name: string,
    plan: ReadonlyMap<string, PolledModel>,
    invalid: ReadonlyMap<string, string>,
    membersNow: (n: string) => string[],
    run: (n: string) => Promise<string | undefined>,
  ): Promise<string | undefined> {
    const p = plan.get(name) as PolledModel;
    const rec = this.record(name);
    const memberList = [...new Set(p.members.map((m) => m.name))];
    const known = (m: string): boolean => {
      const r = this.records.get(m);
      return plan.has(m) || invalid.has(m) || (r !== undefined && r.tracked && r.wanted);
    };
    const missing = memberList.filter((m) => !known(m)).sort();
    let reason: string | undefined;
    if (missing.length > 0) reason = msg.ensembleMissing(name, missing);
    if (reason === undefined) {
      const cycle = findCycle(name, membersNow);
      if (cycle) reason = msg.circular(cycle);
    }
    if (reason === undefined) {
      // Cycles are excluded above, so waiting on members always terminates.
      const memberResults = await Promise.all(
        memberList.map(async (m) => [m, plan.has(m) ? await run(m) : undefined] as const),
      );
      for (const [m, memberFailure] of memberResults) {
        if (this.records.get(m)?.hasReady()) continue;
        if (invalid.has(m)) reason = msg.ensembleInvalidMember(name, m, invalid.get(m) as string);
        else reason = msg.ensembleMemberNotLoaded(name, m, memberFailure?.trimEnd());
        break;
      }
    }
    if (reason === undefined) {
      for (const m of p.members) {
        if (m.version < 0) continue;
        if (this.records.get(m.name)?.slots.get(m.version)?.state !== 'READY') {
          reason = msg.ensembleVersionNotLoaded(name, m.name, m.version);
          break;
        }
      }
    }
    if (reason !== undefined) {
      // An ensemble that cannot be wired is unloaded (Triton) and comes back when its members do.
      this.log.error(reason);
      rec.members = p.members;
      if (!rec.hasReady()) rec.modelError = reason;
      if (rec.hasReady()) {
        rec.on({ type: 'suspend' });
        await this.versions.unloadModel(rec);
      }
      return reason;
    }
    const failure = await this.versions.loadModel(rec, p);
    // Remembered for watch mode's back-off (explicit loads and plain poll mode always try again).
    rec.failedFingerprint = failure === undefined ? undefined : p.fingerprint;
    return failure;
  }

  /** Brings back suspended ensembles whose members have just loaded, until nothing changes. */
  private async revive(outcomes: Map<string, string | undefined>): Promise<void> {
    let justLoaded = new Set([...outcomes].filter(([, r]) => r === undefined).map(([n]) => n));
    const tried = new Set<string>();
    while (justLoaded.size > 0) {
      const plan = new Map<string, PolledModel>();
      for (const r of this.records.values()) {
        if (!r.suspended || tried.has(r.name) || !r.source || r.source.override) continue;
        if (!r.memberNames().some((m) => justLoaded.has(m))) continue;
        tried.add(r.name);
        try {
          plan.set(r.name, await readModel(r.name, r.source, this.readSettings));
        } catch (err) {
          this.log.error(`Poll failed for model directory '${r.name}': ${errText(err)}`);
        }
      }
      if (plan.size === 0) return;
      const more = await this.applyLoads(plan, new Map());
      for (const [n, r] of more) outcomes.set(n, r);
      justLoaded = new Set([...more].filter(([, r]) => r === undefined).map(([n]) => n));
    }
  }

  // ---------------------------------------------------------------- unloading

  /** Wanted ensembles (transitively) that need one of `gone`; they are unloaded and wait for it. */
  private invalidateDependents(
    gone: ReadonlySet<string>,
    exclude?: ReadonlyMap<string, unknown>,
  ): Set<string> {
    const out = new Set<string>();
    for (const d of this.dependentsOf(gone)) {
      if (gone.has(d) || exclude?.has(d)) continue;
      const r = this.records.get(d);
      if (!r || !r.wanted) continue;
      r.on({ type: 'suspend' });
      const lost = r.memberNames().filter((m) => gone.has(m) || out.has(m));
      r.modelError = msg.ensembleMissing(r.name, lost.length > 0 ? lost : r.memberNames());
      out.add(d);
    }
    return out;
  }

  /** Models whose ensemble steps name one of `names`, transitively (not including `names`). */
  private dependentsOf(names: ReadonlySet<string>): Set<string> {
    const all = closure(names, (n) =>
      [...this.records.values()].filter((r) => r.memberNames().includes(n)).map((r) => r.name),
    );
    for (const n of names) all.delete(n);
    return all;
  }

  /** Unloads models so that an ensemble drains before the members its requests still use. */
  private async unloadInOrder(names: ReadonlySet<string>): Promise<void> {
    const done = new Map<string, Promise<void>>();
    const go = (n: string, path: ReadonlySet<string>): Promise<void> => {
      let p = done.get(n);
      if (!p) {
        const users = [...names].filter(
          (u) => u !== n && !path.has(u) && this.records.get(u)?.memberNames().includes(n),
        );
        const next = new Set(path).add(n);
        p = Promise.all(users.map((u) => go(u, next))).then(() =>
          this.versions.unloadModel(this.records.get(n)),
        );
        done.set(n, p);
      }
      return p;
    };
    await Promise.all([...names].map((n) => go(n, new Set())));
  }

  private sourceOf(f: { repositoryPath: string; modelDir: string }): ModelSource {
    const root = this.roots.find((r) => r.path === f.repositoryPath);
    return {
      repositoryPath: f.repositoryPath,
      modelDir: f.modelDir,
      override: false,
      fs: root?.fs ?? new LocalFileSystem(f.repositoryPath),
    };
  }

  private record(name: string): ModelRecord<V> {
    let r = this.records.get(name);
    if (!r) {
      r = new ModelRecord<V>(name);
      this.records.set(name, r);
    }
    return r;
  }
}
