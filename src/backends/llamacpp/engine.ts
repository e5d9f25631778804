/**
 * One loaded GGUF model on llama.cpp (through node-llama-cpp): the model's weights, one context with a
 * fixed number of sequences, and the queue that hands those sequences to requests. llama.cpp evaluates
 * in its own native threads, so the event loop only orchestrates; node-llama-cpp gathers the pending
 * tokens of every sequence of the context into one decode call per step, which is what makes concurrent
 * requests decode together (in-flight batching: a request that gets a sequence joins the next step).
 *
 * Prompt-prefix reuse (`enable_prefix_caching`, on by default): a sequence keeps its tokens and their KV
 * cache when its request ends. A request given a free sequence takes the one whose kept tokens share the
 * longest prefix with its prompt (pickLease: when that is a useful share of it; else an empty or the least
 * recently used sequence), erases the kept tokens past that prefix and evaluates only the rest. Each
 * sequence has its own cells of the KV cache, so kept tokens cost no memory the context does not already
 * hold; a sequence is only ever held by one request at a time, so no request reads another's state.
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
import { textAfter, TokenText } from './token-text.js';

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
  /** When the sequence was last given back (a clock of releases): the least recent is evicted first. */
  lastUsed: number;
}

/** A sequence given to a request, ready for the prompt's tokens that its cache does not hold. */
export interface Acquired {
  readonly lease: SequenceLease;
  /** The prompt's tokens to evaluate: those after the reused prefix (at least the last one). */
  readonly rest: Token[];
  /** Prompt tokens whose KV cache was reused. */
  readonly reused: number;
}

