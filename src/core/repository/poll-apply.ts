/**
 * The apply half of a poll (manager.ts pollAll: read → poll-plan.ts planPoll → applyPoll): marks the
 * records the plan names, reports the folders that could not be read, unloads what is gone (and the
 * ensembles that needed it), loads what the plan says, brings suspended ensembles back, and sums the
 * cycle up. The manager runs it under its lock and lends it the operations that load and unload
 * (PollApplyHost); this module decides nothing the plan did not.
 */
import type { Logger } from '../../common/logger.js';
import type { LoadedVersion } from './contract.js';
import type { ModelRecord } from './lifecycle.js';
import { msg } from './messages.js';
import type { PollPlan, PollReading } from './poll-plan.js';
import type { PolledModel } from './reader.js';

export interface ModelLoadFailure {
  readonly name: string;
  readonly reason: string;
}

export interface PollSummary {
  /** Models loaded for the first time (or again after an unload) by this cycle. */
  readonly added: readonly string[];
  /** Loaded models reloaded because their folder changed. */
  readonly modified: readonly string[];
  /** Models unloaded because their folder went away (or became a duplicate). */
  readonly removed: readonly string[];
  /** Models that could not be read or loaded, with the reason. */
  readonly failed: readonly ModelLoadFailure[];
}

/** What applying a poll needs of the manager. */
export interface PollApplyHost<V extends LoadedVersion> {
  readonly log: Logger;
  /** The model's record, undefined when it has none. */
  find(name: string): ModelRecord<V> | undefined;
  /** The model's record, created when it has none. */
  record(name: string): ModelRecord<V>;
  /** Suspends the wanted ensembles (transitively) that need one of `gone`, except `exclude`; returns them. */
  invalidateDependents(gone: ReadonlySet<string>, exclude: ReadonlyMap<string, unknown>): Set<string>;
  /** Unloads models so that an ensemble drains before its members. */
  unloadInOrder(names: ReadonlySet<string>): Promise<void>;
  /** Loads the planned models, members first; each one's failure reason (undefined = loaded). */
  applyLoads(
    plan: ReadonlyMap<string, PolledModel>,
    invalid: ReadonlyMap<string, string>,
  ): Promise<Map<string, string | undefined>>;
  /** Loads suspended ensembles whose members just loaded; adds their outcomes. */
  revive(outcomes: Map<string, string | undefined>): Promise<void>;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Applies a poll's plan to the records and the loaded versions; `backOff`: watch mode. */
export async function applyPoll<V extends LoadedVersion>(
  host: PollApplyHost<V>,
  reading: PollReading,
  plan: PollPlan,
  backOff: boolean,
): Promise<PollSummary> {
  const failed: ModelLoadFailure[] = [];
  for (const d of reading.duplicates) failed.push({ name: d, reason: msg.notUnique(d) });
  // Gone (or now ambiguous): unload, with the ensembles that needed them.
  for (const n of plan.removed) {
    const r = host.find(n) as ModelRecord<V>;
    r.on({ type: 'drop' });
    r.failedFingerprint = undefined;
  }
  // Every folder of the repositories is asked for by name, read or not.
  for (const p of reading.polled.values()) host.record(p.name).on({ type: 'want', byName: true });
  for (const [n, { reason }] of reading.invalid) {
    const rec = host.record(n);
    rec.on({ type: 'want', byName: true });
    if (!rec.hasReady()) rec.modelError = reason;
  }
  for (const { name, reason, failedFingerprint } of plan.report) {
    if (failedFingerprint !== undefined) host.record(name).failedFingerprint = failedFingerprint;
    host.log.error(`Poll failed for model directory '${name}': ${reason}`);
    failed.push({ name, reason });
  }

  const invalidated = host.invalidateDependents(plan.removed, plan.load);
  await host.unloadInOrder(new Set([...plan.removed, ...invalidated]));
  const outcomes = await host.applyLoads(
    plan.load,
    new Map([...reading.invalid].map(([n, i]) => [n, i.reason])),
  );
  await host.revive(outcomes);

  const added: string[] = [];
  const modified: string[] = [];
  for (const [n, reason] of outcomes) {
    if (reason !== undefined && backOff && host.find(n)?.failedFingerprint !== undefined) {
      host.log.warn(
        `--watch: '${n}' failed to load${host.find(n)?.hasReady() ? ' (the last good version keeps serving)' : ''}; it is tried again when its files change`,
      );
    }
    if (reason !== undefined) failed.push({ name: n, reason: reason.trimEnd() });
    else if (plan.wasReady.has(n)) modified.push(n);
    else added.push(n);
  }
  return {
    added: added.sort(byName),
    modified: modified.sort(byName),
    removed: [...plan.removed].sort(byName),
    failed: failed.sort((a, b) => byName(a.name, b.name)),
  };
}
