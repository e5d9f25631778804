/**
 * One request's generation: read the vLLM-interface inputs, check the prompt and max_tokens against the
 * context, wait for a sequence, then evaluate token by token and answer (one response per text piece when
 * streaming, one response at the end otherwise). The sequence is given back the moment the request ends:
 * finished, stopped, cancelled or failed. Every problem ends the request through its sender. The text is
 * read token by token over a few tokens each step (token-text.ts), then cut at stop strings (stop-text.ts).
 *
 * `guided_decoding` (sampling.ts) becomes a llama.cpp grammar the sampler obeys, so the text is valid
 * JSON for the schema (node-llama-cpp's JSON-schema grammar) and ends when the grammar does; `logprobs`
 * reads each step's probabilities (after the request's temperature, top-k/p and grammar, as llama.cpp's
 * sampler saw them) into the `logprobs` output. An embedding model's request is one pooled vector.
 */
import type { BackendRequest } from '../../backend-api/backend.js';
import { cancelled, invalidArg, NereidError } from '../../common/errors.js';
import type { LlamaEngine, LlamaGrammarEvaluationState, SequenceLease, Token, TokenBias } from './engine.js';
import type { RequestMeter } from './meter.js';
import { parseSampling, type Guided, type Sampling } from './sampling.js';
import { StopText } from './stop-text.js';
import {
  embeddingTensors,
  readVllmRequest,
  responseTensors,
  type LogprobEntry,
  type VllmOutputPlan,
  type VllmRequest,
} from './vllm-interface.js';

/** The log prob of a token the sampler could not pick (OpenAI's convention for it). */
const NEVER_LOGPROB = -9999;

const logOf = (p: number | undefined): number =>
  p === undefined || !(p > 0) ? NEVER_LOGPROB : Math.max(NEVER_LOGPROB, Math.log(p));

/** The grammar for a request's guided decoding; a schema or GBNF llama.cpp refuses is the client's fault. */
async function grammarFor(
  engine: LlamaEngine,
  guided: Guided | undefined,
): Promise<LlamaGrammarEvaluationState | undefined> {
  if (guided === undefined) return undefined;
  try {
    return guided.kind === 'json'
      ? await engine.jsonGrammar(guided.schema)
      : await engine.gbnfGrammar(guided.text);
  } catch (err) {
    const what = guided.kind === 'json' ? 'JSON schema' : 'GBNF grammar';
    throw invalidArg(
      `sampling_parameters: 'guided_decoding': llama.cpp cannot use this ${what}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** Tokens the repetition penalties look back over (llama.cpp's usual window). */
const PENALTY_WINDOW = 64;

/** The prompt and max_tokens must fit one sequence's context: llama.cpp would otherwise shift it. */
export function checkBudget(promptTokens: number, maxTokens: number, contextSize: number): void {
  if (promptTokens === 0) throw invalidArg('the prompt is empty');
  if (promptTokens >= contextSize) {
    throw invalidArg(
      `the prompt has ${promptTokens} tokens, over this model's context of ${contextSize} tokens per sequence`,
    );
  }
  if (promptTokens + maxTokens > contextSize) {
    throw invalidArg(
      `max_tokens ${maxTokens} is over the limit: the prompt has ${promptTokens} tokens and this model's context holds ${contextSize} per sequence, so at most ${contextSize - promptTokens} can be generated`,
    );
  }
}

/** What llama.cpp's sampler takes from either interface's request. */
export interface SamplerSettings {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly minP?: number;
  readonly seed: number | undefined;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
}

/** Grammar and token bias for one request (structured output, min_length, bad words). */
export interface Constraints {
  readonly grammar?: LlamaGrammarEvaluationState;
  readonly tokenBias?: () => TokenBias;
}

