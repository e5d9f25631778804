/**
 * The `llamacpp` backend: GGUF language models on llama.cpp (node-llama-cpp's CPU build), behind the
 * tensor interface of Triton's vLLM backend (vllm-interface.ts), so generate / generate_stream, gRPC
 * streaming and the OpenAI-compatible /v1 API serve them. docs/llm.md describes the model folder.
 *
 * A model version loads one engine (engine.ts: the weights and one context of `parallel_sequences`
 * sequences); its instances share it. execute() starts each request's generation and, for a decoupled
 * model, returns at once, so the next requests reach the engine while earlier ones still decode: they
 * join the running batch at its next step, or wait in the engine's bounded queue for a sequence.
 */
import os from 'node:os';
import path from 'node:path';
import type {
  AutoCompleteContext,
  Backend,
  BackendRequest,
  CustomMetricFamily,
  InstanceHandle,
  InstanceSpec,
  ModelChatTemplate,
  ModelHandle,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { invalidArg, NereidError, unavailable } from '../../common/errors.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { LlamaEngine } from './engine.js';
import { chatTemplateOf, ggufHeader, kvCacheBytes, type GgufHeader } from './gguf-check.js';
import { generate, type GenerationHost } from './generation.js';
import { readOptions, type LlamacppOptions } from './options.js';
import { generateTrt } from './trtllm-generation.js';
import { trtPlan, usesTrtInterface, type TrtPlan } from './trtllm-interface.js';
import { completeVllmConfig, outputPlan } from './vllm-interface.js';

/** A loaded model and the tensor interface its config chose. */
type Host =
  | ({ readonly kind: 'vllm' } & GenerationHost)
  | { readonly kind: 'tensorrt_llm'; readonly engine: LlamaEngine; readonly plan: TrtPlan };

export const MODEL_FILE = 'model.gguf';

export class LlamacppBackend implements Backend {
  readonly name = 'llamacpp';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = MODEL_FILE;

  autoCompleteConfig(ctx: AutoCompleteContext): Promise<ModelConfig> {
    return Promise.resolve(completeVllmConfig(ctx.config));
  }

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    const trt = usesTrtInterface(ctx.config);
    if (!trt && !ctx.config.input.some((i) => i.name === 'text_input')) {
      throw invalidArg(
        `failed to load model '${ctx.modelName}': a llamacpp model needs the input 'text_input' (vLLM interface) or 'input_ids' (TensorRT-LLM interface)`,
      );
    }
    const options = await readOptions(ctx.versionDir, ctx.modelDir, ctx.files);
    const shown = `${ctx.version}/${path.basename(ctx.modelPath)}`;
    let engine: LlamaEngine;
    let chatTemplate: ModelChatTemplate | undefined;
    try {
      // A header with a problem is LlamaEngine.load's to report.
      const found = await ggufHeader(ctx.modelPath).catch(() => undefined);
      const header = found === undefined || 'problem' in found ? undefined : found;
      if (header !== undefined) {
        checkMemory(header, options);
        chatTemplate = publishedTemplate(header, shown, ctx);
      }
      const kind = outputPlan(ctx.config).embedding !== undefined ? 'embedding' : 'generation';
      engine = await LlamaEngine.load(ctx.modelPath, shown, options, ctx.log, kind);
    } catch (err) {
      const e = NereidError.from(err);
      throw new NereidError(e.code, `failed to load model '${ctx.modelName}': ${e.message}`, { cause: err });
    }
    ctx.log.info(
      `llamacpp model '${ctx.modelName}' version ${ctx.version}: ${shown}, context ${engine.contextSize} tokens x ${options.parallelSequences} sequences, batch ${options.batchSize}`,
    );
    return new LlamacppModel(
      trt
        ? { kind: 'tensorrt_llm', engine, plan: trtPlan(ctx.config) }
        : { kind: 'vllm', engine, plan: outputPlan(ctx.config) },
      ctx.config.model_transaction_policy?.decoupled === true,
      { model: ctx.modelName, version: String(ctx.version) },
      chatTemplate,
    );
  }
}

