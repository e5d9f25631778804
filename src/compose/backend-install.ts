/**
 * `nereid backends install NAME` and `nereid backends list`: the Python-based backends the server would
 * find (each --backend-directory, then Nereid's own python/backends), and their venvs
 * (backends/python/backend-venv.ts). Installing makes `<root>/<name>-<hash>/` with `python -m venv`,
 * `pip install -r requirements.txt` into it and, last, `.nereid-installed`: a venv the server sees is
 * always complete. An unfinished one (no marker) is removed and made again.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  PythonBasedBackends,
  REQUIREMENTS_FILE,
  findBackendFolder,
  isInstalled,
  venvForBackend,
  type BackendVenv,
  type PythonBasedOptions,
} from '../backends/python/index.js';
import { invalidArg, internal } from '../common/errors.js';

export { backendVenvRoot } from '../backends/python/index.js';

export interface BackendStatus {
  readonly name: string;
  readonly dir: string;
  /** undefined: the backend has no requirements.txt and runs on the python backend's interpreter. */
  readonly venv: BackendVenv | undefined;
  readonly installed: boolean;
}

export async function listBackends(options: PythonBasedOptions): Promise<BackendStatus[]> {
  const catalog = new PythonBasedBackends(options);
  const out: BackendStatus[] = [];
  for (const name of await catalog.names()) {
    const folder = await findBackendFolder(name, options);
    if (!folder) continue;
    const venv = await venvForBackend(options.venvRoot, name, folder.dir);
    out.push({ name, dir: folder.dir, venv, installed: venv !== undefined && isInstalled(venv) });
  }
  return out;
}

export interface InstallOptions extends PythonBasedOptions {
  /** The interpreter the venv is made from (default `python3` on PATH). */
  readonly python?: string;
  /** Where progress lines go (pip's own output is passed through to it too). */
  readonly out: (text: string) => void;
}

export interface InstallResult {
  readonly status: BackendStatus;
  /** false when the venv was already complete (nothing done). */
  readonly installed: boolean;
}

export async function installBackend(name: string, options: InstallOptions): Promise<InstallResult> {
  const folder = await findBackendFolder(name, options);
  if (!folder) {
    const known = (await new PythonBasedBackends(options).names()).join(', ') || 'none';
    throw invalidArg(`no Python-based backend '${name}' (found: ${known})`);
  }
  const venv = await venvForBackend(options.venvRoot, name, folder.dir);
  const status = (installed: boolean): BackendStatus => ({ name, dir: folder.dir, venv, installed });
  if (!venv) {
    options.out(
      `backend '${name}' has no ${REQUIREMENTS_FILE}: it runs on the python backend's interpreter\n`,
    );
    return { status: status(false), installed: false };
  }
  if (isInstalled(venv)) {
    options.out(`backend '${name}' is installed: ${venv.dir}\n`);
    return { status: status(true), installed: false };
  }
  if (existsSync(venv.dir)) {
    options.out(`removing the unfinished venv ${venv.dir}\n`);
    await rm(venv.dir, { recursive: true, force: true });
  }
  await mkdir(path.dirname(venv.dir), { recursive: true });
  const python = options.python ?? 'python3';
  const started = Date.now();
  options.out(`creating ${venv.dir} with ${python}\n`);
  try {
    await run(python, ['-m', 'venv', venv.dir], options.out);
    await run(
      venv.python,
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--no-input',
        '-r',
        path.join(folder.dir, REQUIREMENTS_FILE),
      ],
      options.out,
    );
  } catch (err) {
    await rm(venv.dir, { recursive: true, force: true });
    throw err;
  }
  await writeFile(
    venv.marker,
    `${JSON.stringify({ backend: name, requirements: path.join(folder.dir, REQUIREMENTS_FILE), installedAt: new Date().toISOString() })}\n`,
  );
  options.out(`backend '${name}' installed in ${Math.round((Date.now() - started) / 1000)} s: ${venv.dir}\n`);
  return { status: status(true), installed: true };
}

function run(cmd: string, args: readonly string[], out: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const forward = (d: Buffer): void => out(d.toString('utf8'));
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', (err) => reject(internal(`cannot run ${cmd}: ${err.message}`)));
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(internal(`${cmd} ${args.slice(0, 3).join(' ')} exited with ${signal ?? code}`));
    });
  });
}
