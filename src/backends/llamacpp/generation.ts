/**
 * One request's generation: read the vLLM-interface inputs, check the prompt and max_tokens against the
 * context, wait for a sequence, then evaluate token by token and answer (one response per text piece when
 * streaming, one response at the end otherwise). The sequence is given back the moment the request ends:
 * finished, stopped, cancelled or failed. Every problem ends the request through its sender.
 */
import type { BackendRequest } from '../../backend-api/backend.js';
import { cancelled, invalidArg, NereidError } from '../../common/errors.js';
import type { LlamaEngine, LlamaGrammarEvaluationState, SequenceLease, Token, TokenBias } from './engine.js';
import type { RequestMeter } from './meter.js';
import { parseSampling, type Sampling } from './sampling.js';
import { StopText } from './stop-text.js';
import { readVllmRequest, responseTensors, type OutputPlan, type VllmRequest } from './vllm-interface.js';

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
  readonly plan: OutputPlan;
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
  let lease: SequenceLease | undefined;
  let meter: RequestMeter | undefined;
  try {
    const request = readVllmRequest(req, host.plan);
    if (request.stream && !decoupled) {
      throw invalidArg('streaming needs a decoupled model (model_transaction_policy { decoupled: true })');
    }
    const sampling = parseSampling(request.samplingJson, host.engine.options.defaultMaxTokens);
    const prompt = host.engine.tokenize(request.prompt);
    checkBudget(prompt.length, sampling.maxTokens, host.engine.contextSize);
    meter = host.engine.meter(prompt.length);
    lease = await host.engine.acquire(signal);
    await decode(req, host.engine, lease, request, sampling, prompt, signal, meter);
    // decode() ends the request unless it was cancelled or the instance stopped.
    if (!sender.done) throw stopSignal.aborted ? stopSignal.reason : cancelled('request was cancelled');
  } catch (err) {
    if (!sender.done) {
      const reason: unknown = stopSignal.aborted ? stopSignal.reason : err;
      sender.fail(NereidError.from(reason));
    }
  } finally {
    meter?.end();
    if (lease !== undefined) await host.engine.release(lease).catch(() => {});
  }
}

async function decode(
  req: BackendRequest,
  engine: LlamaEngine,
  lease: SequenceLease,
  request: VllmRequest,
  sampling: Sampling,
  prompt: readonly Token[],
  signal: AbortSignal,
  meter: RequestMeter,
): Promise<void> {
  const { sender } = req;
  const generated: Token[] = [];
  const stop = new StopText(sampling.stop);
  // Like vLLM's backend, the prompt leads the first response unless exclude_input_in_output.
  let prefix = request.excludeInputInOutput ? '' : request.prompt;
  let text = '';
  let unsentTokens = 0;
  let finishReason: 'stop' | 'length' = 'length';
  const counts = (outputTokens: number) => ({ inputTokens: prompt.length, outputTokens });

  for await (const token of lease.sequence.evaluate(
    [...prompt],
    evaluateOptions(sampling, prompt, generated),
  )) {
    if (signal.aborted) break;
    if (engine.isEndOfGeneration(token) && !sampling.ignoreEos) {
      finishReason = 'stop';
      break;
    }
    generated.push(token);
    meter.token();
    unsentTokens++;
    const piece = stop.update(engine.detokenize(generated));
    text += piece;
    if (request.stream && piece !== '') {
      await sender.whenWritable?.();
      if (sender.done || signal.aborted) break;
      sender.send(responseTensors(request, prefix + piece, counts(unsentTokens), undefined), {
        final: false,
      });
      prefix = '';
      unsentTokens = 0;
    }
    if (stop.done) {
      finishReason = 'stop';
      break;
    }
    if (generated.length >= sampling.maxTokens) break;
  }
  if (signal.aborted || sender.done) return;
  const rest = stop.flush();
  text += rest;
  if (!request.stream) {
    sender.send(responseTensors(request, prefix + text, counts(generated.length), finishReason), {
      final: true,
    });
  } else if (rest === '' && prefix === '' && unsentTokens === 0 && !request.returnFinishReason) {
    sender.send([], { final: true });
  } else {
    sender.send(responseTensors(request, prefix + rest, counts(unsentTokens), finishReason), { final: true });
  }
}