/** How many leading tokens `a` and `b` share. */
export function sharedPrefix(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The prefix of `prompt` a sequence holding `kept` can reuse: the shared tokens, but never the whole
 * prompt (its last token is evaluated again to give the first token's logits).
 */
export function reusablePrefix(kept: readonly Token[], prompt: readonly Token[]): number {
  return Math.min(sharedPrefix(kept, prompt), prompt.length - 1);
}

/**
 * A free sequence is worth taking for its cached tokens when they cover at least this share of the prompt
 * (llama.cpp's server picks its slots with a similar threshold): a few shared tokens, such as the BOS
 * token every prompt starts with, would not pay for erasing what that sequence holds for another prompt.
 */
export const MIN_SHARED_FRACTION = 0.1;

/**
 * Among free leases, the index of the one to give a request for `prompt`: the longest reusable prefix
 * when it is worth it (MIN_SHARED_FRACTION), else an empty sequence, else the least recently used (so a
 * sequence holding a useful prefix is evicted last).
 */
export function pickLease(
  free: readonly { readonly kept: readonly Token[]; readonly lastUsed: number }[],
  prompt: readonly Token[],
): number {
  let best = -1;
  let bestShared = 0;
  for (let i = 0; i < free.length; i++) {
    const shared = reusablePrefix(free[i].kept, prompt);
    if (shared > bestShared) {
      best = i;
      bestShared = shared;
    }
  }
  if (best >= 0 && bestShared >= MIN_SHARED_FRACTION * prompt.length) return best;
  let victim = 0;
  const rank = (i: number): [number, number] => [free[i].kept.length === 0 ? 0 : 1, free[i].lastUsed];
  for (let i = 1; i < free.length; i++) {
    const [emptyI, usedI] = rank(i);
    const [emptyV, usedV] = rank(victim);
    if (emptyI < emptyV || (emptyI === emptyV && usedI < usedV)) victim = i;
  }
  return victim;
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
  /** Sequences given back so far (SequenceLease.lastUsed). */
  private releases = 0;

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
      for (let i = 0; i < options.parallelSequences; i++) {
        leases.push({ sequence: context.getSequence(), lastUsed: 0 });
      }
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
   * One token's text as it reads after `previous`, special tokens as their text (for log probs:
   * SentencePiece's leading space shows only after another token; a piece of a multi-byte character reads
   * as U+FFFD). The same reading as a generation's text (token-text.ts).
   */
  tokenText(token: Token, previous?: Token): string {
    return textAfter(this.specialText, previous === undefined ? [] : [previous], [token]);
  }

  private readonly specialText = (tokens: readonly Token[]): string => this.model.detokenize(tokens, true);

  /** A generation's text, token by token, each step detokenizing a few tokens only (token-text.ts). */
  textOf(): TokenText {
    return new TokenText((tokens) => this.model.detokenize(tokens));
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

  isEndOfGeneration(token: Token): boolean {
    return this.model.isEogToken(token);
  }

  /**
   * Waits for a free sequence (see SlotQueue for the queue's bound and cancellation) and readies it for
   * `prompt`: with prefix caching, the free sequence sharing the longest prefix with it, its other kept
   * tokens erased; otherwise any, empty.
   */
  async acquire(signal: AbortSignal, prompt: readonly Token[]): Promise<Acquired> {
    if (this.closed) throw unavailable('the model is unloading');
    const caching = this.options.prefixCaching;
    const lease = await this.slots.acquire(
      signal,
      caching
        ? (free) =>
            pickLease(
              free.map((l) => ({ kept: l.sequence.contextTokens, lastUsed: l.lastUsed })),
              prompt,
            )
        : undefined,
    );
    try {
      const kept = caching ? await this.keepPrefix(lease.sequence, prompt) : { held: 0, reused: 0 };
      this.meters.prefixCache(prompt.length, kept.reused);
      return { lease, rest: prompt.slice(kept.held), reused: kept.reused };
    } catch (err) {
      await this.release(lease, false);
      throw err;
    }
  }

  /**
   * Erases what `sequence` holds past the prefix it shares with `prompt`; returns how many tokens it
   * still holds (`held`: the prompt's first ones) and how many of those were not evaluated again. The
   * erase must leave a KV cache that evaluates the rest of the prompt exactly as a fresh sequence would;
   * when it cannot, the sequence is cleared:
   *  - a recurrent or hybrid model's state cannot drop its last tokens, only be extended;
   *  - a sliding-window (SWA) model's cache drops cells older than its window, so the tokens kept must
   *    still have, in cache, every position the window of the first new token reaches back to.
   */
  private async keepPrefix(
    sequence: LlamaContextSequence,
    prompt: readonly Token[],
  ): Promise<{ held: number; reused: number }> {
    const held = sequence.nextTokenIndex;
    if (held === 0) return { held: 0, reused: 0 };
    const keep = Math.max(0, reusablePrefix(sequence.contextTokens, prompt));
    if (keep < held) {
      const insights = this.model.fileInsights;
      const swa = insights.swaSize;
      const erasable =
        keep > 0 &&
        !insights.isRecurrent &&
        !insights.isHybrid &&
        (swa === undefined || swa <= 0 || sequence.stateCellsStartIndex <= Math.max(0, keep - swa - 1));
      if (!erasable) {
        await sequence.clearHistory();
        return { held: 0, reused: 0 };
      }
      const meter = sequence.tokenMeter;
      const evaluated = meter.usedInputTokens + meter.usedOutputTokens;
      await sequence.eraseContextTokenRanges([{ start: keep, end: held }]);
      // When llama.cpp cannot remove the cells, node-llama-cpp evaluates the kept tokens again: held,
      // but not reused.
      if (meter.usedInputTokens + meter.usedOutputTokens !== evaluated) return { held: keep, reused: 0 };
    }
    if (sequence.nextTokenIndex !== keep) {
      // Not what was asked for: start this request from an empty sequence rather than guess.
      await sequence.clearHistory();
      return { held: 0, reused: 0 };
    }
    return { held: keep, reused: keep };
  }

  /**
   * Hands the sequence to the next request. `keep`: its tokens stay cached for a later prompt sharing
   * their prefix (only for a sequence whose evaluation ended cleanly); otherwise its KV cache is emptied.
   */
  async release(lease: SequenceLease, keep = false): Promise<void> {
    try {
      if (!keep || !this.options.prefixCaching || this.closed) await lease.sequence.clearHistory();
    } finally {
      lease.lastUsed = ++this.releases;
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
