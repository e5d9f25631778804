/**
 * A model record's state as one value (lifecycle.ts ModelRecord.state): whether the model is meant to be
 * loaded and why, whether a load reached the lifecycle and what its serving versions were loaded from,
 * and whether on-demand mode pins it. The manager and versions.ts change it only by the events below
 * (nextState, pure); the records' readers ask it through ModelRecord's getters. Combinations that cannot
 * happen have no value: asked for by name or suspended yet not wanted, loaded from files yet unknown to the
 * lifecycle, loaded with an override yet counting as unchanged since its folder's fingerprint.
 */

/** Whether the model is meant to be loaded, and why. */
export type Demand =
  /** Not to be loaded: never asked for, unloaded, its folder gone, or the server closing. */
  | { readonly kind: 'unwanted' }
  /**
   * To be loaded: asked for by name (the API, --load-model, none/poll mode), or only pulled in as an
   * ensemble's member (an unload with unload_dependents takes those along).
   */
  | { readonly kind: 'wanted'; readonly byName: boolean }
  /** Wanted, but unloaded because a model it depends on went away; it comes back when that one does. */
  | { readonly kind: 'suspended'; readonly byName: boolean };

/** What the lifecycle knows of the model and of the files its serving versions came from. */
export type Files =
  /** No load reached the lifecycle (Triton's lifecycle map has no entry): getVersion does not know it. */
  | { readonly kind: 'untracked' }
  /** Known to the lifecycle; whatever serves is read and loaded again on the next ask. */
  | { readonly kind: 'stale' }
  /** Known; the serving versions were loaded from the folder with this fingerprint. */
  | { readonly kind: 'folder'; readonly fingerprint: string }
  /** Known; the serving versions came from a config or file override (never "unchanged"). */
  | { readonly kind: 'override' };

export interface RecordState {
  readonly demand: Demand;
  readonly files: Files;
  /** On-demand mode: loaded by --load-model at start, never unloaded to make room. */
  readonly pinned: boolean;
}

export type RecordEvent =
  /** On-demand mode's --load-model at start. */
  | { readonly type: 'pin' }
  /** A load or a poll asks for the model: by name, or as a member of an ensemble that is asked for. */
  | { readonly type: 'want'; readonly byName: boolean }
  /** A load reached the lifecycle. */
  | { readonly type: 'track' }
  /** A load swapped new versions in, read from these files (a suspended model is back). */
  | { readonly type: 'loaded'; readonly fingerprint: string | undefined; readonly overridden: boolean }
  /** A model it depends on went away or cannot be wired: unloaded until that one comes back. */
  | { readonly type: 'suspend' }
  /** Unloaded by request, its folder gone, or the server closing. */
  | { readonly type: 'drop' };

/** A record never touched: not wanted, unknown to the lifecycle, not pinned. */
export const INITIAL_STATE: RecordState = Object.freeze({
  demand: Object.freeze({ kind: 'unwanted' }),
  files: Object.freeze({ kind: 'untracked' }),
  pinned: false,
});

const UNWANTED: Demand = INITIAL_STATE.demand;
const STALE: Files = Object.freeze({ kind: 'stale' });

/** The files are to be read again; a model the lifecycle never knew stays unknown. */
const forget = (f: Files): Files => (f.kind === 'untracked' ? f : STALE);

/** The state after `e`. Pure; every transition of a record goes through here. */
export function nextState(s: RecordState, e: RecordEvent): RecordState {
  switch (e.type) {
    case 'pin':
      return s.pinned ? s : { ...s, pinned: true };
    case 'want': {
      const d = s.demand;
      // Once asked for by name it stays so until dropped; a suspended model stays suspended.
      const demand: Demand =
        d.kind === 'unwanted'
          ? { kind: 'wanted', byName: e.byName }
          : { kind: d.kind, byName: d.byName || e.byName };
      return { ...s, demand };
    }
    case 'track':
      return s.files.kind === 'untracked' ? { ...s, files: STALE } : s;
    case 'loaded': {
      const files: Files = e.overridden
        ? { kind: 'override' }
        : e.fingerprint === undefined
          ? STALE
          : { kind: 'folder', fingerprint: e.fingerprint };
      const d = s.demand;
      return { ...s, demand: d.kind === 'suspended' ? { kind: 'wanted', byName: d.byName } : d, files };
    }
    case 'suspend': {
      // Only a wanted model waits for its members; one that is not wanted has nothing to come back to.
      const d = s.demand;
      const demand: Demand = d.kind === 'unwanted' ? d : { kind: 'suspended', byName: d.byName };
      return { ...s, demand, files: forget(s.files) };
    }
    case 'drop':
      return { ...s, demand: UNWANTED, files: forget(s.files) };
  }
}

/** A load reached the lifecycle (Triton's lifecycle map has an entry): getVersion knows the model. */
export const isTracked = (s: RecordState): boolean => s.files.kind !== 'untracked';
/** The model should be loaded (explicitly, as an ensemble member, or by none/poll mode); suspended too. */
export const isWanted = (s: RecordState): boolean => s.demand.kind !== 'unwanted';
/** Asked for by name rather than pulled in as an ensemble member (and still wanted). */
export const isExplicit = (s: RecordState): boolean => s.demand.kind !== 'unwanted' && s.demand.byName;
export const isSuspended = (s: RecordState): boolean => s.demand.kind === 'suspended';
/** The current versions came from a config or file override. */
export const isOverridden = (s: RecordState): boolean => s.files.kind === 'override';
/** Fingerprint of the folder the current versions were loaded from (undefined: reload on next ask). */
export const loadedFingerprint = (s: RecordState): string | undefined =>
  s.files.kind === 'folder' ? s.files.fingerprint : undefined;
