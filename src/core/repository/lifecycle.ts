/**
 * Per-model lifecycle bookkeeping and the read-only questions the server asks of it: which version
 * serves a request, what the repository index shows, whether every model is ready. States and reasons
 * follow Triton's model_lifecycle.cc: UNKNOWN / UNAVAILABLE / LOADING / READY / UNLOADING, a failed
 * version's reason is `<Code>: <message>`, an unloaded one's is "unloaded". The manager mutates records;
 * everything here is synchronous so request paths never wait on a load.
 */
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { FileSystem } from '../storage/filesystem.js';
import type { ModelVersionState, RepositoryIndexEntry } from '../types.js';
import type { LoadedVersion } from './contract.js';
import type { MemberRef } from './dependencies.js';
import type { RepositoryScan } from './layout.js';
import { REASON_DUPLICATE, REASON_UNLOADED, msg } from './messages.js';
import {
  INITIAL_STATE,
  isExplicit,
  isOverridden,
  isSuspended,
  isTracked,
  isWanted,
  loadedFingerprint,
  nextState,
  type RecordEvent,
  type RecordState,
} from './record-state.js';

/** The files a set of loaded versions came from; a private override copy is removed with its last version. */
export class Generation {
  refs = 0;
  constructor(readonly tempRoot: string | undefined) {}
}

/** One version's visible state. Slots are replaced, never mutated, so late callbacks can tell if they are stale. */
export interface VersionSlot<V extends LoadedVersion = LoadedVersion> {
  readonly state: ModelVersionState;
  readonly reason: string;
  /** Present while READY or UNLOADING. */
  readonly loaded?: V;
  readonly generation?: Generation;
}

export interface ModelSource {
  readonly repositoryPath: string;
  /** A path or, in an object store, a URL: read it through `fs`. */
  readonly modelDir: string;
  /** What reads the repository (local disk, or an object store that loads download a copy from). */
  readonly fs: FileSystem;
  /** Loaded from a file-override copy rather than the repository. */
  readonly override: boolean;
}

export class ModelRecord<V extends LoadedVersion = LoadedVersion> {
  readonly slots = new Map<number, VersionSlot<V>>();
  /** Versions a `specific` policy names that have no folder (shown in the index, never served). */
  missing: readonly number[] = [];
  /** Why the model could not be loaded at all; shown while it has no version to show. */
  modelError: string | undefined;
  /** Watch mode: fingerprint of the folder whose last load failed (not tried again while it is the same). */
  failedFingerprint: string | undefined;
  /** Ensemble members according to the last config read. */
  members: readonly MemberRef[] = [];
  source: ModelSource | undefined;
  config: FrozenModelConfig | undefined;
  /** Wanted or not and why, known to the lifecycle and from which files, pinned: changed only by `on`. */
  #state: RecordState = INITIAL_STATE;

  constructor(readonly name: string) {}

  get state(): RecordState {
    return this.#state;
  }

  /** The one way a record's state changes (record-state.ts nextState). */
  on(event: RecordEvent): void {
    this.#state = nextState(this.#state, event);
  }

