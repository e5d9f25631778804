/**
 * Which Python runs a model's stubs, in this order:
 * 1. the model's `EXECUTION_ENV_PATH` parameter (Triton's): a folder holding `bin/python3` or `bin/python`
 *    (a venv or an unpacked conda env), or a packed `.tar.gz` / `.tgz` environment (conda-pack) unpacked
 *    once into a cache folder and reused by every model and reload that names the same archive;
 *    `$$TRITON_MODEL_DIRECTORY` is replaced by the model's folder, relative paths are taken from it.
 *    It must stay inside the model folder (as Triton's docs require of `$$TRITON_MODEL_DIRECTORY` paths),
 *    or lie in a folder the operator allows (`--backend-config=python,execution-env-allowed-paths=`):
 *    a config, and a load request's config override, must not pick an interpreter elsewhere
 *    (`EXECUTION_ENV_PATH=/usr` would run the system's Python with whatever it can import);
 * 2. `--backend-config=python,python-executable=<path>`;
 * 3. in a source checkout, the repository's own `.venv/bin/python` (scripts/setup-python.sh makes it);
 * 4. `python3` on PATH, like Triton's default stub.
 * The stub itself reports an interpreter without numpy (or too old) with an actionable message.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelFiles } from '../../backend-api/backend.js';
import { confine, isWithin, realFolder } from '../../common/confine.js';
import { invalidArg, internal, type NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';

/** The repository / package root (this module compiles to dist/src/backends/python/). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
/** The stub's entry script; its folder also holds triton_python_backend_utils. */
export const STUB_SCRIPT = path.join(PACKAGE_ROOT, 'python', 'nereid_python_stub.py');

export interface Interpreter {
  readonly executable: string;
  /** Environment additions (PATH, LD_LIBRARY_PATH of an execution environment). */
  readonly env: Readonly<Record<string, string>>;
  /** How it was chosen, for messages. */
  readonly origin: string;
}

export interface InterpreterChoice {
  readonly modelName: string;
  readonly modelDir: string;
  /** The model config's EXECUTION_ENV_PATH parameter, if any. */
  readonly executionEnvPath: string | undefined;
  readonly pythonExecutable: string | undefined;
  readonly envCacheDir: string;
  /** Folders an EXECUTION_ENV_PATH outside the model folder may name (absolute). */
  readonly allowedPaths: readonly string[];
  /** The core's check for paths inside the model folder (absent: only a text check is made). */
  readonly files: ModelFiles | undefined;
  readonly log: Logger;
}

const unpacking = new Map<string, Promise<string>>();

export async function chooseInterpreter(choice: InterpreterChoice): Promise<Interpreter> {
  if (choice.executionEnvPath) return executionEnvironment(choice, choice.executionEnvPath);
  if (choice.pythonExecutable) {
    return { executable: choice.pythonExecutable, env: {}, origin: 'python-executable backend config' };
  }
  const venv = path.join(PACKAGE_ROOT, '.venv', 'bin', 'python');
  if (existsSync(venv)) return { executable: venv, env: {}, origin: "the checkout's .venv" };
  return { executable: 'python3', env: {}, origin: 'python3 on PATH' };
}

/** Where EXECUTION_ENV_PATH may point: inside the model folder, or inside a folder the operator allows. */
async function locateEnvironment(choice: InterpreterChoice, raw: string): Promise<string> {
  const modelDir = path.resolve(choice.modelDir);
  const what = `EXECUTION_ENV_PATH '${raw}'`;
  if (raw.includes('\0')) throw invalidArg(`${what} of model '${choice.modelName}' contains a NUL character`);
  const where = path.resolve(modelDir, raw.split('$$TRITON_MODEL_DIRECTORY').join(modelDir));
  if (isWithin(where, modelDir) && where !== modelDir) {
    if (choice.files) return choice.files.check(where, what, { mustExist: true });
    if (!(await stat(where).catch(() => undefined))) {
      throw invalidArg(`${what} of model '${choice.modelName}' does not exist in the model folder`);
    }
    return where;
  }
  const realAllowed = await Promise.all(choice.allowedPaths.map((p) => realFolder(p)));
  // One message whether or not the path exists: a client learns nothing about folders it may not use.
  if ((await confine(where, choice.allowedPaths, realAllowed)) !== 'inside') {
    throw invalidArg(
      `${what} of model '${choice.modelName}' is outside the model folder; it must name an environment inside it ` +
        `($$TRITON_MODEL_DIRECTORY/...), or a folder the server's operator allows with ` +
        `--backend-config=python,execution-env-allowed-paths=<folder>[:<folder>...]`,
    );
  }
  if (!(await stat(where).catch(() => undefined))) {
    throw invalidArg(`${what} of model '${choice.modelName}' does not exist`);
  }
  return where;
}

