// `nereid backends install|list` as a user runs them (bin/nereid.js in a child process): a backend the test
// writes, with a requirements.txt of its own, gets a venv named after that file's hash and marked finished
// last; a second install does nothing; the server then runs the backend's stubs in that venv (which has no
// numpy here, so the load fails saying so: proof of which interpreter ran).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { makeRepository, post, removeRepository, ROOT, startServer } from './harness.js';
import { VENV_PYTHON } from './python-support.js';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'bin', 'nereid.js');

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'backends', ...args], { timeout: 300_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('nereid backends', () => {
  let backends: string;
  let venvs: string;
  let flags: string[];

  before(() => {
    backends = mkdtempSync(path.join(os.tmpdir(), 'nereid-cli-backends-'));
    venvs = mkdtempSync(path.join(os.tmpdir(), 'nereid-cli-venvs-'));
    mkdirSync(path.join(backends, 'probe'));
    writeFileSync(
      path.join(backends, 'probe', 'model.py'),
      'class TritonPythonModel:\n    def execute(self, requests):\n        return []\n',
    );
    // No packages to fetch: the test needs no network, only the venv.
    writeFileSync(path.join(backends, 'probe', 'requirements.txt'), '# nothing to install\n');
    flags = [`--backend-directory=${backends}`, `--backend-venv-directory=${venvs}`];
  });

  after(() => {
    rmSync(backends, { recursive: true, force: true });
    rmSync(venvs, { recursive: true, force: true });
  });

  it('lists the backend as not installed, installs it once, then lists it installed', async () => {
    const before = await cli(['list', ...flags]);
    assert.equal(before.code, 0, before.stderr);
    assert.match(before.stdout, /^probe\tnot installed\t/m);
    assert.match(before.stdout, /^fil\t/m, "Nereid's own backends are listed too");

    const first = await cli(['install', 'probe', ...flags, `--python=${VENV_PYTHON}`]);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const made = readdirSync(venvs);
    assert.equal(made.length, 1);
    assert.match(made[0], /^probe-[0-9a-f]{12}$/);
    assert.ok(existsSync(path.join(venvs, made[0], '.nereid-installed')));
    assert.ok(existsSync(path.join(venvs, made[0], 'bin', 'python')));

    const again = await cli(['install', 'probe', ...flags, `--python=${VENV_PYTHON}`]);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /backend 'probe' is installed/);

    const listed = await cli(['list', ...flags]);
    assert.match(listed.stdout, /^probe\tinstalled\t/m);
  });

  it('refuses an unknown backend and an unknown command', async () => {
    const unknown = await cli(['install', 'nope', ...flags]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no Python-based backend 'nope' \(found: .*probe/);
    const bad = await cli(['frobnicate']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown command 'nereid backends frobnicate'/);
  });

  it("runs the backend's stubs in its installed venv", async () => {
    const repo = makeRepository({
      probed: {
        config:
          'name: "probed"\nbackend: "probe"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
        files: { '1/.keep': '' },
      },
    });
    const s = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', ...flags]);
    try {
      const res = await post(`${s.url}/v2/repository/models/probed/load`, {});
      assert.equal(res.status, 400);
      const venv = readdirSync(venvs)[0];
      // The venv has no numpy: the stub that the venv's python ran says so.
      const error = res.json<{ error: string }>().error;
      assert.match(error, /cannot import numpy/);
      assert.ok(error.includes(`${venv}/bin/python`), error);
    } finally {
      await s.stop();
      removeRepository(repo);
    }
  });
});
