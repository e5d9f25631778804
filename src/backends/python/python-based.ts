/**
 * Triton's Python-based backends: a model whose `backend: "NAME"` no built-in backend has is served by
 * `NAME/model.py` (a TritonPythonModel shared by every model of that backend) through the python
 * backend's stubs, shared memory, statistics and fault handling. The folder is looked for in each
 * `--backend-directory` in order, then in this package's own `python/backends/` (Nereid's backends: fil,
 * pytorch, ...). The config's `runtime` names another `.py` file of the folder; a shared library
 * (`libtriton_NAME.so`) is refused, Nereid runs no native backends.
 *
 * The folder is imported as the package `nereid_backend_NAME` (so a backend named like the framework it
 * wraps does not shadow it, and its files import each other relatively); initialize(args) gets Triton's
 * keys plus `backend_config`, the JSON of `--backend-config=NAME,key=value` settings.
 *
 * The interpreter, in this order: the model's EXECUTION_ENV_PATH (the python backend's rules),
 * `--backend-config=NAME,python-executable=PATH`, the backend's own venv when its folder has a
 * requirements.txt (backend-venv.ts; missing → the load fails naming `npx nereid backends install NAME`),
 * else the python backend's choice (its python-executable, the checkout's .venv, python3).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type {
  AutoCompleteContext,
  Backend,
  BackendCatalog,
  ModelHandle,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { invalidArg, unavailable } from '../../common/errors.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';
import { autoCompleteWithStub, executionEnvPath, loadWithStubs, type PythonScript } from './backend.js';
import {
  BUNDLED_BACKENDS_DIR,
  REQUIREMENTS_FILE,
  installCommand,
  isInstalled,
  venvForBackend,
} from './backend-venv.js';
import { chooseInterpreter, type Interpreter } from './interpreter.js';
import { pythonBackendOptions, type PythonBackendOptions } from './options.js';

/** A backend name that can be a folder name: no separators, no dot-only names, no NUL. */
const BACKEND_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DEFAULT_RUNTIME = 'model.py';

/** The Python package a backend's folder is imported as. */
export function backendPackageName(name: string): string {
  return `nereid_backend_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

export interface PythonBasedOptions {
  /** `--backend-directory` folders, searched in order before the bundled backends. */
  readonly backendDirectories: readonly string[];
  /** Where the backends' venvs live (backendVenvRoot). */
  readonly venvRoot: string;
  /** Nereid's own backends (default: python/backends in this package; tests may point elsewhere). */
  readonly bundledDirectory?: string;
}

/** A backend folder found for a name. */
export interface BackendFolder {
  readonly name: string;
  readonly dir: string;
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isDirectory() === true;
}

async function isFile(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isFile() === true;
}

/** The folders searched, in order. */
export function searchedDirectories(options: PythonBasedOptions): readonly string[] {
  return [...options.backendDirectories, options.bundledDirectory ?? BUNDLED_BACKENDS_DIR];
}

/** `<dir>/<name>/` of the first searched folder where it holds a model.py (or another .py file). */
export async function findBackendFolder(
  name: string,
  options: PythonBasedOptions,
): Promise<BackendFolder | undefined> {
  if (!BACKEND_NAME.test(name) || name === 'python') return undefined;
  for (const root of searchedDirectories(options)) {
    const dir = path.join(path.resolve(root), name);
    if (!(await isDirectory(dir))) continue;
    if (await isFile(path.join(dir, DEFAULT_RUNTIME))) return { name, dir };
    const files = await readdir(dir).catch(() => [] as string[]);
    if (files.some((f) => f.endsWith('.py'))) return { name, dir };
  }
  return undefined;
}

/** The script a model's `runtime` field names inside the backend's folder (default model.py). */
export function runtimeScript(folder: BackendFolder, runtime: string, modelName: string): string {
  const file = runtime.trim() === '' ? DEFAULT_RUNTIME : runtime.trim();
  if (!file.endsWith('.py')) {
    throw invalidArg(
      `runtime '${runtime}' of model '${modelName}' names a native backend library; Nereid runs ` +
        `Python-based backends only: leave runtime empty or name a .py file in the backend's folder`,
    );
  }
  if (file.includes('/') || file.includes('\\') || file.includes('\0') || file.startsWith('.')) {
    throw invalidArg(
      `runtime '${runtime}' of model '${modelName}' must be a file name in the backend's folder`,
    );
  }
  return path.join(folder.dir, file);
}

export interface InterpreterRule {
  readonly backend: BackendFolder;
  readonly modelName: string;
  readonly modelDir: string;
  readonly config: ModelConfig | FrozenModelConfig;
  /** `--backend-config=NAME,...` (with `default`). */
  readonly backendConfig: Readonly<Record<string, string>>;
  /** The python backend's options (`--backend-config=python,...`). */
  readonly hostOptions: PythonBackendOptions;
  readonly venvRoot: string;
  readonly files: AutoCompleteContext['files'];
  readonly log: AutoCompleteContext['log'];
}

