/**
 * Loading and unloading the versions of one model: make-before-break swaps, all-or-nothing loads, visible
 * UNLOADING → "unloaded" transitions, background retirement of replaced versions, and removal of a
 * file-override copy once no version loaded from it remains. The manager decides what to load; this
 * module does it to one ModelRecord, keeping Triton's states and reasons.
 */
import path from 'node:path';
import type { NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { LocalFolder } from '../storage/filesystem.js';
import type { LoadedVersion, ModelLocation, VersionLoader } from './contract.js';
import { parseVersionFolderName } from './layout.js';
import { Generation, type ModelRecord, type VersionSlot } from './lifecycle.js';
import type { Limiter } from './locks.js';
import { REASON_UNLOADED, msg, statusString } from './messages.js';
import { removeTree } from './overrides.js';
import type { PolledModel } from './reader.js';
import { selectVersions, type VersionSelection } from './version-policy.js';

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Accepts every path except those inside (or naming) a version folder not in `versions`. */
function versionFilter(versions: ReadonlySet<number>): (rel: string) => boolean {
  return (rel) => {
    const v = parseVersionFolderName(rel.split('/')[0]);
    return v === undefined || versions.has(v);
  };
}

/** A model ready for its versions to load: its config, the versions, where its files are. */
interface Prepared {
  readonly config: FrozenModelConfig;
  readonly sel: VersionSelection;
  readonly location: ModelLocation;
  readonly copy: LocalFolder;
  /** The versions `copy` holds, when it is a private copy. */
  readonly copyVersions: ReadonlySet<number>;
}

type Attempt<V extends LoadedVersion> =
  | { readonly version: number; readonly loaded: V; readonly error?: undefined }
  | { readonly version: number; readonly loaded?: undefined; readonly error: unknown };

/** The versions an object-store copy holds: those to load, and the latest (auto-complete reads it). */
function wantedCopy(p: PolledModel, versions: readonly number[]): Set<number> {
  const set = new Set(versions);
  if (p.versions.length > 0) set.add(p.versions[p.versions.length - 1]);
  return set;
}

export class VersionLifecycle<V extends LoadedVersion = LoadedVersion> {
  private readonly background = new Set<Promise<void>>();
  /** Loads running now, by model name: aborted by cancelLoads(). */
  private readonly running = new Map<string, Set<AbortController>>();

  constructor(
    private readonly loader: VersionLoader<V>,
    private readonly limiter: Limiter,
    private readonly log: Logger,
  ) {}

  /**
   * Cancels the loads running for `names` (every model when null): an unload or shutdown does not wait
   * for a long warmup (issue 33 item 7). The load fails with `error`, the model's state says so.
   */
  cancelLoads(names: ReadonlySet<string> | null, error: NereidError): void {
    for (const [name, controllers] of this.running) {
      if (names !== null && !names.has(name)) continue;
      for (const c of controllers) c.abort(error);
    }
  }

  /** Resolves once background unloads (versions replaced by a reload, dropped by policy) are done. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  /**
   * Loads the policy's versions of one model beside whatever serves now, then swaps them in. Returns the
   * failure reason (Triton's "version <v> is at UNAVAILABLE state: ...;" clauses), undefined on success.
   */
  async loadModel(rec: ModelRecord<V>, p: PolledModel): Promise<string | undefined> {
    rec.on({ type: 'track' });
    rec.members = p.members;
    const configured = await this.prepareConfig(rec, p);
    if (typeof configured === 'string') return configured;
    const prepared = await this.prepareVersions(rec, p, configured);
    if (typeof prepared === 'string') return prepared;
    const { config, sel, location, copy } = prepared;
    rec.modelError = undefined;

    const foreground = this.markLoading(rec, sel.load);
    const results = await this.loadVersions(config, location, sel.load);
    const failures = results.filter((r) => r.loaded === undefined);
    if (failures.length > 0) {
      const reasons = await this.undoLoad(rec, results, foreground);
      await this.dropCopy(copy);
      this.log.info(`failed to load '${rec.name}'`);
      return reasons;
    }
    this.swapIn(rec, p, config, sel, results, copy);
    this.log.info(`successfully loaded '${rec.name}'`);
    return undefined;
  }

  /**
   * The model's files on local disk and its completed config. An object-store model is copied first (the
   * versions its policy asks for, and the latest, which auto-complete reads); the copy lives as long as a
   * version loaded from it. A failure is the load's reason (the copy, if any, removed).
   */
  private async prepareConfig(rec: ModelRecord<V>, p: PolledModel): Promise<string | Prepared> {
    const copyVersions = wantedCopy(p, selectVersions(p.raw?.version_policy, p.versions).load);
    let copy: LocalFolder;
    try {
      copy = await this.limiter.run(() => p.view.localize(versionFilter(copyVersions)));
    } catch (err) {
      return this.failWhole(rec, statusString(err), selectVersions(p.raw?.version_policy, p.versions));
    }
    const location: ModelLocation = {
      modelName: rec.name,
      modelDir: copy.path,
      repositoryPath: copy.tempRoot ?? p.source.repositoryPath,
    };
    let config: FrozenModelConfig;
    try {
      config = await this.limiter.run(() => this.loader.completeConfig(p.raw, location, p.versions));
    } catch (err) {
      await this.dropCopy(copy);
      return this.failWhole(rec, statusString(err), selectVersions(p.raw?.version_policy, p.versions));
    }
    const sel = selectVersions(config.version_policy, p.versions);
    return { config, sel, location, copy, copyVersions };
  }

  /**
   * The completed config's versions: admitted by the instance budget, the missing ones logged, at least
   * one; copied again when its policy asks for versions the first copy left out.
   */
  private async prepareVersions(
    rec: ModelRecord<V>,
    p: PolledModel,
    prepared: Prepared,
  ): Promise<string | Prepared> {
    const { config, sel } = prepared;
    let { location, copy } = prepared;
    if (sel.load.length > 0 && this.loader.admit) {
      try {
        await this.loader.admit(config, location, sel.load.length);
      } catch (err) {
        await this.dropCopy(copy);
        return this.failWhole(rec, statusString(err), sel);
      }
    }
    rec.missing = sel.missing;
    for (const v of sel.missing) this.log.error(msg.specificVersionMissing(rec.name, v));
    if (sel.load.length === 0) {
      await this.dropCopy(copy);
      const reason = msg.noVersionUnderPolicy(rec.name);
      this.log.error(`failed to load '${rec.name}': ${reason}`);
      if (!rec.hasReady()) rec.modelError = reason;
      return reason;
    }
    let copyVersions = prepared.copyVersions;
    if (copy.tempRoot !== undefined && sel.load.some((v) => !copyVersions.has(v))) {
      // The completed config's policy asks for versions the first copy left out: copy again.
      await this.dropCopy(copy);
      copyVersions = wantedCopy(p, sel.load);
      try {
        copy = await this.limiter.run(() => p.view.localize(versionFilter(copyVersions)));
      } catch (err) {
        return this.failWhole(rec, statusString(err), sel);
      }
      location = {
        ...location,
        modelDir: copy.path,
        repositoryPath: copy.tempRoot ?? location.repositoryPath,
      };
    }
    return { config, sel, location, copy, copyVersions };
  }

  /** LOADING for each version not READY now; those slots are this load's own (the foreground). */
  private markLoading(rec: ModelRecord<V>, versions: readonly number[]): Map<number, VersionSlot<V>> {
    const foreground = new Map<number, VersionSlot<V>>();
    for (const v of versions) {
      this.log.info(`loading: ${rec.name}:${v}`);
      if (rec.slots.get(v)?.state !== 'READY') {
        const s: VersionSlot<V> = { state: 'LOADING', reason: '' };
        rec.slots.set(v, s);
        foreground.set(v, s);
      }
    }
    return foreground;
  }

  /** Every version loaded at once (the limiter bounds how many run); each one's outcome, none thrown. */
  private loadVersions(
    config: FrozenModelConfig,
    location: ModelLocation,
    versions: readonly number[],
  ): Promise<Attempt<V>[]> {
    return Promise.all(
      versions.map(async (version): Promise<Attempt<V>> => {
        const controller = new AbortController();
        let forModel = this.running.get(location.modelName);
        if (forModel === undefined) {
          forModel = new Set();
          this.running.set(location.modelName, forModel);
        }
        forModel.add(controller);
        try {
          const loaded = await this.limiter.run(() => {
            if (controller.signal.aborted) throw controller.signal.reason;
            return this.loader.loadVersion(
              config,
              { ...location, version, versionDir: path.join(location.modelDir, String(version)) },
              controller.signal,
            );
          });
          return { version, loaded };
        } catch (error) {
          return { version, error };
        } finally {
          forModel.delete(controller);
          if (forModel.size === 0 && this.running.get(location.modelName) === forModel) {
            this.running.delete(location.modelName);
          }
        }
      }),
    );
  }

  /**
   * All or nothing: drops what did load, keeps serving what served before, marks this load's failed
   * versions UNAVAILABLE. Resolves with the reasons once the drops are done.
   */
  private async undoLoad(
    rec: ModelRecord<V>,
    results: readonly Attempt<V>[],
    foreground: ReadonlyMap<number, VersionSlot<V>>,
  ): Promise<string> {
    const undo: Promise<void>[] = [];
    for (const r of results) {
      if (r.loaded === undefined) continue;
      const fg = foreground.get(r.version);
      if (fg && rec.slots.get(r.version) === fg) {
        undo.push(this.unloadSlot(rec, r.version, { state: 'UNLOADING', reason: '', loaded: r.loaded }));
      } else {
        undo.push(this.safeUnload(r.loaded, rec.name, r.version));
      }
    }
    const reasons: string[] = [];
    for (const r of results) {
      if (r.loaded !== undefined) continue;
      const reason = statusString(r.error);
      this.log.error(`failed to load '${rec.name}' version ${r.version}: ${reason}`);
      const fg = foreground.get(r.version);
      if (fg && rec.slots.get(r.version) === fg) {
        rec.slots.set(r.version, { state: 'UNAVAILABLE', reason });
      }
      reasons.push(msg.versionFailed(r.version, reason));
    }
    await Promise.all(undo);
    return reasons.join('');
  }

  /**
   * Make-before-break: the new versions become READY in one generation, the ones they replace retire in
   * the background, READY versions the policy no longer wants unload visibly; the record takes the config.
   */
  private swapIn(
    rec: ModelRecord<V>,
    p: PolledModel,
    config: FrozenModelConfig,
    sel: VersionSelection,
    results: readonly Attempt<V>[],
    copy: LocalFolder,
  ): void {
    const generation = new Generation(p.source.override ? p.source.repositoryPath : copy.tempRoot);
    for (const r of results) {
      if (r.loaded === undefined) continue;
      const old = rec.slots.get(r.version);
      generation.refs++;
      rec.slots.set(r.version, { state: 'READY', reason: '', loaded: r.loaded, generation });
      if (old?.loaded) this.inBackground(this.retire(old, rec.name, r.version));
    }
    for (const [v, slot] of rec.slots) {
      if (slot.state === 'READY' && !sel.load.includes(v)) {
        this.inBackground(this.unloadSlot(rec, v, { ...slot, state: 'UNLOADING' }));
      }
    }
    rec.config = config;
    rec.source = p.source;
    rec.on({ type: 'loaded', fingerprint: p.fingerprint, overridden: p.overridden });
  }

  /** Removes a private copy no version was loaded from (nothing for the repository's own folder). */
  private async dropCopy(copy: LocalFolder): Promise<void> {
    if (copy.tempRoot !== undefined) await this.removeCopy(copy.tempRoot);
  }

  /** A load that failed before any version was tried: Triton's per-version reasons, or the model's. */
  private failWhole(
    rec: ModelRecord<V>,
    reason: string,
    sel: { readonly load: readonly number[]; readonly missing: readonly number[] },
  ): string {
    rec.missing = sel.missing;
    this.log.error(`failed to load '${rec.name}': ${reason}`);
    if (sel.load.length === 0) {
      if (!rec.hasReady()) rec.modelError = reason;
      return reason;
    }
    for (const v of sel.load) {
      if (rec.slots.get(v)?.state !== 'READY') rec.slots.set(v, { state: 'UNAVAILABLE', reason });
    }
    return sel.load.map((v) => msg.versionFailed(v, reason)).join('');
  }

  private async removeCopy(tempRoot: string): Promise<void> {
    await removeTree(tempRoot).catch((err: unknown) => {
      this.log.error(`failed to remove '${tempRoot}': ${errText(err)}`);
    });
  }

  /** Unloads every READY version of a model; resolves when they have drained. */
  async unloadModel(rec: ModelRecord<V> | undefined): Promise<void> {
    if (!rec) return;
    const jobs: Promise<void>[] = [];
    for (const [v, slot] of rec.slots) {
      if (slot.state === 'READY') jobs.push(this.unloadSlot(rec, v, { ...slot, state: 'UNLOADING' }));
    }
    await Promise.all(jobs);
  }

  /** Visible unload: UNLOADING while draining, then UNAVAILABLE "unloaded". */
  private async unloadSlot(rec: ModelRecord<V>, version: number, unloading: VersionSlot<V>): Promise<void> {
    const slot: VersionSlot<V> = { ...unloading, state: 'UNLOADING', reason: '' };
    rec.slots.set(version, slot);
    if (slot.loaded) await this.safeUnload(slot.loaded, rec.name, version);
    if (rec.slots.get(version) === slot)
      rec.slots.set(version, { state: 'UNAVAILABLE', reason: REASON_UNLOADED });
    await this.release(slot.generation);
  }

  /** Invisible unload of a version a reload replaced. */
  private async retire(old: VersionSlot<V>, name: string, version: number): Promise<void> {
    if (old.loaded) await this.safeUnload(old.loaded, name, version);
    await this.release(old.generation);
  }

  private async safeUnload(loaded: LoadedVersion, name: string, version: number): Promise<void> {
    try {
      await loaded.unload();
      this.log.info(`successfully unloaded '${name}' version ${version}`);
    } catch (err) {
      this.log.error(`failed to unload '${name}' version ${version}: ${errText(err)}`);
    }
  }

  private async release(generation: Generation | undefined): Promise<void> {
    if (!generation) return;
    generation.refs--;
    if (generation.refs <= 0 && generation.tempRoot !== undefined) {
      await removeTree(generation.tempRoot).catch((err: unknown) => {
        this.log.error(`failed to remove '${generation.tempRoot}': ${errText(err)}`);
      });
    }
  }

  /** True while a version loaded from the override copy at `tempRoot` is still tracked. */
  generationInUse(records: Iterable<ModelRecord<V>>, tempRoot: string): boolean {
    for (const r of records) {
      for (const s of r.slots.values()) if (s.generation?.tempRoot === tempRoot) return true;
    }
    return false;
  }

  private inBackground(p: Promise<void>): void {
    const tracked = p.finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }
}