export function evaluateOptions(
  s: SamplerSettings,
  prompt: readonly Token[],
  generated: Token[],
  constraints: Constraints = {},
) {
  const penalised = s.presencePenalty !== 0 || s.frequencyPenalty !== 0 || s.repetitionPenalty !== 1;
  return {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP ?? 0,
    ...(s.seed !== undefined && { seed: s.seed }),
    // The EOS token is seen here, so ignore_eos can go on past it and the reason to stop is known.
    yieldEogToken: true,
    ...(constraints.grammar !== undefined && { grammarEvaluationState: constraints.grammar }),
    ...(constraints.tokenBias !== undefined && { tokenBias: constraints.tokenBias }),
    ...(penalised && {
      repeatPenalty: {
        // vLLM's repetition penalty covers the prompt too; presence and frequency only the output.
        punishTokens: (): Token[] =>
          (s.repetitionPenalty !== 1 ? [...prompt, ...generated] : generated).slice(-PENALTY_WINDOW),
        maxPunishTokens: PENALTY_WINDOW,
        penalty: s.repetitionPenalty,
        frequencyPenalty: s.frequencyPenalty,
        presencePenalty: s.presencePenalty,
      },
    }),
  };
}

export interface GenerationHost {
  readonly engine: LlamaEngine;
  readonly plan: VllmOutputPlan;
}

/** Runs one request to its end; never rejects (failures end the request instead). */
export async function generate(
  req: BackendRequest,
  host: GenerationHost,
  stopSignal: AbortSignal,
  decoupled: boolean,
): Promise<void> {
  const { sender } = req;
  const signal = AbortSignal.any([req.signal, stopSignal]);
  const held: Held = {};
  try {
    const request = readVllmRequest(req, host.plan);
    if (request.stream && !decoupled) {
      throw invalidArg('streaming needs a decoupled model (model_transaction_policy { decoupled: true })');
    }
    if (host.plan.embedding !== undefined) {
      await embed(req, host.engine, host.plan.embedding, request.prompt, signal);
    } else {
      await run(req, host, request, signal, held);
    }
    // Both end the request unless it was cancelled or the instance stopped.
    if (!sender.done) throw stopSignal.aborted ? stopSignal.reason : cancelled('request was cancelled');
  } catch (err) {
    if (!sender.done) {
      const reason: unknown = stopSignal.aborted ? stopSignal.reason : err;
      sender.fail(NereidError.from(reason));
    }
  } finally {
    held.meter?.end();
    if (held.lease !== undefined) await host.engine.release(held.lease, held.clean).catch(() => {});
  }
}

/** What a request holds of the engine, given back by generate() however the request ends. */
interface Held {
  meter?: RequestMeter;
  lease?: SequenceLease;
  /** The sequence's evaluation ended without an error, so its tokens can stay cached. */
  clean?: boolean;
}

/** A generation request: its sampling, grammar and sequence. */
async function run(
  req: BackendRequest,
  host: GenerationHost,
  request: VllmRequest,
  signal: AbortSignal,
  held: Held,
): Promise<void> {
  const sampling = parseSampling(request.samplingJson, host.engine.options.defaultMaxTokens);
  if (sampling.logprobs !== undefined && !host.plan.logprobs) {
    throw invalidArg(
      "sampling_parameters: 'logprobs' needs a BYTES output 'logprobs' in the model config (docs/llm.md)",
    );
  }
  const prompt = host.engine.tokenize(request.prompt);
  checkBudget(prompt.length, sampling.maxTokens, host.engine.contextSize);
  const grammar = await grammarFor(host.engine, sampling.guided);
  const meter = (held.meter = host.engine.meter(prompt.length));
  const { lease, rest } = await host.engine.acquire(signal, prompt);
  held.lease = lease;
  await decode(req, host.engine, lease, rest, request, sampling, prompt, signal, meter, grammar);
  held.clean = true;
}

