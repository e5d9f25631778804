/**
 * The `python` backend: runs unchanged Triton `model.py` files. Each model instance is a stub process (one
 * Python interpreter, so instances run in parallel despite the GIL) named like the instance
 * (`<model>_<group>_<index>`); auto-complete runs the model's `auto_complete_config` in a short-lived stub.
 * The interpreter comes from EXECUTION_ENV_PATH, `python-executable`, the checkout's .venv or `python3`
 * (interpreter.ts); docs/python-backend.md describes the whole design.
 */
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import type {
  AutoCompleteContext,
  Backend,
  CustomMetricFamily,
  InstanceHandle,
  InstanceSpec,
  ModelHandle,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { internal, invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { modelConfigToJson, parseModelConfigJson } from '../../model-config/index.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';
import { ModelErrorLog } from '../model-errors.js';
import { OutputCheck } from '../output-check.js';
import { PythonInstance, type InitTemplate } from './instance.js';
import { chooseInterpreter, type Interpreter } from './interpreter.js';
import { mergeStubMetrics } from './metrics.js';
import {
  pythonBackendOptions,
  pythonModelSettings,
  type PythonBackendOptions,
  type PythonModelSettings,
} from './options.js';
import { MessageType } from './protocol.js';
import type { ShmFileOptions } from './shm.js';
import { StubProcess } from './stub-process.js';

/**
 * How long a scrape waits for a stub's metrics; a busy one is represented by its last answer (the core
 * bounds a whole model's answer by its own, longer timeout).
 */
const METRICS_QUERY_MS = 500;

export function executionEnvPath(config: ModelConfig | FrozenModelConfig): string | undefined {
  const v = config.parameters?.EXECUTION_ENV_PATH?.string_value;
  return v ? v : undefined;
}

/**
 * Whether a model.py may define auto_complete_config: it names it, or its TritonPythonModel has base
 * classes that could. When it cannot, the auto-complete stub (an interpreter start and a numpy import) is
 * skipped: the config would come back unchanged.
 */
export function mayAutoComplete(source: string): boolean {
  if (source.includes('auto_complete_config')) return true;
  const m = /^class\s+TritonPythonModel\s*(\(([^)]*)\))?\s*:/m.exec(source);
  if (!m) return true;
  const bases = (m[2] ?? '').trim();
  return bases !== '' && bases !== 'object';
}

function shmOptions(options: PythonBackendOptions): ShmFileOptions | undefined {
  if (options.shmDisabled) return undefined;
  return {
    prefix: options.shmRegionPrefix,
    initialSize: options.shmDefaultByteSize,
    growth: options.shmGrowthByteSize,
  };
}

/**
 * What a python model runs: its own model.py, or (a Python-based backend) the backend's script, imported
 * as a module of the backend's package, with the backend's settings added to initialize(args).
 */
export interface PythonScript {
  readonly path: string;
  readonly package?: { readonly name: string; readonly dir: string };
  readonly extraArgs?: Readonly<Record<string, string>>;
}

/** Runs the script's auto_complete_config in a short-lived stub; the config comes back unchanged when it has none. */
export async function autoCompleteWithStub(
  ctx: AutoCompleteContext,
  options: PythonBackendOptions,
  interpreter: Interpreter,
  script: PythonScript,
): Promise<ModelConfig> {
  const source = await readFile(script.path, 'utf8').catch(() => undefined);
  if (source === undefined || !mayAutoComplete(source)) return ctx.config;
  const name = ctx.config.name;
  const stub = StubProcess.launch({ name, interpreter, shm: undefined, log: ctx.log });
  try {
    const header = {
      name,
      model_path: script.path,
      ...(script.package && {
        backend_package: script.package,
        // A backend's auto_complete_config reads the model's files (openvino): get_model_dir() is the
        // version folder being loaded, as in initialize.
        args: { model_repository: ctx.modelDir, model_version: path.basename(ctx.versionDir) },
      }),
      config: JSON.stringify(modelConfigToJson(ctx.config)),
    };
    const h = await stub.call(
      MessageType.AutoComplete,
      header,
      MessageType.AutoCompleteDone,
      options.stubTimeoutMs,
      'auto_complete_config()',
    );
    if (h.error !== undefined) throw internal(`auto-complete of model '${name}' failed: ${h.error}`);
    if (h.config === undefined) throw internal(`auto-complete of model '${name}' returned no config`);
    try {
      return parseModelConfigJson(h.config, `auto_complete_config of model '${name}'`);
    } catch (err) {
      throw invalidArg(
        `auto_complete_config of model '${name}' produced an invalid config: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  } finally {
    stub.kill();
    await stub.exited;
  }
}

/** A model whose instances are stubs running the script with that interpreter. */
export async function loadWithStubs(
  ctx: ModelLoadContext,
  options: PythonBackendOptions,
  interpreter: Interpreter,
  script: PythonScript,
): Promise<ModelHandle> {
  const settings = pythonModelSettings(ctx.config, options);
  ctx.log.verbose(
    `python model '${ctx.modelName}' version ${ctx.version}: ${script.path} with ${interpreter.executable} (${interpreter.origin}), ` +
      `execution timeout ${settings.executionTimeoutMs} ms, stub memory limit ${settings.stubMemoryLimitBytes} bytes`,
  );
  // Tracebacks may name the real path of the model's files.
  const realDir = await realpath(ctx.modelDir).catch(() => ctx.modelDir);
  return new PythonModel(ctx, options, settings, interpreter, script, [ctx.modelDir, realDir]);
}

export class PythonBackend implements Backend {
  readonly name = 'python';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = 'model.py';
  /** One stub process per instance: the server's process limits apply. */
  readonly processPerInstance = true;

  async autoCompleteConfig(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const source = await readFile(ctx.modelPath, 'utf8').catch(() => undefined);
    if (source === undefined || !mayAutoComplete(source)) return ctx.config;
    const options = pythonBackendOptions(ctx.backendConfig, (m) => ctx.log.warn(m));
    const interpreter = await chooseInterpreter({
      modelName: ctx.config.name,
      modelDir: ctx.modelDir,
      executionEnvPath: executionEnvPath(ctx.config),
      pythonExecutable: options.pythonExecutable,
      envCacheDir: options.envCacheDir,
      allowedPaths: options.executionEnvAllowedPaths,
      files: ctx.files,
      log: ctx.log,
    });
    return autoCompleteWithStub(ctx, options, interpreter, { path: ctx.modelPath });
  }

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    const options = pythonBackendOptions(ctx.backendConfig, (m) => ctx.log.warn(m));
    if (!ctx.modelPath.endsWith('.py')) {
      throw invalidArg(`Model name must end with '.py'. Model name is "${path.basename(ctx.modelPath)}".`);
    }
    const interpreter = await chooseInterpreter({
      modelName: ctx.modelName,
      modelDir: ctx.modelDir,
      executionEnvPath: executionEnvPath(ctx.config),
      pythonExecutable: options.pythonExecutable,
      envCacheDir: options.envCacheDir,
      allowedPaths: options.executionEnvAllowedPaths,
      files: ctx.files,
      log: ctx.log,
    });
    return loadWithStubs(ctx, options, interpreter, { path: ctx.modelPath });
  }
}

class PythonModel implements ModelHandle {
  private readonly init: InitTemplate;
  private readonly instances = new Set<PythonInstance>();
  /** One failure log for every instance of this version: an error they all hit is logged once. */
  private readonly errors: ModelErrorLog;
  private readonly outputCheck: OutputCheck;

  constructor(
    private readonly ctx: ModelLoadContext,
    private readonly options: PythonBackendOptions,
    private readonly settings: PythonModelSettings,
    private readonly interpreter: Interpreter,
    script: PythonScript,
    private readonly modelDirs: readonly string[],
  ) {
    this.errors = new ModelErrorLog({ log: ctx.log });
    this.outputCheck = OutputCheck.forModel(ctx);
    this.init = {
      model_path: script.path,
      ...(script.package && { backend_package: script.package }),
      ...(script.extraArgs && { extra_args: script.extraArgs }),
      model_config: JSON.stringify(modelConfigToJson(ctx.config)),
      model_repository: ctx.modelDir,
      model_version: String(ctx.version),
      shm_initial: options.shmDefaultByteSize,
      shm_growth: options.shmGrowthByteSize,
    };
  }

  private get log(): Logger {
    return this.ctx.log;
  }

  async createInstance(spec: InstanceSpec): Promise<InstanceHandle> {
    if (spec.kind === 'KIND_GPU') {
      this.log.warn(`instance '${spec.name}' asks for a GPU; its Python stub runs without one`);
    }
    const instance = await PythonInstance.create({
      spec,
      modelName: this.ctx.modelName,
      launch: {
        name: spec.name,
        interpreter: this.interpreter,
        shm: shmOptions(this.options),
        log: this.log,
      },
      init: this.init,
      decoupled: this.ctx.config.model_transaction_policy?.decoupled === true,
      timeoutMs: this.options.stubTimeoutMs,
      executionTimeoutMs: this.settings.executionTimeoutMs,
      pipelineDepth: this.options.pipelineDepth,
      memoryLimitBytes: this.settings.stubMemoryLimitBytes,
      shmThreshold: this.options.shmThreshold,
      log: this.log,
      // BLS calls name this model as their caller themselves (bls.ts blsRequest: one literal, no spread).
      serverInfer: this.ctx.serverApi ? (request) => this.ctx.serverApi!.infer(request) : undefined,
      serverApi: this.ctx.serverApi,
      failures: { version: this.ctx.version, modelDirs: this.modelDirs, errors: this.errors, log: this.log },
      outputCheck: this.outputCheck,
    });
    this.instances.add(instance);
    return instance;
  }

  /** pb_utils.MetricFamily / Metric series of every instance's stub, merged (metrics.ts says how). */
  async customMetrics(): Promise<readonly CustomMetricFamily[]> {
    for (const i of this.instances) if (i.isClosed) this.instances.delete(i);
    const lists = await Promise.all(
      [...this.instances].map((i) => i.customMetrics(METRICS_QUERY_MS).catch(() => [])),
    );
    return mergeStubMetrics(lists);
  }

  unload(): Promise<void> {
    // Instances own their stubs and were closed before this; nothing is shared between them.
    this.instances.clear();
    this.errors.flush();
    return Promise.resolve();
  }
}
