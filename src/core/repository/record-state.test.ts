// A model record's state as tables: (state, event) → state, and what each state answers the readers
// (ModelRecord's getters). States are written `<demand> <files>[ pinned]`: demand is unwanted, named,
// member, suspended-named or suspended-member; files is untracked, stale, folder:<fingerprint> or override.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModelRecord } from './lifecycle.js';
import {
  INITIAL_STATE,
  isExplicit,
  isOverridden,
  isSuspended,
  isTracked,
  isWanted,
  loadedFingerprint,
  nextState,
  type Demand,
  type Files,
  type RecordEvent,
  type RecordState,
} from './record-state.js';

function parseDemand(text: string): Demand {
  switch (text) {
    case 'unwanted':
      return { kind: 'unwanted' };
    case 'named':
    case 'member':
      return { kind: 'wanted', byName: text === 'named' };
    case 'suspended-named':
    case 'suspended-member':
      return { kind: 'suspended', byName: text === 'suspended-named' };
  }
  throw new Error(`bad demand '${text}'`);
}

function parseFiles(text: string): Files {
  if (text === 'untracked' || text === 'stale' || text === 'override') return { kind: text };
  if (text.startsWith('folder:')) return { kind: 'folder', fingerprint: text.slice('folder:'.length) };
  throw new Error(`bad files '${text}'`);
}

function parse(text: string): RecordState {
  const [demand, files, pinned, ...rest] = text.split(' ');
  if (rest.length > 0 || (pinned !== undefined && pinned !== 'pinned')) throw new Error(`bad '${text}'`);
  return { demand: parseDemand(demand), files: parseFiles(files), pinned: pinned === 'pinned' };
}

function show(s: RecordState): string {
  const d = s.demand;
  const demand =
    d.kind === 'unwanted'
      ? 'unwanted'
      : `${d.kind === 'suspended' ? 'suspended-' : ''}${d.byName ? 'named' : 'member'}`;
  const files = s.files.kind === 'folder' ? `folder:${s.files.fingerprint}` : s.files.kind;
  return `${demand} ${files}${s.pinned ? ' pinned' : ''}`;
}

/** Events as `pin`, `want:name`, `want:member`, `track`, `loaded:<fp>` (`-`: none), `loaded:override`, `suspend`, `drop`. */
function event(text: string): RecordEvent {
  if (text === 'pin' || text === 'track' || text === 'suspend' || text === 'drop') return { type: text };
  if (text === 'want:name' || text === 'want:member') return { type: 'want', byName: text === 'want:name' };
  if (text === 'loaded:override') return { type: 'loaded', fingerprint: 'f9', overridden: true };
  if (text.startsWith('loaded:')) {
    const fp = text.slice('loaded:'.length);
    return { type: 'loaded', fingerprint: fp === '-' ? undefined : fp, overridden: false };
  }
  throw new Error(`bad event '${text}'`);
}

const EVENTS = [
  'pin',
  'want:name',
  'want:member',
  'track',
  'loaded:f1',
  'loaded:f2',
  'loaded:-',
  'loaded:override',
  'suspend',
  'drop',
];

/** [from, event, to] */
const TRANSITIONS: readonly (readonly [string, string, string])[] = [
  // --load-model in on-demand mode pins before anything loads; nothing unpins.
  ['unwanted untracked', 'pin', 'unwanted untracked pinned'],
  ['named folder:f1 pinned', 'pin', 'named folder:f1 pinned'],
  ['named folder:f1 pinned', 'drop', 'unwanted stale pinned'],
  // Asked for: by name (API, none/poll mode) or as the member of an ensemble asked for.
  ['unwanted untracked', 'want:name', 'named untracked'],
  ['unwanted untracked', 'want:member', 'member untracked'],
  ['member stale', 'want:name', 'named stale'],
  ['named folder:f1', 'want:member', 'named folder:f1'],
  ['unwanted stale', 'want:member', 'member stale'],
  // Asking again does not bring a suspended ensemble back: only a load does.
  ['suspended-member stale', 'want:name', 'suspended-named stale'],
  ['suspended-named stale', 'want:member', 'suspended-named stale'],
  // A load reaches the lifecycle; the lifecycle does not forget a model.
  ['named untracked', 'track', 'named stale'],
  ['named folder:f1', 'track', 'named folder:f1'],
  ['unwanted stale', 'want:name', 'named stale'],
  // Versions swapped in: from a folder (its fingerprint), without one, or with an override.
  ['named stale', 'loaded:f1', 'named folder:f1'],
  ['named folder:f1', 'loaded:f2', 'named folder:f2'],
  ['named folder:f1', 'loaded:-', 'named stale'],
  ['named folder:f1', 'loaded:override', 'named override'],
  ['member override', 'loaded:f1', 'member folder:f1'],
  ['suspended-named stale', 'loaded:f1', 'named folder:f1'],
  ['suspended-member stale', 'loaded:override', 'member override'],
  // A member went away: unloaded until it comes back, its files read again then.
  ['named folder:f1', 'suspend', 'suspended-named stale'],
  ['member override', 'suspend', 'suspended-member stale'],
  ['suspended-named stale', 'suspend', 'suspended-named stale'],
  ['named untracked', 'suspend', 'suspended-named untracked'],
  // Nothing to come back to for a model nobody wants.
  ['unwanted folder:f1', 'suspend', 'unwanted stale'],
  // Unloaded, gone, or the server closing: not wanted, by name or otherwise, and not suspended.
  ['named folder:f1', 'drop', 'unwanted stale'],
  ['suspended-named stale', 'drop', 'unwanted stale'],
  ['member override', 'drop', 'unwanted stale'],
  ['named untracked', 'drop', 'unwanted untracked'],
  ['unwanted untracked', 'drop', 'unwanted untracked'],
];

