// `npm start` builds only what changed, and says which it did: scripts/start.sh compares the sources with
// its build stamp, skips tsc when nothing changed, and otherwise runs tsc --incremental. Run through the
// script itself with `--version` as the server's arguments (the server prints its version and exits), so
// each start is as short as the build decision.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './harness.js';

function start(): { status: number | null; out: string } {
  const r = spawnSync('bash', ['scripts/start.sh', '--version'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 600_000,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

void describe('npm start', () => {
  it(
    'builds when a source changed, says how many, and skips the build when none did',
    { timeout: 1_200_000 },
    () => {
      const first = start(); // whatever state dist/ was in, this leaves it built and stamped
      assert.equal(first.status, 0, first.out);
      const again = start();
      assert.equal(again.status, 0, again.out);
      assert.match(again.out, /npm start: dist\/ is up to date \(no source changed since the last build\)/);
      assert.doesNotMatch(again.out, /building/);
      assert.match(again.out, /^nereid \d+\.\d+\.\d+/m);

      // A source saved (its content the same: only the time moves) counts as a change.
      const leaf = path.join(ROOT, 'src/cli/config-docs.ts');
      const { atime } = statSync(leaf);
      utimesSync(leaf, atime, new Date());
      const rebuilt = start();
      assert.equal(rebuilt.status, 0, rebuilt.out);
      assert.match(rebuilt.out, /npm start: building \(1 files changed since the last build\)/);
      const after = start();
      assert.match(after.out, /dist\/ is up to date/);
    },
  );
});
