/**
 * What one poll of the repositories does, decided from what it read and what the records say, before
 * anything changes (manager.ts pollAll: read → plan → apply). Pure: no files, no records changed, no
 * logs; poll-apply.ts applies the plan. The rules are Triton's poll: a model folder gone (or now found in
 * two repositories) is unloaded, unless its repository could not be listed this time; a folder whose
 * files are unchanged since its serving versions loaded is left alone; in watch mode, files that failed
 * to load already wait until they change, and so does a folder that cannot be read.
 */
import type { PolledModel } from './reader.js';

/** What the plan reads of a model's record (ModelRecord; a model seen for the first time has none). */
export interface PollRecordView {
  readonly name: string;
  readonly wanted: boolean;
  readonly overridden: boolean;
  readonly source: { readonly override: boolean; readonly repositoryPath: string } | undefined;
  readonly fingerprint: string | undefined;
  readonly failedFingerprint: string | undefined;
  hasReady(): boolean;
}

export interface PollReading {
  /** Names listed in exactly one repository. */
  readonly listed: ReadonlySet<string>;
  /** Names found in two or more repositories. */
  readonly duplicates: ReadonlySet<string>;
  /** Repositories that could not be listed. */
  readonly unreadable: ReadonlySet<string>;
  /** Folders read, by name. */
  readonly polled: ReadonlyMap<string, PolledModel>;
  /** Folders that could not be read: the reason, and (watch mode) the fingerprint of their files. */
  readonly invalid: ReadonlyMap<string, { readonly reason: string; readonly fingerprint?: string }>;
}

export interface PollPlan {
  /** Wanted models whose folder is gone or ambiguous: unloaded (with the ensembles that need them). */
  readonly removed: ReadonlySet<string>;
  /** Read folders to load (new, changed, or not serving). */
  readonly load: ReadonlyMap<string, PolledModel>;
  /** Read folders that served before the poll (a successful load is "modified", not "added"). */
  readonly wasReady: ReadonlySet<string>;
  /**
   * Unreadable folders to report as failed this time; `failedFingerprint` is set on the record (watch
   * mode). One left out was reported for these very files already.
   */
  readonly report: readonly {
    readonly name: string;
    readonly reason: string;
    readonly failedFingerprint?: string;
  }[];
}

/**
 * The poll's plan. `record(name)`: the model's record, undefined for a model never seen; `records`:
 * every record; `backOff`: watch mode.
 */
export function planPoll(
  reading: PollReading,
  records: Iterable<PollRecordView>,
  record: (name: string) => PollRecordView | undefined,
  backOff: boolean,
): PollPlan {
  const removed = new Set<string>();
  for (const r of records) {
    if (!r.wanted || r.source?.override || reading.listed.has(r.name)) continue;
    if (r.source && reading.unreadable.has(r.source.repositoryPath) && !reading.duplicates.has(r.name))
      continue;
    removed.add(r.name);
  }
  const load = new Map<string, PolledModel>();
  const wasReady = new Set<string>();
  for (const p of reading.polled.values()) {
    const rec = record(p.name);
    const ready = rec?.hasReady() === true;
    if (ready) wasReady.add(p.name);
    const unchanged =
      rec !== undefined &&
      !rec.overridden &&
      ready &&
      rec.fingerprint !== undefined &&
      rec.fingerprint === p.fingerprint;
    // Watch mode: these very files failed to load already; wait for them to change.
    const knownBad = backOff && p.fingerprint !== undefined && rec?.failedFingerprint === p.fingerprint;
    if (!unchanged && !knownBad) load.set(p.name, p);
  }
  const report: { name: string; reason: string; failedFingerprint?: string }[] = [];
  for (const [name, { reason, fingerprint }] of reading.invalid) {
    if (backOff && fingerprint !== undefined) {
      if (record(name)?.failedFingerprint === fingerprint) continue;
      report.push({ name, reason, failedFingerprint: fingerprint });
    } else report.push({ name, reason });
  }
  return { removed, load, wasReady, report };
}