for (const [from, ev, to] of TRANSITIONS) {
  void test(`record state: ${from} --${ev}--> ${to}`, () => {
    assert.equal(show(nextState(parse(from), event(ev))), to);
  });
}

/** What the readers see: tracked, wanted, explicit, suspended, pinned, overridden, fingerprint. */
const READERS: readonly (readonly [string, string])[] = [
  ['unwanted untracked', '- - - - - - -'],
  ['named untracked', '- wanted explicit - - - -'],
  ['member stale', 'tracked wanted - - - - -'],
  ['named folder:f1', 'tracked wanted explicit - - - f1'],
  ['suspended-member stale', 'tracked wanted - suspended - - -'],
  ['suspended-named untracked', '- wanted explicit suspended - - -'],
  ['named override', 'tracked wanted explicit - - overridden -'],
  ['unwanted stale pinned', 'tracked - - - pinned - -'],
];

/** A record brought to `state` through events only (the record has no other way in). */
function recordIn(state: RecordState): ModelRecord {
  const r = new ModelRecord('m');
  if (state.pinned) r.on({ type: 'pin' });
  const d = state.demand;
  if (d.kind !== 'unwanted') r.on({ type: 'want', byName: d.byName });
  const f = state.files;
  if (f.kind !== 'untracked') r.on({ type: 'track' });
  if (f.kind === 'folder' || f.kind === 'override')
    r.on({
      type: 'loaded',
      fingerprint: f.kind === 'folder' ? f.fingerprint : 'x',
      overridden: f.kind === 'override',
    });
  if (d.kind === 'suspended') r.on({ type: 'suspend' });
  return r;
}

const readers = (r: ModelRecord): string =>
  [
    r.tracked && 'tracked',
    r.wanted && 'wanted',
    r.explicit && 'explicit',
    r.suspended && 'suspended',
    r.pinned && 'pinned',
    r.overridden && 'overridden',
    r.fingerprint,
  ]
    .map((x) => (typeof x === 'string' ? x : '-'))
    .join(' ');

for (const [state, seen] of READERS) {
  void test(`record readers: ${state} → ${seen}`, () => {
    const r = recordIn(parse(state));
    assert.equal(show(r.state), state);
    assert.equal(readers(r), seen);
  });
}

void test('record state: no sequence of events reaches an impossible combination', () => {
  const seen = new Map<string, RecordState>([[show(INITIAL_STATE), INITIAL_STATE]]);
  const queue = [INITIAL_STATE];
  while (queue.length > 0) {
    const s = queue.shift() as RecordState;
    for (const e of EVENTS) {
      const n = nextState(s, event(e));
      const where = `${show(s)} --${e}--> ${show(n)}`;
      assert.ok(!isExplicit(n) || isWanted(n), `asked for by name yet not wanted: ${where}`);
      assert.ok(!isSuspended(n) || isWanted(n), `suspended yet not wanted: ${where}`);
      assert.ok(!isOverridden(n) || isTracked(n), `overridden yet untracked: ${where}`);
      assert.ok(loadedFingerprint(n) === undefined || isTracked(n), `files known yet untracked: ${where}`);
      // A suspended model's files are read again when it comes back; an override never counts as unchanged.
      assert.ok(!isSuspended(n) || loadedFingerprint(n) === undefined, `suspended, files kept: ${where}`);
      assert.ok(!isOverridden(n) || loadedFingerprint(n) === undefined, `override unchanged: ${where}`);
      // What the lifecycle knows and what on-demand mode pinned are never forgotten.
      assert.ok(!s.pinned || n.pinned, `unpinned: ${where}`);
      assert.ok(s.files.kind === 'untracked' || n.files.kind !== 'untracked', `untracked: ${where}`);
      if (!seen.has(show(n))) {
        seen.set(show(n), n);
        queue.push(n);
      }
    }
  }
  // Pinned or not × (3 demands × {untracked, stale, folder:f1, folder:f2, override} + the 2 suspended
  // demands × {untracked, stale}): a suspended model has no serving files to compare with.
  assert.equal(seen.size, 2 * (3 * 5 + 2 * 2));
});