/** Which Python runs a Python-based backend's stubs (the order is in this file's comment). */
export async function chooseBackendInterpreter(rule: InterpreterRule): Promise<Interpreter> {
  const { backend, hostOptions } = rule;
  const base = {
    modelName: rule.modelName,
    modelDir: rule.modelDir,
    envCacheDir: hostOptions.envCacheDir,
    allowedPaths: hostOptions.executionEnvAllowedPaths,
    files: rule.files,
    log: rule.log,
  };
  const envPath = executionEnvPath(rule.config);
  if (envPath) return chooseInterpreter({ ...base, executionEnvPath: envPath, pythonExecutable: undefined });
  const own = rule.backendConfig['python-executable']?.trim();
  if (own) {
    return { executable: own, env: {}, origin: `--backend-config=${backend.name},python-executable` };
  }
  const venv = await venvForBackend(rule.venvRoot, backend.name, backend.dir);
  if (venv) {
    if (isInstalled(venv)) {
      return { executable: venv.python, env: {}, origin: `the ${backend.name} backend's venv` };
    }
    rule.log.warn(
      `backend '${backend.name}': no finished venv at ${venv.dir} for ${path.join(backend.dir, REQUIREMENTS_FILE)}`,
    );
    throw unavailable(
      `backend '${backend.name}' of model '${rule.modelName}' is not installed: its Python packages ` +
        `(${REQUIREMENTS_FILE} of the backend) are missing; install them with '${installCommand(backend.name)}' ` +
        `(or name an interpreter that has them: --backend-config=${backend.name},python-executable=<path>)`,
    );
  }
  return chooseInterpreter({
    ...base,
    executionEnvPath: undefined,
    pythonExecutable: hostOptions.pythonExecutable,
  });
}

/** The `backend_config` argument: this backend's own settings, as JSON. */
function backendConfigArg(config: Readonly<Record<string, string>>): string {
  return JSON.stringify(config);
}

/** One Python-based backend, found in a folder. */
export class PythonBasedBackend implements Backend {
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = '';
  /** The model's files are its own business (a backend like vLLM reads none). */
  readonly requiresModelFile = false;
  readonly processPerInstance = true;
  readonly hostBackend = 'python';

  constructor(
    readonly folder: BackendFolder,
    private readonly venvRoot: string,
  ) {}

  get name(): string {
    return this.folder.name;
  }

  private script(
    config: ModelConfig | FrozenModelConfig,
    modelName: string,
    backendConfig: Readonly<Record<string, string>>,
  ): PythonScript {
    return {
      path: runtimeScript(this.folder, config.runtime ?? '', modelName),
      package: { name: backendPackageName(this.folder.name), dir: this.folder.dir },
      extraArgs: { backend_config: backendConfigArg(backendConfig) },
    };
  }

  private hostOptions(ctx: AutoCompleteContext | ModelLoadContext): PythonBackendOptions {
    return pythonBackendOptions(ctx.hostBackendConfig ?? {}, (m) => ctx.log.warn(m));
  }

  async autoCompleteConfig(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const script = this.script(ctx.config, ctx.config.name, ctx.backendConfig);
    const hostOptions = this.hostOptions(ctx);
    const interpreter = await chooseBackendInterpreter({
      backend: this.folder,
      modelName: ctx.config.name,
      modelDir: ctx.modelDir,
      config: ctx.config,
      backendConfig: ctx.backendConfig,
      hostOptions,
      venvRoot: this.venvRoot,
      files: ctx.files,
      log: ctx.log,
    });
    return autoCompleteWithStub(ctx, hostOptions, interpreter, script);
  }

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    const script = this.script(ctx.config, ctx.modelName, ctx.backendConfig);
    const hostOptions = this.hostOptions(ctx);
    const interpreter = await chooseBackendInterpreter({
      backend: this.folder,
      modelName: ctx.modelName,
      modelDir: ctx.modelDir,
      config: ctx.config,
      backendConfig: ctx.backendConfig,
      hostOptions,
      venvRoot: this.venvRoot,
      files: ctx.files,
      log: ctx.log,
    });
    return loadWithStubs(ctx, hostOptions, interpreter, script);
  }
}

/** The Python-based backends of the searched folders, found by name when a model asks for one. */
export class PythonBasedBackends implements BackendCatalog {
  constructor(private readonly options: PythonBasedOptions) {}

  async find(name: string): Promise<Backend | undefined> {
    const folder = await findBackendFolder(name, this.options);
    return folder ? new PythonBasedBackend(folder, this.options.venvRoot) : undefined;
  }

  async names(): Promise<readonly string[]> {
    const out = new Set<string>();
    for (const root of searchedDirectories(this.options)) {
      const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (e.isDirectory() && (await findBackendFolder(e.name, this.options)) !== undefined) out.add(e.name);
      }
    }
    return [...out].sort();
  }
}
