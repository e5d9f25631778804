import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RepositoryIndexEntry } from '../core/index.js';
import { drawTable, modelTable } from './startup-table.js';

const TRACEBACK =
  'Internal: ValueError: weights file is missing:\n  expected /models/bad/1/weights.bin\n\nAt:\n  1/model.py(3): helper\n  1/model.py(6): initialize\n';

function assertRectangular(table: string): string[] {
  const lines = table.split('\n');
  const width = lines[0].length;
  for (const line of lines) {
    assert.equal(line.length, width, `every line is as wide as the rule: ${JSON.stringify(line)}`);
    assert.match(line, /^[+|].*[+|]$/, `every line starts and ends on a border: ${JSON.stringify(line)}`);
  }
  return lines;
}

test('a multi-line reason (a Python traceback) stays inside its cell: one line each, borders straight', () => {
  const entries: RepositoryIndexEntry[] = [
    { name: 'bad', version: '1', state: 'UNAVAILABLE', reason: TRACEBACK },
    { name: 'simple', version: '1', state: 'READY', reason: '' },
  ];
  const lines = assertRectangular(modelTable(entries));
  const body = lines.slice(3, -1);
  assert.match(body[0], /^\| bad +\| 1 +\| UNAVAILABLE: Internal: ValueError: weights file is missing: +\|$/);
  assert.match(
    body[1],
    /^\| +\| +\|   expected \/models\/bad\/1\/weights.bin +\|$/,
    'continuation lines leave Model and Version blank',
  );
  assert.ok(body.some((l) => l.includes('1/model.py(6): initialize')));
  assert.match(body[body.length - 1], /^\| simple +\| 1 +\| READY +\|$/);
  assert.ok(
    !body.some((l) => /\| +\| +\| +\|$/.test(l) && body.indexOf(l) === body.length - 2),
    'no blank line left by the trailing newline',
  );
});

test('a long reason wraps at a space to fit the width, and no line passes it', () => {
  const reason = 'unable to load: ' + Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
  const table = modelTable([{ name: 'm', version: '1', state: 'UNAVAILABLE', reason }], 80);
  const lines = assertRectangular(table);
  assert.ok(lines[0].length <= 80, `table fits 80 columns: ${lines[0].length}`);
  const text = lines
    .slice(3, -1)
    .map((l) => l.split('|')[3].trim())
    .join(' ');
  assert.equal(text, `UNAVAILABLE: ${reason}`, 'wrapping loses no word');
});

test('a word longer than the column is cut rather than pushing the border out', () => {
  const lines = assertRectangular(drawTable(['A', 'B'], [['x', 'y'.repeat(200)]], 60));
  assert.ok(lines[0].length <= 60);
  assert.equal(
    lines
      .slice(3, -1)
      .map((l) => l.split('|')[2].trim())
      .join(''),
    'y'.repeat(200),
  );
});
