/** The turn budget's rules, with loop turns driven by setImmediate and a time window too long to matter. */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { createTurnBudget } from './turn-budget.js';

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

function fakeSocket(): Socket & { paused: number; resumed: number } {
  const s = {
    paused: 0,
    resumed: 0,
    pause() {
      s.paused++;
      return s;
    },
    resume() {
      s.resumed++;
      return s;
    },
  };
  return s as unknown as Socket & { paused: number; resumed: number };
}

test('requests within the budget start at once; the rest wait, paused, and start on later turns in order', async () => {
  const turns = createTurnBudget({ perTurn: 2, turnMs: 1e9, acceptTurns: 4 });
  const started: number[] = [];
  const sockets = Array.from({ length: 5 }, fakeSocket);
  sockets.forEach((s, i) => turns.admit(s, () => started.push(i)));
  assert.deepEqual(started, [0, 1]);
  assert.equal(turns.waiting, 3);
  assert.deepEqual(
    sockets.map((s) => s.paused),
    [0, 0, 1, 1, 1],
  );

  await nextTurn();
  assert.deepEqual(started, [0, 1, 2, 3], 'a turn starts up to perTurn waiting requests');
  assert.equal(sockets[2].resumed, 1);
  await nextTurn();
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.equal(turns.waiting, 0);
});

test('a turn that empties the queue leaves the next poll a fresh budget', async () => {
  const turns = createTurnBudget({ perTurn: 1, turnMs: 1e9, acceptTurns: 4 });
  const started: string[] = [];
  turns.admit(fakeSocket(), () => started.push('a'));
  turns.admit(fakeSocket(), () => started.push('b'));
  await nextTurn(); // b starts; nothing waits any more
  turns.admit(fakeSocket(), () => started.push('c'));
  turns.admit(fakeSocket(), () => started.push('d'));
  assert.deepEqual(started, ['a', 'b', 'c']);
  await nextTurn();
  assert.deepEqual(started, ['a', 'b', 'c', 'd']);
});

test('after an accepted connection, turns start nothing (up to acceptTurns in a row) so accepting comes first', async () => {
  const turns = createTurnBudget({ perTurn: 1, turnMs: 1e9, acceptTurns: 2 });
  const started: number[] = [];
  for (let i = 0; i < 3; i++) turns.admit(fakeSocket(), () => started.push(i));
  assert.deepEqual(started, [0]);
  turns.connected();
  await nextTurn();
  assert.deepEqual(started, [0], 'the turn after an accept starts nothing');
  turns.admit(fakeSocket(), () => started.push(3));
  assert.deepEqual(started, [0], 'a newcomer waits behind the queue though the turn started nothing');
  await nextTurn();
  assert.deepEqual(started, [0, 1], 'no accept since: requests start again');

  turns.connected();
  await nextTurn();
  turns.connected();
  await nextTurn();
  turns.connected();
  await nextTurn();
  assert.deepEqual(started, [0, 1, 2], 'after acceptTurns accept-only turns, one turn starts requests');
  await nextTurn();
  assert.deepEqual(started, [0, 1, 2, 3]);
});
