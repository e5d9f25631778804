/**
 * Turns a model folder into a servable ModelVersion: picks the backend, runs the config pipeline
 * (read → auto-complete → normalise → validate → freeze), loads the model, creates one instance per
 * instance_group entry × count, and reads label files. Implements the repository's VersionLoader.
 * Ensembles (`platform: "ensemble"`) have no backend: their versions come from core/ensemble.
 *
 * What a config may make the server do is bounded here: the instances it asks for are checked against
 * the server's instance budget (instance-budget.ts) before any starts, every config value that becomes a
 * path stays inside the model folder (model-paths.ts), and load errors name paths relative to the model
 * folder, never where the server keeps its files.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Backend, BackendCatalog, InstanceHandle, ServerApi } from '../backend-api/backend.js';
import { realFolder, relativizePaths } from '../common/confine.js';
import { NereidError, invalidArg } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../model-config/index.js';
import type { FrozenModelConfig, ModelConfig } from '../model-config/model-config.js';
import { isEnsembleConfig, loadEnsembleVersion, type VersionLookup } from './ensemble/index.js';
import type { ModelLocation, VersionLoader, VersionLocation } from './repository/contract.js';
import type { ServableVersion } from './model/servable.js';
import type { ModelRateLimit, RateLimiter } from './scheduling/rate-limiter.js';
import type { ReadinessPollOptions } from './model-health.js';
import type { ResponseCache } from './cache/index.js';
import type { StatsRegistry } from './stats/registry.js';
import { InstanceBudget, instancesPerVersion, type InstanceLease } from './model/instance-budget.js';
import { ModelFolder } from './model/model-paths.js';
import { MeasureLock, VersionMemory, residentBytesOf } from './model/memory.js';
import { ModelVersion } from './model/model-version.js';
import { warmUpInstances, warmupFilePath } from './model/warmup.js';

export interface LoaderOptions {
  readonly backends: readonly Backend[];
  /**
   * Where a backend name no built-in backend has is looked up: Python-based backends
   * (`<backend-directory>/<name>/model.py`). Absent: only the built-in backends serve.
   */
  readonly backendCatalog?: BackendCatalog;
  readonly disableAutoComplete: boolean;
  /** backend name → key → value, from --backend-config (the `default` entry applies to every backend). */
  readonly backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>;
  readonly log: Logger;
  /** Where loaded versions report their statistics for the metrics endpoint (optional). */
  readonly statsRegistry?: StatsRegistry;
  /** Where ensembles find their member versions (the repository manager); needed to load ensembles. */
  readonly ensembleMembers?: VersionLookup;
  /** The server's rate limiter, shared by every model (absent when --rate-limit=off). */
  readonly rateLimiter?: RateLimiter;
  /** Handed to backends so their models can call other models (Python BLS). */
  readonly serverApi?: ServerApi;
  /** How loaded models' own readiness is polled (ModelHandle.isReady); default every 5 s. */
  readonly readinessPoll?: ReadinessPollOptions;
  /**
   * `--strict-gpu-kind`: refuse a model with a KIND_GPU instance group, as Triton does on a machine without
   * GPUs. Default: such groups run on the CPU (their config shows KIND_CPU) and each load says so.
   */
  readonly strictGpuKind?: boolean;
  /** `--strict-model-outputs`: models' undeclared or missing outputs fail requests (ModelLoadContext). */
  readonly strictModelOutputs?: boolean;
  /** The server's response cache (--cache-config); models and ensembles that enable it use it. */
  readonly responseCache?: ResponseCache;
  /** Instances the server may run (--max-instances and friends); default limits when omitted. */
  readonly instanceBudget?: InstanceBudget;
  /**
   * How long an unloading version waits for its accepted requests before it fails the rest and aborts
   * its instances (--model-unload-timeout-secs, in ms); 0 or omitted = wait as long as they take.
   */
  readonly unloadTimeoutMs?: number;
  /** Measure each loaded version's memory (on-demand mode with a budget; memory.ts). */
  readonly measureMemory?: boolean;
}