async function executionEnvironment(choice: InterpreterChoice, raw: string): Promise<Interpreter> {
  const where = await locateEnvironment(choice, raw);
  const info = await stat(where).catch(() => undefined);
  if (!info) throw invalidArg(`EXECUTION_ENV_PATH '${raw}' of model '${choice.modelName}' does not exist`);
  let root: string;
  if (info.isDirectory()) {
    root = where;
  } else if (/\.(tar\.gz|tgz)$/.test(where)) {
    root = await unpackOnce(where, info.size, info.mtimeMs, choice);
  } else {
    throw invalidArg(
      `EXECUTION_ENV_PATH '${raw}' of model '${choice.modelName}' must be a folder with bin/python or a .tar.gz archive`,
    );
  }
  const exe = ['python3', 'python'].map((n) => path.join(root, 'bin', n)).find((p) => existsSync(p));
  if (!exe) {
    throw invalidArg(
      `EXECUTION_ENV_PATH '${raw}' of model '${choice.modelName}' has no bin/python3 or bin/python`,
    );
  }
  const prepend = (name: string, dir: string): string => {
    const old = process.env[name];
    return old ? `${dir}:${old}` : dir;
  };
  return {
    executable: exe,
    env: {
      PATH: prepend('PATH', path.join(root, 'bin')),
      LD_LIBRARY_PATH: prepend('LD_LIBRARY_PATH', path.join(root, 'lib')),
    },
    origin: `EXECUTION_ENV_PATH ${raw}`,
  };
}

/** Unpacks an archive into the cache once (across loads and processes: atomic rename of a finished copy). */
function unpackOnce(
  archive: string,
  size: number,
  mtimeMs: number,
  choice: InterpreterChoice,
): Promise<string> {
  const key = createHash('sha256').update(`${archive}\0${size}\0${mtimeMs}`).digest('hex').slice(0, 32);
  const target = path.join(choice.envCacheDir, key);
  let pending = unpacking.get(target);
  if (!pending) {
    pending = doUnpack(archive, target, choice).finally(() => unpacking.delete(target));
    unpacking.set(target, pending);
  }
  return pending;
}

async function doUnpack(archive: string, target: string, choice: InterpreterChoice): Promise<string> {
  const marker = path.join(target, '.nereid-unpacked');
  if (existsSync(marker)) return target;
  await mkdir(choice.envCacheDir, { recursive: true, mode: 0o700 });
  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  await mkdir(tmp, { mode: 0o700 });
  choice.log.info(
    `unpacking execution environment ${archive} for model '${choice.modelName}' into ${target}`,
  );
  // Named by its file name only: the message reaches clients, the cache folder is the server's business.
  const failed = (err: unknown): NereidError =>
    internal(
      `failed to unpack EXECUTION_ENV_PATH archive '${path.basename(archive)}' for model '${choice.modelName}': ${(err instanceof Error ? err.message : String(err)).split(target).join('<cache>')}`,
    );
  try {
    // GNU tar refuses members with '..' and strips leading '/', so a hostile archive stays inside tmp.
    await run('tar', ['-xzf', archive, '-C', tmp]);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw failed(err);
  }
  try {
    await rename(tmp, target);
  } catch {
    // Another server is unpacking the same archive: wait for its copy to be finished.
    await rm(tmp, { recursive: true, force: true });
    const deadline = Date.now() + 120_000;
    while (!existsSync(marker)) {
      if (Date.now() > deadline) throw failed(new Error(`${target} exists but was never finished`));
      await new Promise((r) => setTimeout(r, 200));
    }
    return target;
  }
  try {
    // conda-pack environments fix their prefixes in place, where they will live.
    const unpack = path.join(target, 'bin', 'conda-unpack');
    const py = ['python3', 'python'].map((n) => path.join(target, 'bin', n)).find((p) => existsSync(p));
    if (existsSync(unpack) && py) await run(py, [unpack]);
    await writeFile(marker, `${archive}\n`);
  } catch (err) {
    await rm(target, { recursive: true, force: true });
    throw failed(err);
  }
  return target;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} exited with ${signal ?? code}: ${stderr.trim()}`));
    });
  });
}
