/**
 * Where a Python-based backend's packages live: one venv per backend and per content of its
 * `requirements.txt`, `<root>/<name>-<sha256(requirements.txt)[:12]>/`, complete only once it holds
 * `.nereid-installed` (written last by `nereid backends install`, so a half-made venv is never used).
 * Editing requirements.txt names a new venv; the old one stays until removed.
 *
 * The root, in this order: `--backend-venv-directory`, the NEREID_BACKEND_VENVS environment variable,
 * `.cache/backends/` in a source checkout (where scripts/test.sh installs them), else
 * `~/.cache/nereid/backends`.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PACKAGE_ROOT } from './interpreter.js';

export const INSTALLED_MARKER = '.nereid-installed';
export const REQUIREMENTS_FILE = 'requirements.txt';
/** The environment variable naming the venv root when no flag does. */
export const VENV_ROOT_ENV = 'NEREID_BACKEND_VENVS';
/** Nereid's own Python-based backends: `python/backends/<name>/` in this package. */
export const BUNDLED_BACKENDS_DIR = path.join(PACKAGE_ROOT, 'python', 'backends');

/** The folder that holds the backends' venvs. */
export function backendVenvRoot(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  packageRoot: string = PACKAGE_ROOT,
): string {
  if (flag) return path.resolve(flag);
  const fromEnv = env[VENV_ROOT_ENV];
  if (fromEnv) return path.resolve(fromEnv);
  if (existsSync(path.join(packageRoot, '.git'))) return path.join(packageRoot, '.cache', 'backends');
  return path.join(os.homedir(), '.cache', 'nereid', 'backends');
}

/** The first 12 hex digits of the SHA-256 of the requirements' bytes. */
export function requirementsKey(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

export interface BackendVenv {
  /** `<root>/<name>-<key>` */
  readonly dir: string;
  readonly python: string;
  /** The marker that says the install finished. */
  readonly marker: string;
}

export function backendVenv(root: string, name: string, key: string): BackendVenv {
  const dir = path.join(root, `${name}-${key}`);
  return { dir, python: path.join(dir, 'bin', 'python'), marker: path.join(dir, INSTALLED_MARKER) };
}

/** The venv a backend folder's requirements.txt asks for, or undefined when it has none. */
export async function venvForBackend(
  root: string,
  name: string,
  backendDir: string,
): Promise<BackendVenv | undefined> {
  const text = await readFile(path.join(backendDir, REQUIREMENTS_FILE)).catch(() => undefined);
  if (text === undefined) return undefined;
  return backendVenv(root, name, requirementsKey(text));
}

export function isInstalled(venv: BackendVenv): boolean {
  return existsSync(venv.marker) && existsSync(venv.python);
}

/** The command that installs a backend's packages, as messages name it. */
export function installCommand(name: string): string {
  return `npx nereid backends install ${name}`;
}