const MAX_LABEL_FILE_BYTES = 64 * 1024 * 1024;

/**
 * Triton's platforms whose backend is not built in here, and the backend each belongs to: the model is
 * served by that backend when the catalog has it (Python-based backends: pytorch, tensorflow).
 */
const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
  tensorflow_savedmodel: 'tensorflow',
  tensorflow_graphdef: 'tensorflow',
  tensorrt_plan: 'tensorrt',
};

/**
 * Triton's model files of backends that are not built in, in the order Triton's autofill probes them, and
 * what a config naming neither backend nor platform gets when its latest version holds one.
 */
const TRITON_MODEL_FILES: readonly { file: string; platform?: string; backend?: string }[] = [
  { file: 'model.savedmodel', platform: 'tensorflow_savedmodel' },
  { file: 'model.graphdef', platform: 'tensorflow_graphdef' },
  { file: 'model.plan', platform: 'tensorrt_plan' },
  { file: 'model.xml', backend: 'openvino' },
  { file: 'model.pt', platform: 'pytorch_libtorch' },
  { file: 'model.pt2', platform: 'torch_aoti' },
];

/** Formats no backend of Nereid can run, and what to do with such a model instead. */
const UNSERVABLE: Readonly<Record<string, string>> = {
  tensorrt:
    'TensorRT plans are compiled for one GPU model and TensorRT version and need NVIDIA GPUs: export the ' +
    'original model to ONNX (or serve it with the pytorch/tensorflow backends) instead',
  dali: 'DALI pipelines need NVIDIA DALI: move the preprocessing into a python or javascript model',
};

/**
 * The help appended to Triton's "unable to find backend" / "unexpected platform type" text (kept first, so
 * log parsers written for Triton still match): what this server can serve instead, and the page on moving
 * a Triton model over (TensorRT, DALI... export to ONNX).
 */
function servable(backends: readonly Backend[], more: readonly string[], asked: string | undefined): string {
  const names = [...new Set([...backends.map((b) => b.name), ...more])];
  const mapped = Object.keys(PLATFORM_BACKENDS).filter((p) => names.includes(PLATFORM_BACKENDS[p]));
  const platforms = [...backends.flatMap((b) => b.platforms), ...mapped, 'ensemble'];
  const hint = asked !== undefined ? UNSERVABLE[asked] : undefined;
  return (
    `; Nereid serves the backends ${names.join(', ')} and the platforms ${platforms.join(', ')} ` +
    `(docs/from-triton.md: what Nereid serves, and converting other models to ONNX; docs/backends.md: ` +
    `Python-based backends in --backend-directory)${hint ? `; ${hint}` : ''}`
  );
}

export class ModelLoader implements VersionLoader<ServableVersion> {
  readonly instanceBudget: InstanceBudget;
  private readonly measureLock = new MeasureLock();

  constructor(private readonly options: LoaderOptions) {
    this.instanceBudget = options.instanceBudget ?? new InstanceBudget();
  }

