/**
 * One loaded GGUF model on llama.cpp (through node-llama-cpp): the model's weights, one context with a
 * fixed number of sequences, and the queue that hands those sequences to requests. llama.cpp evaluates
 * in its own native threads, so the event loop only orchestrates; node-llama-cpp gathers the pending
 * tokens of every sequence of the context into one decode call per step, which is what makes concurrent
 * requests decode together (in-flight batching: a request that gets a sequence joins the next step).
 *
 * node-llama-cpp is imported on the first load, so a server without llamacpp models never pays for it.
 * Its native binding (one per process, CPU build only) is shared by every model and released with the
 * last of them.
 */
import type {
  Llama,
  LlamaContext,
  LlamaEmbeddingContext,
  LlamaContextSequence,
  LlamaGrammarEvaluationState,
  LlamaModel,
  Token,
  TokenBias,
} from 'node-llama-cpp';
import { invalidArg, NereidError, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { ggufProblem } from './gguf-check.js';
import type { LlamacppOptions } from './options.js';
import { EngineMeters, type RequestMeter } from './meter.js';
import { SlotQueue } from './slot-queue.js';

export type { Token, TokenBias, LlamaGrammarEvaluationState };

type Library = typeof import('node-llama-cpp');

interface SharedBinding {
  readonly llama: Promise<Llama>;
  users: number;
}

let binding: SharedBinding | undefined;
/** node-llama-cpp's module, once a model loaded it (its classes build token biases and grammars). */
let library: Library | undefined;

/** The process's llama.cpp binding; each call must be paired with releaseBinding(). */
async function acquireBinding(log: Logger): Promise<Llama> {
  if (binding === undefined) {
    const started = (async (): Promise<Llama> => {
      library = await import('node-llama-cpp');
      const { getLlama, LlamaLogLevel } = library;
      return getLlama({
        gpu: false,
        build: 'never',
        progressLogs: false,
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
          const text = message.trim();
          // Said on every embedding of a model without its own output flags: expected, not a problem.
          if (text.startsWith('init: embeddings required but some input tokens were not marked')) return;
          if (text !== '') log.warn(`llama.cpp (${level}): ${text}`);
        },
      });
    })();
    binding = { llama: started, users: 0 };
    started.catch(() => {
      binding = undefined;
    });
  }
  binding.users++;
  try {
    return await binding.llama;
  } catch (err) {
    throw new NereidError(
      'UNAVAILABLE',
      `llama.cpp's CPU binding could not be loaded (is @node-llama-cpp/linux-x64 installed?): ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

function loaded(): Library {
  if (library === undefined) throw new NereidError('INTERNAL', 'node-llama-cpp is not loaded');
  return library;
}

async function releaseBinding(): Promise<void> {
  const b = binding;
  if (b === undefined || --b.users > 0) return;
  binding = undefined;
  const llama = await b.llama.catch(() => undefined);
  await llama?.dispose();
}

/** A request's hold on one sequence of the context; give it back with LlamaEngine.release(). */
export interface SequenceLease {
  readonly sequence: LlamaContextSequence;
}

export class LlamaEngine {
  private readonly slots: SlotQueue<SequenceLease>;
  private closed = false;
  /** An embedding model's context (load(..., 'embedding')); undefined for a generation model. */
  private embeddingContext: LlamaEmbeddingContext | undefined;
  /** Embeddings run one at a time on that context. */
  private embeddingTail: Promise<unknown> = Promise.resolve();
  /** Token counts and latencies since the load (meter.ts). */
  readonly meters: EngineMeters;

  private constructor(
    readonly model: LlamaModel,
    private readonly context: LlamaContext | LlamaEmbeddingContext,
    leases: readonly SequenceLease[],
    readonly options: LlamacppOptions,
  ) {
    this.slots = new SlotQueue(leases, options.maxQueueSize);
    this.meters = new EngineMeters(this.contextSize);
  }

  /** Starts one request's clock (its arrival at the engine) and counts its prompt. */
  meter(promptTokens: number): RequestMeter {
    return this.meters.start(promptTokens);
  }

  /** The model's end-of-generation tokens (EOS, EOT). */
  get endTokens(): Token[] {
    const t = this.model.tokens;
    return [t.eos, t.eot].filter((x): x is Token => x !== null);
  }

  /**
   * Loads `file`; a file llama.cpp cannot read is INVALID_ARG naming `shownName`. `kind` 'embedding' makes
   * one embedding context instead of the generation context and its sequences.
   */
  static async load(
    file: string,
    shownName: string,
    options: LlamacppOptions,
    log: Logger,
    kind: 'generation' | 'embedding' = 'generation',
  ): Promise<LlamaEngine> {
    const problem = await ggufProblem(file).catch((err: unknown) =>
      err instanceof Error ? err.message : String(err),
    );
    if (problem !== undefined)
      throw invalidArg(`'${shownName}' is not a GGUF model llama.cpp can load: ${problem}`);
    const llama = await acquireBinding(log);
    let model: LlamaModel | undefined;
    try {
      try {
        model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      } catch (err) {
        throw invalidArg(
          `'${shownName}' is not a GGUF model llama.cpp can load: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      if (kind === 'embedding') return await LlamaEngine.embeddingEngine(model, shownName, options);
      let context: LlamaContext;
      try {
        context = await model.createContext({
          contextSize: options.contextSize,
          sequences: options.parallelSequences,
          batchSize: options.batchSize,
          ...(options.threads > 0 && { threads: options.threads }),
        });
      } catch (err) {
        throw invalidArg(
          `cannot create a context of ${options.contextSize} tokens x ${options.parallelSequences} sequences for '${shownName}': ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      const leases: SequenceLease[] = [];
      for (let i = 0; i < options.parallelSequences; i++) leases.push({ sequence: context.getSequence() });
      return new LlamaEngine(model, context, leases, options);
    } catch (err) {
      await model?.dispose().catch(() => {});
      await releaseBinding();
      throw err;
    }
  }

  private static async embeddingEngine(
    model: LlamaModel,
    shownName: string,
    options: LlamacppOptions,
  ): Promise<LlamaEngine> {
    let embedding: LlamaEmbeddingContext;
    try {
      embedding = await model.createEmbeddingContext({
        contextSize: options.contextSize,
        batchSize: options.batchSize,
        ...(options.threads > 0 && { threads: options.threads }),
      });
    } catch (err) {
      throw invalidArg(
        `cannot create an embedding context of ${options.contextSize} tokens for '${shownName}': ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    // No generation sequences: an embedding model's requests never ask for one.
    const engine = new LlamaEngine(model, embedding, [], options);
    engine.embeddingContext = embedding;
    return engine;
  }

  /** The pooled embedding of `tokens` (an embedding model only); one at a time, in arrival order. */
  embed(tokens: readonly Token[]): Promise<readonly number[]> {
    const ctx = this.embeddingContext;
    if (ctx === undefined) return Promise.reject(invalidArg('this model is not an embedding model'));
    if (this.closed) return Promise.reject(unavailable('the model is unloading'));
    const run = this.embeddingTail.then(async () => (await ctx.getEmbeddingFor([...tokens])).vector);
    this.embeddingTail = run.catch(() => undefined);
    return run;
  }

  /**
   * One token's text as it reads after `previous` (for log probs: SentencePiece's leading space shows only
   * after another token; a piece of a multi-byte character reads as U+FFFD).
   */
  tokenText(token: Token, previous?: Token): string {
    if (previous === undefined) return this.model.detokenize([token], true);
    const before = this.model.detokenize([previous], true);
    return this.model.detokenize([previous, token], true).slice(before.length);
  }

  /** Tokens each sequence holds, prompt and generated text together (llama.cpp may round it up). */
  get contextSize(): number {
    // An embedding context was made with exactly the size asked.
    return 'contextSize' in this.context ? this.context.contextSize : this.options.contextSize;
  }

  /** Requests waiting for a sequence. */
  get waiting(): number {
    return this.slots.waiting;
  }

  /** Sequences generating right now. */
  get active(): number {
    return this.options.parallelSequences - this.slots.available;
  }

  /** Tokens in the model's vocabulary: valid ids are 0 to vocabSize - 1. */
  get vocabSize(): number {
    const tokens = (
      this.model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly unknown[] } } }
    ).tokenizer?.ggml?.tokens;
    return Array.isArray(tokens) ? tokens.length : 2 ** 31 - 1;
  }

  /** A token bias that forbids `tokens` (the sampler never picks them). */
  forbid(tokens: readonly Token[]): TokenBias {
    const bias = new (loaded().TokenBias)(this.model.tokenizer);
    for (const t of tokens) bias.set(t, 'never');
    return bias;
  }

  /** A fresh grammar state for one request: JSON matching `schema`, or any JSON object when undefined. */
  async jsonGrammar(schema: object | undefined): Promise<LlamaGrammarEvaluationState> {
    const lib = loaded();
    const grammar =
      schema === undefined
        ? await this.model.llama.getGrammarFor('json')
        : await this.model.llama.createGrammarForJsonSchema(schema as never);
    return new lib.LlamaGrammarEvaluationState({ model: this.model, grammar });
  }

  /** A fresh grammar state for a GBNF grammar (llama.cpp's grammar language). */
  async gbnfGrammar(text: string): Promise<LlamaGrammarEvaluationState> {
    const lib = loaded();
    const grammar = await this.model.llama.createGrammar({ grammar: text });
    return new lib.LlamaGrammarEvaluationState({ model: this.model, grammar });
  }

  /**
   * The prompt's tokens as the model reads them (with the BOS token when the model wants one). Special
   * tokens written as text (a chat template's `<|im_start|>`, its `{{ bos_token }}`) read as those tokens,
   * as Hugging Face tokenizers and llama.cpp's server read a rendered prompt.
   */
  tokenize(text: string): Token[] {
    const tokens = this.model.tokenize(text, true);
    const bos = this.model.tokens.bos;
    if (this.model.tokens.shouldPrependBosToken && bos !== null && tokens[0] !== bos) tokens.unshift(bos);
    return tokens;
  }

  detokenize(tokens: readonly Token[]): string {
    return this.model.detokenize(tokens);
  }

  isEndOfGeneration(token: Token): boolean {
    return this.model.isEogToken(token);
  }

  /** Waits for a free sequence (see SlotQueue for the queue's bound and cancellation). */
  acquire(signal: AbortSignal): Promise<SequenceLease> {
    if (this.closed) return Promise.reject(unavailable('the model is unloading'));
    return this.slots.acquire(signal);
  }

  /** Empties the sequence's KV cache and hands it to the next request. */
  async release(lease: SequenceLease): Promise<void> {
    try {
      await lease.sequence.clearHistory();
    } finally {
      this.slots.release(lease);
    }
  }

  /** Frees the context and the weights; waiting requests fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.slots.close(unavailable('the model was unloaded'));
    try {
      await this.embeddingTail;
      await this.context.dispose();
      await this.model.dispose();
    } finally {
      await releaseBinding();
    }
  }
}
