/**
 * The `javascript` backend: runs models written in JavaScript or TypeScript (`model.js`, `model.mjs` or
 * `model.ts` in the version folder; TypeScript needs no build step) with the lifecycle of Triton's Python
 * models. Every instance is a worker thread of its own (instance.ts), so a model that burns CPU never
 * blocks the server and N instances use N cores. docs/javascript-models.md describes the whole design.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type {
  AutoCompleteContext,
  Backend,
  CustomMetricFamily,
  InstanceHandle,
  InstanceSpec,
  ModelHandle,
  ModelFiles,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { fromConfigDataType, type DataType } from '../../common/datatype.js';
import { invalidArg } from '../../common/errors.js';
import { modelConfigToJson, parseModelConfigJson } from '../../model-config/index.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { mergeInstanceMetrics } from '../custom-metrics.js';
import { ModelErrorLog } from '../model-errors.js';
import { OutputCheck } from '../output-check.js';
import { modelFailure, type FailureScope } from './failures.js';
import { JsInstance } from './instance.js';
import { javascriptOptions, type JavascriptOptions } from './options.js';
import type { JsWorkerInit } from './protocol.js';
import { JsWorker } from './worker-client.js';

/** Tried in this order when the config names no default_model_filename (or names the default). */
export const MODEL_FILES: readonly string[] = ['model.js', 'model.mjs', 'model.ts', 'model.mts'];

const isFile = async (p: string): Promise<boolean> =>
  (await stat(p).catch(() => undefined))?.isFile() === true;

/**
 * `<versionDir>/<file>`; for the default `model.js`, also `model.mjs` and `model.ts`. With `files` (the
 * core's path rules), each candidate must stay inside the model folder. Messages name the files, not the
 * server's folders.
 */
export async function resolveModelFile(
  modelPath: string,
  modelName: string,
  files?: ModelFiles,
): Promise<string> {
  const usable = async (p: string): Promise<string | undefined> => {
    const checked = files ? await files.check(p, `model file '${path.basename(p)}'`) : p;
    return (await isFile(checked)) ? checked : undefined;
  };
  const found = await usable(modelPath);
  if (found) return found;
  const dir = path.dirname(modelPath);
  if (path.basename(modelPath) === MODEL_FILES[0]) {
    for (const f of MODEL_FILES.slice(1)) {
      const alt = await usable(path.join(dir, f));
      if (alt) return alt;
    }
    throw invalidArg(
      `failed to load model '${modelName}': none of ${MODEL_FILES.join(', ')} found in its version folder`,
    );
  }
  throw invalidArg(
    `failed to load model '${modelName}': model file '${path.basename(modelPath)}' not found in its version folder`,
  );
}

/** Whether a model module may define autoCompleteConfig (else no worker is started to ask it). */
export const mayAutoComplete = (source: string): boolean => source.includes('autoCompleteConfig');

export class JavascriptBackend implements Backend {
  readonly name = 'javascript';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = MODEL_FILES[0];
  /** The loader must not insist on model.js: loadModel() also finds model.mjs and model.ts. */
  readonly requiresModelFile = false;