async function decode(
  req: BackendRequest,
  engine: LlamaEngine,
  lease: SequenceLease,
  toEvaluate: readonly Token[],
  request: VllmRequest,
  sampling: Sampling,
  prompt: readonly Token[],
  signal: AbortSignal,
  meter: RequestMeter,
  grammar: LlamaGrammarEvaluationState | undefined,
): Promise<void> {
  const { sender } = req;
  const generated: Token[] = [];
  const topN = sampling.logprobs;
  /** Log probs of the tokens not yet sent (streaming) or of every token (one response). */
  let entries: LogprobEntry[] = [];
  const stop = new StopText(sampling.stop);
  const detokenizer = engine.textOf();
  // Like vLLM's backend, the prompt leads the first response unless exclude_input_in_output.
  let prefix = request.excludeInputInOutput ? '' : request.prompt;
  let text = '';
  let unsentTokens = 0;
  let finishReason: 'stop' | 'length' = 'length';
  const counts = (outputTokens: number) => ({ inputTokens: prompt.length, outputTokens });
  const logprobs = (): LogprobEntry[] | undefined => (topN === undefined ? undefined : entries);

  // The prompt's tokens after those the sequence already holds (engine.acquire).
  const steps = lease.sequence.evaluateWithMetadata(
    [...toEvaluate],
    { probabilities: topN !== undefined },
    evaluateOptions(sampling, prompt, generated, grammar === undefined ? {} : { grammar }),
  );
  for await (const step of steps) {
    const token = step.token;
    if (signal.aborted) break;
    if (engine.isEndOfGeneration(token) && !sampling.ignoreEos) {
      finishReason = 'stop';
      break;
    }
    if (topN !== undefined) {
      const probabilities = (step as { probabilities?: Map<Token, number> }).probabilities;
      const previous = generated.length > 0 ? generated[generated.length - 1] : prompt[prompt.length - 1];
      entries.push(logprobEntry(engine, token, previous, probabilities, topN));
    }
    generated.push(token);
    meter.token();
    unsentTokens++;
    const piece = stop.push(detokenizer.push(token));
    text += piece;
    if (request.stream && piece !== '') {
      await sender.whenWritable?.();
      if (sender.done || signal.aborted) break;
      sender.send(responseTensors(request, prefix + piece, counts(unsentTokens), undefined, logprobs()), {
        final: false,
      });
      prefix = '';
      unsentTokens = 0;
      entries = [];
    }
    if (stop.done) {
      finishReason = 'stop';
      break;
    }
    if (generated.length >= sampling.maxTokens) break;
  }
  if (signal.aborted || sender.done) return;
  // A character still incomplete at the end reads as U+FFFD, and may yet complete a stop string.
  const rest = stop.push(detokenizer.flush()) + stop.flush();
  if (stop.done) finishReason = 'stop';
  text += rest;
  if (!request.stream) {
    sender.send(responseTensors(request, prefix + text, counts(generated.length), finishReason, logprobs()), {
      final: true,
    });
  } else if (rest === '' && prefix === '' && unsentTokens === 0 && !request.returnFinishReason) {
    sender.send([], { final: true });
  } else {
    sender.send(responseTensors(request, prefix + rest, counts(unsentTokens), finishReason, logprobs()), {
      final: true,
    });
  }
}

/** One step's log probs: the sampled token's and the `topN` most likely (the map is sorted, highest first). */
function logprobEntry(
  engine: LlamaEngine,
  token: Token,
  previous: Token | undefined,
  probabilities: Map<Token, number> | undefined,
  topN: number,
): LogprobEntry {
  const top: { id: number; token: string; logprob: number }[] = [];
  if (probabilities !== undefined && topN > 0) {
    for (const [t, p] of probabilities) {
      if (top.length >= topN) break;
      top.push({ id: t, token: engine.tokenText(t, previous), logprob: logOf(p) });
    }
  }
  return {
    id: token,
    token: engine.tokenText(token, previous),
    logprob: logOf(probabilities?.get(token)),
    top,
  };
}

/** An embedding model's request: the prompt's pooled vector, in one response. */
async function embed(
  req: BackendRequest,
  engine: LlamaEngine,
  output: string,
  text: string,
  signal: AbortSignal,
): Promise<void> {
  const tokens = engine.tokenize(text);
  if (tokens.length === 0) throw invalidArg('the input is empty');
  if (tokens.length > engine.contextSize) {
    throw invalidArg(
      `the input has ${tokens.length} tokens, over this model's context of ${engine.contextSize} tokens`,
    );
  }
  const vector = await engine.embed(tokens);
  if (signal.aborted || req.sender.done) return;
  req.sender.send(embeddingTensors(output, vector, tokens.length), { final: true });
}
