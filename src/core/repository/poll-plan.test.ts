// The poll planner as a table: what the records say and what the poll read → what is unloaded, loaded
// and reported. No files, no manager: the manager's own poll tests (manager-poll.test.ts) cover applying it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planPoll, type PollPlan, type PollReading, type PollRecordView } from './poll-plan.js';
import type { PolledModel } from './reader.js';

interface Rec {
  /** wanted, serving (READY), the fingerprint its versions loaded from, the fingerprint that failed */
  readonly wanted?: boolean;
  readonly ready?: boolean;
  readonly fp?: string;
  readonly failedFp?: string;
  /** loaded with a config/file override (its folder does not count as unchanged) */
  readonly overridden?: boolean;
  /** loaded from an override copy rather than a repository */
  readonly override?: boolean;
  readonly repo?: string;
}

interface Row {
  readonly name: string;
  readonly records: Readonly<Record<string, Rec>>;
  /** listed folders (read: fingerprint, or an `invalid:` reason with its fingerprint after a colon) */
  readonly listed?: Readonly<Record<string, string | undefined>>;
  readonly duplicates?: readonly string[];
  readonly unreadable?: readonly string[];
  readonly watch?: boolean;
  readonly expect: {
    readonly removed?: readonly string[];
    readonly load?: readonly string[];
    readonly wasReady?: readonly string[];
    readonly report?: readonly string[];
  };
}

const ROWS: readonly Row[] = [
  { name: 'nothing anywhere', records: {}, expect: {} },
  { name: 'a new folder loads', records: {}, listed: { a: 'f1' }, expect: { load: ['a'] } },
  {
    name: 'an unchanged serving folder is left alone',
    records: { a: { wanted: true, ready: true, fp: 'f1' } },
    listed: { a: 'f1' },
    expect: { wasReady: ['a'] },
  },
  {
    name: 'a changed folder reloads (modified)',
    records: { a: { wanted: true, ready: true, fp: 'f1' } },
    listed: { a: 'f2' },
    expect: { load: ['a'], wasReady: ['a'] },
  },
  {
    name: 'same files but not serving: loads again',
    records: { a: { wanted: true, ready: false, fp: 'f1' } },
    listed: { a: 'f1' },
    expect: { load: ['a'] },
  },
  {
    name: 'same files but loaded with an override: reloads',
    records: { a: { wanted: true, ready: true, fp: 'f1', overridden: true } },
    listed: { a: 'f1' },
    expect: { load: ['a'], wasReady: ['a'] },
  },
  {
    name: 'no fingerprint (override copy): never unchanged',
    records: { a: { wanted: true, ready: true } },
    listed: { a: undefined },
    expect: { load: ['a'], wasReady: ['a'] },
  },
  {
    name: 'a folder gone: unloaded',
    records: { a: { wanted: true, ready: true, fp: 'f1', repo: '/r' } },
    expect: { removed: ['a'] },
  },
  {
    name: 'gone but not wanted (unloaded already): nothing',
    records: { a: { wanted: false, repo: '/r' } },
    expect: {},
  },
  {
    name: 'gone from an override copy: kept',
    records: { a: { wanted: true, ready: true, override: true, repo: '/tmp/copy' } },
    expect: {},
  },
  {
    name: 'its repository could not be listed: keeps serving',
    records: { a: { wanted: true, ready: true, fp: 'f1', repo: '/r' } },
    unreadable: ['/r'],
    expect: {},
  },
  {
    name: 'now in two repositories: unloaded even if one could not be listed',
    records: { a: { wanted: true, ready: true, fp: 'f1', repo: '/r' } },
    duplicates: ['a'],
    unreadable: ['/r'],
    expect: { removed: ['a'] },
  },
  {
    name: 'an unreadable folder is reported',
    records: {},
    listed: { a: 'invalid:bad json:' },
    expect: { report: ['a: bad json'] },
  },
  {
    name: 'watch: files that failed already wait for a change',
    records: { a: { wanted: true, ready: true, fp: 'f1', failedFp: 'f2' } },
    listed: { a: 'f2' },
    watch: true,
    expect: { wasReady: ['a'] },
  },
  {
    name: 'without watch, failed files are tried on every poll',
    records: { a: { wanted: true, ready: true, fp: 'f1', failedFp: 'f2' } },
    listed: { a: 'f2' },
    expect: { load: ['a'], wasReady: ['a'] },
  },
  {
    name: 'watch: an unreadable folder is reported once per set of files',
    records: { a: { wanted: true, failedFp: 'g1' }, b: { wanted: true, failedFp: 'g1' } },
    listed: { a: 'invalid:bad:g1', b: 'invalid:bad:g2' },
    watch: true,
    expect: { report: ['b: bad @g2'] },
  },
];

function view(name: string, r: Rec): PollRecordView {
  return {
    name,
    wanted: r.wanted ?? false,
    overridden: r.overridden ?? false,
    source: r.repo === undefined ? undefined : { override: r.override ?? false, repositoryPath: r.repo },
    fingerprint: r.fp,
    failedFingerprint: r.failedFp,
    hasReady: () => r.ready ?? false,
  };
}

function reading(row: Row): PollReading {
  const polled = new Map<string, PolledModel>();
  const invalid = new Map<string, { reason: string; fingerprint?: string }>();
  for (const [name, fp] of Object.entries(row.listed ?? {})) {
    if (fp?.startsWith('invalid:')) {
      const [, reason, fingerprint] = fp.split(':');
      invalid.set(name, fingerprint ? { reason, fingerprint } : { reason });
    } else polled.set(name, { name, fingerprint: fp } as PolledModel);
  }
  return {
    listed: new Set(Object.keys(row.listed ?? {})),
    duplicates: new Set(row.duplicates ?? []),
    unreadable: new Set(row.unreadable ?? []),
    polled,
    invalid,
  };
}

const show = (plan: PollPlan) => ({
  removed: [...plan.removed].sort(),
  load: [...plan.load.keys()].sort(),
  wasReady: [...plan.wasReady].sort(),
  report: plan.report.map(
    (r) => `${r.name}: ${r.reason}${r.failedFingerprint ? ` @${r.failedFingerprint}` : ''}`,
  ),
});

for (const row of ROWS) {
  void test(`poll plan: ${row.name}`, () => {
    const records = new Map(Object.entries(row.records).map(([n, r]) => [n, view(n, r)]));
    const plan = planPoll(reading(row), records.values(), (n) => records.get(n), row.watch ?? false);
    assert.deepEqual(show(plan), {
      removed: row.expect.removed ?? [],
      load: row.expect.load ?? [],
      wasReady: row.expect.wasReady ?? [],
      report: row.expect.report ?? [],
    });
  });
}