  /** A load reached the lifecycle (Triton's lifecycle map has an entry): getVersion knows the model. */
  get tracked(): boolean {
    return isTracked(this.#state);
  }

  /** The model should be loaded (explicitly, as an ensemble member, or by none/poll mode). */
  get wanted(): boolean {
    return isWanted(this.#state);
  }

  /** Asked for by name (API, --load-model, none/poll mode) rather than pulled in as an ensemble member. */
  get explicit(): boolean {
    return isExplicit(this.#state);
  }

  /** On-demand mode: loaded by --load-model at start, never unloaded to make room. */
  get pinned(): boolean {
    return this.#state.pinned;
  }

  /** Unloaded because a model it depends on went away; it comes back when that model does. */
  get suspended(): boolean {
    return isSuspended(this.#state);
  }

  /** The current versions came from a config or file override. */
  get overridden(): boolean {
    return isOverridden(this.#state);
  }

  /** Fingerprint of the folder the current versions were loaded from (undefined: reload on next ask). */
  get fingerprint(): string | undefined {
    return loadedFingerprint(this.#state);
  }

  readyVersions(): number[] {
    return [...this.slots]
      .filter(([, s]) => s.state === 'READY')
      .map(([v]) => v)
      .sort((a, b) => a - b);
  }

  /** The highest READY version (readyVersions()'s last) without building the list: every request's lookup. */
  latestReady(): number | undefined {
    let latest: number | undefined;
    for (const [v, s] of this.slots)
      if (s.state === 'READY' && (latest === undefined || v > latest)) latest = v;
    return latest;
  }

  hasReady(): boolean {
    for (const s of this.slots.values()) if (s.state === 'READY') return true;
    return false;
  }

  memberNames(): string[] {
    return [...new Set(this.members.map((m) => m.name))];
  }
}

/** A request's version string: '' / undefined → -1 (the default version). Wording as Triton's frontends. */
export function parseModelVersion(version: string | undefined): number {
  if (version === undefined || version === '') return -1;
  if (/^-[0-9]+$/.test(version)) throw msg.negativeVersion(version);
  if (!/^[0-9]+$/.test(version)) throw msg.badVersionString(version);
  const v = Number(version);
  if (!Number.isSafeInteger(v)) throw msg.badVersionString(version);
  return v;
}

/** Triton's ModelLifeCycle::GetModel, with its messages. */
export function findServingVersion<V extends LoadedVersion>(
  record: ModelRecord<V> | undefined,
  name: string,
  version: string | undefined,
): V {
  if (!record || !record.tracked) throw msg.unknownModel(name);
  const v = parseModelVersion(version);
  if (v === -1) {
    const latest = record.latestReady();
    const slot = latest === undefined ? undefined : record.slots.get(latest);
    if (!slot?.loaded) throw msg.noAvailableVersion(name);
    return slot.loaded;
  }
  const slot = record.slots.get(v);
  if (!slot) throw msg.unknownVersion(name, v);
  if (slot.state !== 'READY' || !slot.loaded) throw msg.versionNotReady(name, v);
  return slot.loaded;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The repository index. Every model folder appears, loaded or not (a never-loaded one as a bare name:
 * state UNKNOWN, no version, empty reason — frontends print only its name, as Triton does),
 * plus models loaded from overrides. Versions ascend; a duplicate folder shows once as UNAVAILABLE.
 * Beyond Triton: a model that could not be read or had no version to load shows its reason without a
 * version, and a `specific` version with no folder shows as UNAVAILABLE.
 */
export function buildIndex(
  records: ReadonlyMap<string, ModelRecord>,
  scan: RepositoryScan,
  readyOnly: boolean,
): RepositoryIndexEntry[] {
  const names = new Set<string>([...scan.models.keys(), ...scan.duplicates]);
  for (const r of records.values()) if (r.source?.override && r.slots.size > 0) names.add(r.name);
  const out: RepositoryIndexEntry[] = [];
  for (const name of [...names].sort(byName)) {
    if (scan.duplicates.has(name)) {
      if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: REASON_DUPLICATE });
      continue;
    }
    const r = records.get(name);
    const versions = r ? [...r.slots.keys(), ...r.missing.filter((v) => !r.slots.has(v))] : [];
    if (r && versions.length > 0) {
      for (const v of versions.sort((a, b) => a - b)) {
        const slot = r.slots.get(v);
        if (slot) {
          if (!readyOnly || slot.state === 'READY') {
            out.push({ name, version: String(v), state: slot.state, reason: slot.reason });
          }
        } else if (!readyOnly) {
          out.push({
            name,
            version: String(v),
            state: 'UNAVAILABLE',
            reason: msg.specificVersionMissing(name, v),
          });
        }
      }
      continue;
    }
    if (readyOnly) continue;
    if (r?.modelError !== undefined) out.push({ name, state: 'UNAVAILABLE', reason: r.modelError });
    // Triton's "name only" entry: its JSON carries just the name, gRPC an empty state and reason.
    else out.push({ name, state: 'UNKNOWN', reason: '' });
  }
  return out;
}

/**
 * Strict readiness as Triton's server computes it: every model a load was attempted for has at least one
 * version, each version is READY (and its instances say so) or was deliberately unloaded.
 */
export function allReady(records: Iterable<ModelRecord>): boolean {
  for (const r of records) {
    if (!r.tracked) continue;
    if (r.slots.size === 0) return false;
    for (const s of r.slots.values()) {
      if (s.state === 'READY') {
        if (!s.loaded?.isReady()) return false;
      } else if (s.reason !== REASON_UNLOADED) {
        return false;
      }
    }
  }
  return true;
}
