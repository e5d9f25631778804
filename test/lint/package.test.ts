// The published package holds no tests and no test kits (package.json `files` leaves them out), and still
// holds the compiled entry points it exports. Asks npm itself what `npm pack` would put in the tarball.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

function packedFiles(): Promise<string[]> {
  return new Promise((resolve, reject) => {
    // --ignore-scripts: the `prepare` build is not needed, the tests run on a built dist/ already.
    execFile(
      'npm',
      ['pack', '--dry-run', '--json', '--ignore-scripts'],
      { cwd: ROOT, maxBuffer: 64 << 20 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`npm pack failed: ${stderr}`));
        const [pack] = JSON.parse(stdout) as { files: { path: string }[] }[];
        resolve(pack.files.map((f) => f.path));
      },
    );
  });
}

void test('npm pack leaves out tests and test kits, keeps the entry points', async () => {
  const files = await packedFiles();
  const tests = files.filter((f) => /\.test\.|\.testkit\./.test(f));
  assert.deepEqual(tests, [], 'test files in the package');
  for (const entry of [
    'dist/src/index.js',
    'dist/src/client/index.js',
    'dist/src/sdk/index.js',
    'bin/nereid.js',
  ]) {
    assert.ok(files.includes(entry), `${entry} missing from the package`);
  }
});
