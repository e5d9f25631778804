/**
 * The `onnxruntime` backend (platform `onnxruntime_onnx`) on onnxruntime-node. By default the main thread
 * never opens a session: auto-complete asks a short-lived worker what the model looks like, loadModel
 * starts the first instance's worker (which also proves the file loads and lets the config be checked
 * against the model), and every further instance gets a worker of its own. A model with
 * `execution_thread: "event_loop"` has its sessions opened and run on the main thread instead.
 */
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import type {
  AutoCompleteContext,
  Backend,
  InstanceHandle,
  InstanceSpec,
  ModelHandle,
  ModelFiles,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { NereidError, invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { autoCompleteFromModel, defaultMaxBatchSize } from './autocomplete.js';
import type { InferenceSession } from 'onnxruntime-node';
import { loadSessionModule, OrtInstance } from './instance.js';
import { sessionSettings, type ExecutionThread } from './options.js';
import type { ModelIo, OrtSessionSettings, OrtWorkerInit } from './protocol.js';
import { validateAgainstModel } from './validate.js';
import { OrtWorker } from './worker-client.js';

/** The file inside a model folder (a folder lets the model keep external-data files beside it). */
const FOLDER_MODEL_FILE = 'model.onnx';

/**
 * `<version>/<default_model_filename>` as a file, or `<that folder>/model.onnx`; loading the inner path
 * lets ORT resolve external-data files relative to it. With `files` (the core's path rules) the inner
 * file must stay inside the model folder too. Messages name files, not the server's folders.
 */
export async function resolveModelFile(
  modelPath: string,
  modelName: string,
  files?: ModelFiles,
): Promise<string> {
  const missing = (p: string): NereidError =>
    new NereidError('UNAVAILABLE', `unable to find '${basename(p)}' for model '${modelName}'`);
  let path = modelPath;
  let st = await stat(path).catch(() => undefined);
  if (!st) throw missing(path);
  if (st.isDirectory()) {
    path = join(path, FOLDER_MODEL_FILE);
    if (files) path = await files.check(path, `model file '${basename(modelPath)}/${FOLDER_MODEL_FILE}'`);
    st = await stat(path).catch(() => undefined);
    if (!st) throw missing(path);
  }
  if (!st.isFile()) throw invalidArg(`'${basename(path)}' for model '${modelName}' is not a file`);
  return path;
}

/** A session just to read names, types and shapes: no optimisation work, one thread. */
const PROBE_SETTINGS: OrtSessionSettings = {
  intraOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'disabled',
  logSeverityLevel: 3,
  configEntries: {},
};

export interface OnnxRuntimeBackendOptions {
  /** CPUs to share between instances; os.availableParallelism() when omitted. */
  readonly cpuCount?: number;
}

export class OnnxRuntimeBackend implements Backend {
  readonly name = 'onnxruntime';
  readonly platforms: readonly string[] = ['onnxruntime_onnx'];
  readonly defaultPlatform = 'onnxruntime_onnx';
  readonly defaultModelFilename = 'model.onnx';
  private readonly cpuCount: number;

  constructor(options: OnnxRuntimeBackendOptions = {}) {
    this.cpuCount = options.cpuCount ?? availableParallelism();
  }

  async autoCompleteConfig(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const config = ctx.config;
    const inputCount = (config.input?.length ?? 0) + (config.batch_input?.length ?? 0);
    if (inputCount > 0 && (config.output?.length ?? 0) > 0) {
      ctx.log.verbose(
        `skipping model configuration auto-complete for '${config.name}': inputs and outputs already specified`,
      );
      return config;
    }
    const maxBatch = defaultMaxBatchSize(ctx.backendConfig);
    const modelPath = await resolveModelFile(ctx.modelPath, config.name, ctx.files);
    const probe = await OrtWorker.start(
      { modelPath, settings: PROBE_SETTINGS },
      `${config.name} (auto-complete)`,
    );
    const io = probe.io;
    await probe.terminate();
    const result = autoCompleteFromModel(config, io, maxBatch);
    for (const note of result.notes) ctx.log.warn(note);
    return result.config;
  }

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    const { settings, executionThread, warnings } = sessionSettings(ctx.config, ctx.backendConfig, {
      cpuCount: this.cpuCount,
      verbose: ctx.log.isVerbose(),
    });
    for (const w of warnings) ctx.log.warn(w);
    const init: OrtWorkerInit = {
      modelPath: await resolveModelFile(ctx.modelPath, ctx.modelName, ctx.files),
      settings,
    };
    const { spare, io } = await openFirst(init, executionThread, ctx.modelName);
    try {
      validateAgainstModel(ctx.config, io);
    } catch (err) {
      await closeSpare(spare);
      throw err;
    }
    ctx.log.verbose(
      `onnxruntime model '${ctx.modelName}' version ${ctx.version}: ${init.modelPath}, ` +
        `intra-op threads ${settings.intraOpNumThreads || 'ORT default'}, graph optimization ${settings.graphOptimizationLevel}, ` +
        `sessions on ${executionThread === 'worker' ? 'worker threads' : 'the event loop'}`,
    );
    return new OrtModel(ctx.config.max_batch_size, init, executionThread, ctx.log, spare);
  }
}

/**
 * The first instance's session, opened at load so that a broken file fails the load: in a worker, or for
 * an event-loop model on the main thread (onnxruntime-node is loaded there only then).
 */
async function openFirst(
  init: OrtWorkerInit,
  thread: ExecutionThread,
  label: string,
): Promise<{ spare: OrtWorker | InferenceSession; io: ModelIo }> {
  if (thread === 'worker') {
    const worker = await OrtWorker.start(init, label);
    return { spare: worker, io: worker.io };
  }
  const { openSession, sessionIo } = await loadSessionModule();
  const session = await openSession(init);
  return { spare: session, io: sessionIo(session) };
}

async function closeSpare(spare: OrtWorker | InferenceSession): Promise<void> {
  if (spare instanceof OrtWorker) await spare.terminate();
  else await spare.release();
}

/**
 * A loaded model version: the session settings, and the first worker (or event-loop session) until an
 * instance claims it.
 */
class OrtModel implements ModelHandle {
  constructor(
    private readonly maxBatchSize: number,
    private readonly init: OrtWorkerInit,
    private readonly thread: ExecutionThread,
    private readonly log: Logger,
    private spare: OrtWorker | InferenceSession | undefined,
  ) {}

  async createInstance(spec: InstanceSpec): Promise<InstanceHandle> {
    if (spec.kind === 'KIND_GPU') {
      this.log.warn(`instance '${spec.name}' asks for a GPU; onnxruntime-node runs it on the CPU`);
    }
    let handover = this.spare;
    this.spare = undefined;
    if (handover instanceof OrtWorker && !handover.alive) handover = undefined;
    if (handover instanceof OrtWorker) handover.label = spec.name;
    const instance = new OrtInstance(
      {
        name: spec.name,
        maxBatchSize: this.maxBatchSize,
        init: this.init,
        log: this.log,
        thread: this.thread,
      },
      handover,
    );
    // Start now, not on the first request: a load problem belongs to model load, not to a client.
    if (!handover) await instance.start();
    return instance;
  }

  async unload(): Promise<void> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare) await closeSpare(spare);
  }
}