  async autoCompleteConfig(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const file = await resolveModelFile(ctx.modelPath, ctx.config.name, ctx.files).catch(() => undefined);
    if (!file) return ctx.config; // loadModel() reports the missing file
    const source = await readFile(file, 'utf8').catch(() => '');
    if (!mayAutoComplete(source)) return ctx.config;
    const options = javascriptOptions(ctx.config, ctx.backendConfig);
    const name = ctx.config.name;
    const init: JsWorkerInit = {
      mode: 'autocomplete',
      modelPath: file,
      configJson: JSON.stringify(modelConfigToJson(ctx.config)),
    };
    const realDir = await realpath(ctx.modelDir).catch(() => ctx.modelDir);
    const scope: FailureScope = {
      id: { model: name, version: path.basename(ctx.versionDir) },
      modelDirs: [ctx.modelDir, realDir],
      errors: new ModelErrorLog({ log: ctx.log }),
      log: ctx.log,
    };
    const { worker, configJson } = await JsWorker.start(init, {
      label: `${name} (auto-complete)`,
      log: ctx.log,
      timeoutMs: options.initializeTimeoutMs,
      // A build error shows here first when the module defines autoCompleteConfig.
      describe: (e, phase) => modelFailure(e, scope, phase),
    });
    await worker.terminate();
    if (configJson === undefined) return ctx.config;
    try {
      return parseModelConfigJson(configJson, `autoCompleteConfig of model '${name}'`);
    } catch (err) {
      throw invalidArg(
        `autoCompleteConfig of model '${name}' produced an invalid config: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    const options = javascriptOptions(ctx.config, ctx.backendConfig);
    const modelPath = await resolveModelFile(ctx.modelPath, ctx.modelName, ctx.files);
    ctx.log.verbose(
      `javascript model '${ctx.modelName}' version ${ctx.version}: ${modelPath}, execution timeout ${options.executionTimeoutMs} ms`,
    );
    // Stack frames name the real path of the model's files (ESM resolves symbolic links).
    const realDir = await realpath(ctx.modelDir).catch(() => ctx.modelDir);
    return new JsModel(ctx, modelPath, options, [ctx.modelDir, realDir]);
  }
}

/**
 * How long one instance may take to answer a readiness or metrics question. The core bounds its polls
 * and scrapes on its own; these keep forgotten queries from piling up in a stuck worker.
 */
const READY_QUERY_MS = 5000;
const METRICS_QUERY_MS = 1000;

/** A loaded model version: what its instances share. */
class JsModel implements ModelHandle {
  readonly instances = new Set<JsInstance>();
  /** The worker threads see SharedArrayBuffer inputs without a copy (tensors.ts). */
  readonly sharesInputMemory = true;
  private readonly configJson: string;
  private readonly outputTypes: ReadonlyMap<string, DataType>;
  /** One failure log for every instance of this version: an error they all hit is logged once. */
  private readonly errors: ModelErrorLog;
  private readonly outputCheck: OutputCheck;

  constructor(
    private readonly ctx: ModelLoadContext,
    private readonly modelPath: string,
    private readonly options: JavascriptOptions,
    private readonly modelDirs: readonly string[],
  ) {
    this.errors = new ModelErrorLog({ log: ctx.log });
    this.outputCheck = OutputCheck.forModel(ctx);
    this.configJson = JSON.stringify(modelConfigToJson(ctx.config));
    const types = new Map<string, DataType>();
    for (const o of ctx.config.output) {
      const dt = fromConfigDataType(o.data_type);
      if (dt) types.set(o.name, dt);
    }
    this.outputTypes = types;
  }

  async createInstance(spec: InstanceSpec): Promise<InstanceHandle> {
    if (spec.kind === 'KIND_GPU') {
      this.ctx.log.warn(`instance '${spec.name}' asks for a GPU; its worker thread runs on the CPU`);
    }
    const decoupled = this.ctx.config.model_transaction_policy?.decoupled === true;
    const instance = await JsInstance.create({
      spec,
      modelName: this.ctx.modelName,
      init: {
        mode: 'instance',
        modelPath: this.modelPath,
        configJson: this.configJson,
        facts: {
          modelName: this.ctx.modelName,
          modelVersion: this.ctx.version,
          instanceName: spec.name,
          instanceKind: spec.kind === 'KIND_GPU' ? 'GPU' : spec.kind === 'KIND_MODEL' ? 'MODEL' : 'CPU',
          deviceId: spec.deviceId,
          modelDir: this.ctx.modelDir,
          decoupled,
        },
      },
      options: this.options,
      decoupled,
      outputTypes: this.outputTypes,
      log: this.ctx.log,
      serverApi: this.ctx.serverApi,
      onClose: (i) => this.instances.delete(i),
      failures: {
        version: this.ctx.version,
        modelDirs: this.modelDirs,
        errors: this.errors,
        log: this.ctx.log,
      },
      outputCheck: this.outputCheck,
    });
    this.instances.add(instance);
    return instance;
  }

  /** Ready when every instance is: its worker is up and the model's isReady() (if any) says so. */
  async isReady(): Promise<boolean> {
    const instances = [...this.instances];
    if (instances.length === 0) return false;
    const answers = await Promise.all(instances.map((i) => i.isReady(READY_QUERY_MS)));
    return answers.every(Boolean);
  }

  /**
   * Every instance's families merged (../custom-metrics.ts), gauges summed too: a gauge moved with
   * increment() then equals Triton's shared gauge; for set(), whose latest setter a snapshot cannot tell,
   * the sum (e.g. the model's total queue depth) is the meaningful whole. An instance that cannot answer
   * adds nothing.
   */
  async customMetrics(): Promise<readonly CustomMetricFamily[]> {
    const lists = await Promise.all(
      [...this.instances].map((i) => i.customMetrics(METRICS_QUERY_MS).catch(() => [])),
    );
    return mergeInstanceMetrics(lists);
  }

  unload(): Promise<void> {
    // Instances own their workers and were closed before this.
    this.errors.flush();
    return Promise.resolve();
  }
}