/** The GGUF's chat template for ModelHandle.chatTemplate; one it cannot use is logged once and left out. */
function publishedTemplate(
  header: GgufHeader,
  shown: string,
  ctx: ModelLoadContext,
): ModelChatTemplate | undefined {
  const t = chatTemplateOf(header);
  if (t === undefined) return undefined;
  if ('skipped' in t) {
    ctx.log.warn(
      `llamacpp model '${ctx.modelName}': the chat template of ${shown} is not used (${t.skipped}); chat goes through the model folder's template or the fallback`,
    );
    return undefined;
  }
  return { ...t, origin: `${shown} metadata` };
}

const GIB = 2 ** 30;

/** The memory this process may use: the machine's, or a smaller cgroup limit (a container's). */
function memoryLimit(): number {
  const constrained = process.constrainedMemory();
  return constrained > 0 ? Math.min(constrained, os.totalmem()) : os.totalmem();
}

/**
 * Refuses, before llama.cpp allocates anything, a context whose KV cache and weights cannot fit in this
 * machine's memory (gguf-check.ts says why node-llama-cpp's own check is not relied on).
 */
function checkMemory(header: GgufHeader, options: LlamacppOptions): void {
  const tokens = options.contextSize * options.parallelSequences;
  const kv = kvCacheBytes(header.metadata, tokens);
  if (kv === undefined) return;
  const limit = memoryLimit();
  if (kv + header.size > limit) {
    throw invalidArg(
      `context_size ${options.contextSize} x parallel_sequences ${options.parallelSequences} needs a KV cache of about ${(kv / GIB).toFixed(1)} GiB (and ${(header.size / GIB).toFixed(1)} GiB of weights), more than the ${(limit / GIB).toFixed(1)} GiB of memory here: lower context_size or parallel_sequences in model.json`,
    );
  }
}

class LlamacppModel implements ModelHandle {
  constructor(
    private readonly host: Host,
    private readonly decoupled: boolean,
    private readonly labels: Readonly<Record<string, string>>,
    /** The GGUF's chat template (gguf-check.ts), for the OpenAI frontend. */
    readonly chatTemplate: ModelChatTemplate | undefined,
  ) {}

  /** The engine's occupancy and token counts, under the names Triton's vLLM backend reports them. */
  customMetrics(): Promise<readonly CustomMetricFamily[]> {
    const { engine } = this.host;
    return Promise.resolve(
      engine.meters.families(this.labels, { running: engine.active, waiting: engine.waiting }),
    );
  }

  createInstance(spec: InstanceSpec): Promise<InstanceHandle> {
    return Promise.resolve(new LlamacppInstance(spec.name, this.host, this.decoupled));
  }

  async unload(): Promise<void> {
    await this.host.engine.close();
  }
}

class LlamacppInstance implements InstanceHandle {
  private readonly running = new Set<Promise<void>>();
  private readonly stop = new AbortController();

  constructor(
    readonly name: string,
    private readonly host: Host,
    private readonly decoupled: boolean,
  ) {}

  async execute(requests: readonly BackendRequest[]): Promise<void> {
    const started = requests.map((r) => this.start(r));
    // A model that is not decoupled answers every request before its execution ends.
    if (!this.decoupled) await Promise.all(started);
  }

  private start(req: BackendRequest): Promise<void> {
    const run = this.stop.signal.aborted
      ? Promise.resolve(req.sender.fail(unavailable('the model instance is closed')))
      : this.host.kind === 'tensorrt_llm'
        ? generateTrt(req, this.host.engine, this.host.plan, this.stop.signal, this.decoupled)
        : generate(req, this.host, this.stop.signal, this.decoupled);
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    return run;
  }

  /** Lets running generations end on their own (the core waits for open streams before it closes). */
  async close(): Promise<void> {
    await Promise.all([...this.running]);
  }

  abort(error: NereidError): void {
    this.stop.abort(error);
  }
}