  private backendSettings(name: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of this.options.backendConfig.get('default') ?? []) out[k] = v;
    for (const [k, v] of this.options.backendConfig.get(name) ?? []) out[k] = v;
    return out;
  }

  /** A built-in backend of that name, else one the catalog finds (a Python-based backend). */
  private async findBackend(name: string): Promise<Backend | undefined> {
    return (
      this.options.backends.find((x) => x.name === name) ?? (await this.options.backendCatalog?.find(name))
    );
  }

  private async servable(asked: string | undefined): Promise<string> {
    const more = (await this.options.backendCatalog?.names().catch(() => [])) ?? [];
    return servable(this.options.backends, more, asked);
  }

  /** The host backend's settings for a backend that runs on another (Backend.hostBackend). */
  private hostSettings(backend: Backend): Record<string, string> | undefined {
    return backend.hostBackend !== undefined ? this.backendSettings(backend.hostBackend) : undefined;
  }

  /**
   * A config naming no backend, platform or file, whose latest version holds no built-in backend's file but
   * one of Triton's other model files (model.pt, model.savedmodel, ...): that file's platform (or backend)
   * and file name, so the backend of that name serves it when there is one (a Python-based backend).
   */
  private async probeTritonFiles(
    config: ModelConfig,
    location: ModelLocation,
    versions: readonly number[],
    folder: ModelFolder,
  ): Promise<ModelConfig> {
    if (config.platform || config.default_model_filename || versions.length === 0) return config;
    const versionDir = path.join(location.modelDir, String(Math.max(...versions)));
    if (config.backend === 'tensorflow') {
      // As Triton's autofill: `backend: "tensorflow"` alone takes the platform of the file that is there
      // (SavedModel first), and a SavedModel when neither is.
      const useGraphdef =
        !(await folder.has(path.join(versionDir, 'model.savedmodel'))) &&
        (await folder.has(path.join(versionDir, 'model.graphdef')));
      return useGraphdef
        ? { ...config, platform: 'tensorflow_graphdef', default_model_filename: 'model.graphdef' }
        : { ...config, platform: 'tensorflow_savedmodel', default_model_filename: 'model.savedmodel' };
    }
    if (config.backend) return config;
    for (const b of this.options.backends) {
      if (b.requiresModelFile === false) continue;
      if (await folder.has(path.join(versionDir, b.defaultModelFilename))) return config;
    }
    for (const rule of TRITON_MODEL_FILES) {
      if (!(await folder.has(path.join(versionDir, rule.file)))) continue;
      return {
        ...config,
        default_model_filename: rule.file,
        ...(rule.platform !== undefined && { platform: rule.platform }),
        ...(rule.backend !== undefined && { backend: rule.backend }),
      };
    }
    return config;
  }

  /** Finds the backend a config asks for, or (no backend/platform given) the one whose model file exists. */
  private async resolveBackend(
    config: ModelConfig,
    location: ModelLocation,
    versions: readonly number[],
    folder: ModelFolder,
  ): Promise<Backend> {
    const { backends } = this.options;
    if (config.backend) {
      const b = await this.findBackend(config.backend);
      if (!b)
        throw invalidArg(
          `unable to find backend '${config.backend}' for model '${location.modelName}'${await this.servable(config.backend)}`,
        );
      return b;
    }
    if (config.platform) {
      const mapped = PLATFORM_BACKENDS[config.platform];
      const b =
        backends.find((x) => x.platforms.includes(config.platform)) ??
        (mapped !== undefined ? await this.findBackend(mapped) : undefined);
      if (!b)
        throw invalidArg(
          `unexpected platform type '${config.platform}' for ${location.modelName}${await this.servable(mapped)}`,
        );
      return b;
    }
    const latest = versions.length > 0 ? Math.max(...versions) : undefined;
    if (latest !== undefined) {
      for (const b of backends) {
        if (b.requiresModelFile === false) continue; // its 'file' would be the version folder itself
        const file = config.default_model_filename || b.defaultModelFilename;
        if (await folder.has(path.join(location.modelDir, String(latest), file))) return b;
      }
    }
    throw invalidArg(
      `unable to determine the backend for model '${location.modelName}': set 'backend' or 'platform' in its config`,
    );
  }

  async completeConfig(
    raw: ModelConfig | undefined,
    location: ModelLocation,
    availableVersions: readonly number[],
  ): Promise<FrozenModelConfig> {
    return this.relativeErrors(location, () => this.doCompleteConfig(raw, location, availableVersions));
  }

  private async doCompleteConfig(
    raw: ModelConfig | undefined,
    location: ModelLocation,
    availableVersions: readonly number[],
  ): Promise<FrozenModelConfig> {
    let config: ModelConfig = raw ?? {
      ...parseModelConfigText('', location.modelName),
      name: location.modelName,
    };
    if (!config.name) config = { ...config, name: location.modelName };
    if (isEnsembleConfig(config)) {
      // No backend and no auto-complete: an ensemble's config is all there is.
      config = normalizeModelConfig(config);
      validateModelConfig(config);
      return freezeModelConfig(config);
    }
    const folder = await ModelFolder.of(location);
    // Refused as text before anything is probed: nothing below may open a path outside the folder.
    if (config.default_model_filename) {
      await folder.resolveValue(
        path.join(location.modelDir, '1'),
        config.default_model_filename,
        `default_model_filename '${config.default_model_filename}'`,
      );
    }
    config = await this.probeTritonFiles(config, location, availableVersions, folder);
    const backend = await this.resolveBackend(config, location, availableVersions, folder);
    if (!this.options.disableAutoComplete && backend.autoCompleteConfig && availableVersions.length > 0) {
      const latest = Math.max(...availableVersions);
      const versionDir = path.join(location.modelDir, String(latest));
      config = await backend.autoCompleteConfig({
        config,
        modelDir: location.modelDir,
        versionDir,
        modelPath: await this.modelPath(folder, versionDir, config, backend, false),
        files: folder,
        backendConfig: this.backendSettings(backend.name),
        hostBackendConfig: this.hostSettings(backend),
        log: this.options.log,
      });
    }
    const name = config.name;
    config = normalizeModelConfig(config, {
      backend: backend.name,
      defaultPlatform: backend.defaultPlatform,
      defaultModelFilename: backend.defaultModelFilename,
      gpuGroups: this.options.strictGpuKind === true ? 'keep' : 'cpu',
      onGpuGroupsMoved: (groups) =>
        this.options.log.warn(
          `model '${name}': instance group${groups.length > 1 ? 's' : ''} ${groups.join(', ')} ` +
            `${groups.length > 1 ? 'have' : 'has'} kind KIND_GPU but no GPUs are available; running on the ` +
            'CPU instead (the config shows KIND_CPU). Triton refuses such a model here: ' +
            '--strict-gpu-kind=true does too',
        ),
    });
    validateModelConfig(config);
    return freezeModelConfig(config);
  }

  /**
   * Checks a whole load against the instance limits before any version loads: `versions` versions of
   * `config`. Throws INVALID_ARG; starts nothing.
   */
  admit(config: FrozenModelConfig, location: ModelLocation, versions: number): Promise<void> {
    return Promise.resolve().then(async () => {
      if (isEnsembleConfig(config)) return;
      const backend = await this.findBackend(config.backend);
      this.instanceBudget.admit(
        location.modelName,
        instancesPerVersion(config.instance_group),
        versions,
        backend?.processPerInstance === true,
      );
    });
  }

  async loadVersion(
    config: FrozenModelConfig,
    location: VersionLocation,
    signal?: AbortSignal,
  ): Promise<ServableVersion> {
    return this.relativeErrors(location, () => this.doLoadVersion(config, location, signal));
  }

  /** `<versionDir>/<default_model_filename>`, checked to stay inside the model folder. */
  private modelPath(
    folder: ModelFolder,
    versionDir: string,
    config: ModelConfig | FrozenModelConfig,
    backend: Backend,
    mustExist: boolean,
  ): Promise<string> {
    const file = config.default_model_filename || backend.defaultModelFilename;
    return folder.resolveValue(
      versionDir,
      file,
      config.default_model_filename ? `default_model_filename '${file}'` : `model file '${file}'`,
      { mustExist },
    );
  }

  private async doLoadVersion(
    config: FrozenModelConfig,
    location: VersionLocation,
    signal: AbortSignal | undefined,
  ): Promise<ServableVersion> {
    const loadStart = process.hrtime.bigint();
    const folder = await ModelFolder.of(location);
    if (isEnsembleConfig(config)) return this.loadEnsemble(config, location, loadStart, folder);
    const backend = await this.resolveBackend(config as ModelConfig, location, [location.version], folder);
    const modelPath = await this.modelPath(
      folder,
      location.versionDir,
      config,
      backend,
      backend.requiresModelFile !== false,
    );
    const labels = await this.readLabels(config, folder);
    await this.checkWarmupFiles(config, folder);
    const load = (
      memory?: VersionMemory,
      onInstances?: (instances: readonly InstanceHandle[]) => void,
    ): Promise<ModelVersion> =>
      this.loadOnBackend(
        config,
        location,
        signal,
        backend,
        folder,
        modelPath,
        labels,
        loadStart,
        memory,
        onInstances,
      );
    if (this.options.measureMemory !== true) return load();
    // Measured for on-demand mode's budget (memory.ts): a model in this process by the growth of its RSS
    // across the load, one such load at a time; a model in child processes by their RSS.
    if (backend.processPerInstance === true) {
      let instancesOf = (): readonly (number | undefined)[] => [];
      const memory = new VersionMemory(0, () => instancesOf());
      return load(memory, (i) => {
        instancesOf = () => i.map((x) => x.pid);
      });
    }
    return this.measureLock.run(async () => {
      const memory = new VersionMemory(0, () => []);
      const before = residentBytesOf('self') ?? 0;
      const v = await load(memory);
      memory.inProcessBytes = Math.max(0, (residentBytesOf('self') ?? 0) - before);
      return v;
    });
  }

  private async loadOnBackend(
    config: FrozenModelConfig,
    location: VersionLocation,
    signal: AbortSignal | undefined,
    backend: Backend,
    folder: ModelFolder,
    modelPath: string,
    labels: ReadonlyMap<string, readonly string[]>,
    loadStart: bigint,
    memory?: VersionMemory,
    onInstances?: (instances: readonly InstanceHandle[]) => void,
  ): Promise<ModelVersion> {
    // Reserved before the backend sees the model: a refused count starts nothing at all.
    const lease: InstanceLease = this.instanceBudget.reserve(
      location.modelName,
      instancesPerVersion(config.instance_group),
      backend.processPerInstance === true,
    );
    let handle;
    try {
      handle = await backend.loadModel({
        config,
        modelName: location.modelName,
        version: location.version,
        modelDir: location.modelDir,
        versionDir: location.versionDir,
        modelPath,
        files: folder,
        backendConfig: this.backendSettings(backend.name),
        hostBackendConfig: this.hostSettings(backend),
        log: this.options.log,
        serverApi: this.options.serverApi,
        strictModelOutputs: this.options.strictModelOutputs === true,
      });
    } catch (err) {
      lease.release();
      throw err;
    }
    const instances: InstanceHandle[] = [];
    let rateLimit: ModelRateLimit | undefined;
    try {
      const pending: Promise<InstanceHandle>[] = [];
      for (const group of config.instance_group) {
        if (group.passive) continue;
        for (let i = 0; i < group.count; i++) {
          pending.push(
            handle.createInstance({
              name: `${group.name}_${i}`,
              groupName: group.name,
              index: i,
              kind:
                group.kind === 'KIND_GPU'
                  ? 'KIND_GPU'
                  : group.kind === 'KIND_MODEL'
                    ? 'KIND_MODEL'
                    : 'KIND_CPU',
              deviceId: 0,
            }),
          );
        }
      }
      const settled = await Promise.allSettled(pending);
      for (const s of settled) if (s.status === 'fulfilled') instances.push(s.value);
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw NereidError.from(failed.reason);
      if (instances.length === 0)
        throw invalidArg(`model '${location.modelName}' has no instances to serve it`);
      // model_warmup runs on every instance before the version can turn READY (warmup.ts).
      await warmUpInstances(config, instances, { folder, log: this.options.log, signal });
      rateLimit = this.options.rateLimiter?.registerModel(config, instances.length);
      onInstances?.(instances);
      // Inside the try: a scheduler that rejects its config must not leave instances (worker threads) behind.
      return new ModelVersion({
        config,
        version: location.version,
        handle,
        instances,
        labels,
        log: this.options.log,
        strictModelOutputs: this.options.strictModelOutputs === true,
        statsRegistry: this.options.statsRegistry,
        loadDurationNs: Number(process.hrtime.bigint() - loadStart),
        rateLimit,
        readinessPoll: this.options.readinessPoll,
        responseCache: this.options.responseCache,
        unloadTimeoutMs: this.options.unloadTimeoutMs,
        onUnloaded: () => lease.release(),
        memory,
      });
    } catch (err) {
      await Promise.allSettled(instances.map((i) => i.close()));
      await handle.unload().catch(() => undefined);
      lease.release();
      throw err;
    }
  }

  /**
   * Runs a load step and rewrites its error so it names paths relative to the model folder (or the
   * repository), never the absolute paths where the server keeps the files: clients read these errors.
   */
  private async relativeErrors<T>(location: ModelLocation, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      const e = NereidError.from(err);
      const paths = [
        location.modelDir,
        await realFolder(location.modelDir),
        location.repositoryPath,
        await realFolder(location.repositoryPath),
      ];
      const message = relativizePaths(e.message, paths);
      if (message === e.message) throw e;
      throw new NereidError(e.code, message, { cause: e });
    }
  }

  private async loadEnsemble(
    config: FrozenModelConfig,
    location: VersionLocation,
    loadStart: bigint,
    folder: ModelFolder,
  ): Promise<ServableVersion> {
    const members = this.options.ensembleMembers;
    if (!members) {
      throw invalidArg(
        `unable to load ensemble '${location.modelName}': no model repository to find its steps in`,
      );
    }
    return loadEnsembleVersion(config, {
      version: location.version,
      members,
      labels: await this.readLabels(config, folder),
      statsRegistry: this.options.statsRegistry,
      loadStart,
      responseCache: this.options.responseCache,
      log: this.options.log,
    });
  }

  private async readLabels(
    config: FrozenModelConfig,
    folder: ModelFolder,
  ): Promise<ReadonlyMap<string, readonly string[]>> {
    const labels = new Map<string, readonly string[]>();
    for (const out of config.output) {
      if (!out.label_filename) continue;
      const what = `label_filename '${out.label_filename}' of output '${out.name}'`;
      // Triton joins label files to the model folder.
      const file = await folder.resolveValue(folder.location.modelDir, out.label_filename, what, {
        mustExist: true,
      });
      const info = await stat(file);
      if (!info.isFile()) throw invalidArg(`${what} of model '${folder.location.modelName}' is not a file`);
      if (info.size > MAX_LABEL_FILE_BYTES)
        throw invalidArg(`label file '${out.label_filename}' is too large`);
      const text = await readFile(file, 'utf8');
      const lines = text.split(/\r?\n/);
      if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
      labels.set(out.name, lines);
    }
    return labels;
  }

  /**
   * Warmup samples read from files (`input_data_file`, in the model's `warmup` folder as in Triton) must
   * stay inside the model folder and exist, as Triton's warmup would fail without them: checked here, before
   * any instance starts, and again when warmup.ts reads them.
   */
  private async checkWarmupFiles(config: FrozenModelConfig, folder: ModelFolder): Promise<void> {
    for (const warmup of config.model_warmup) {
      for (const [input, spec] of Object.entries(warmup.inputs ?? {})) {
        const file = spec.input_data_file;
        if (!file) continue;
        await warmupFilePath(
          folder,
          file,
          `input_data_file '${file}' of warmup '${warmup.name}' input '${input}'`,
        );
      }
    }
  }
}
