/**
 * One request of the TensorRT-LLM interface (trtllm-interface.ts): token ids in, token ids out, on the
 * same engine, sequences and queue as the vLLM interface. As TensorRT-LLM does: the text ends at
 * `end_id` (left out of the output; the model's own end-of-generation tokens when no end_id is given),
 * after a stop word (kept in the output) or after `request_output_len` tokens; `min_length` forbids the
 * end token until that many tokens exist; a bad word's last token is forbidden wherever the tokens before
 * it were just generated. Streaming sends each new token as it comes (output_ids of that token only) and a
 * flag-only final response; otherwise one response holds the prompt's ids (unless exclude_input_in_output)
 * followed by the generated ones. Log probs are the natural log of the sampled token's probability.
 */
import type { BackendRequest } from '../../backend-api/backend.js';
import { cancelled, invalidArg, NereidError } from '../../common/errors.js';
import type { LlamaEngine, SequenceLease, Token } from './engine.js';
import type { RequestMeter } from './meter.js';
import { checkBudget, evaluateOptions } from './generation.js';
import { readTrtRequest, trtResponse, type TrtPlan, type TrtRequest } from './trtllm-interface.js';

const endsWith = (seq: readonly Token[], word: readonly Token[]): boolean => {
  if (word.length > seq.length) return false;
  const off = seq.length - word.length;
  return word.every((t, i) => seq[off + i] === t);
};

/** Tokens the next step may not pick: the end token before min_length, each bad word's completion. */
function forbiddenNext(
  request: TrtRequest,
  generated: readonly Token[],
  endTokens: readonly Token[],
): Token[] {
  const out: Token[] = [];
  if (generated.length < request.minLength) out.push(...endTokens);
  for (const word of request.badWords) {
    if (endsWith(generated, word.slice(0, -1))) out.push(word[word.length - 1]);
  }
  return out;
}

/** Runs one request to its end; never rejects (failures end the request instead). */
export async function generateTrt(
  req: BackendRequest,
  engine: LlamaEngine,
  plan: TrtPlan,
  stopSignal: AbortSignal,
  decoupled: boolean,
): Promise<void> {
  const { sender } = req;
  const signal = AbortSignal.any([req.signal, stopSignal]);
  let lease: SequenceLease | undefined;
  let meter: RequestMeter | undefined;
  let clean = false;
  try {
    const request = readTrtRequest(req, plan, engine.vocabSize);
    if (request.streaming && !decoupled) {
      throw invalidArg('streaming needs a decoupled model (model_transaction_policy { decoupled: true })');
    }
    checkBudget(request.inputIds.length, request.outputLen, engine.contextSize);
    meter = engine.meter(request.inputIds.length);
    const acquired = await engine.acquire(signal, request.inputIds);
    lease = acquired.lease;
    await decodeTrt(req, engine, lease, acquired.rest, plan, request, signal, meter);
    clean = true;
    if (!sender.done) throw stopSignal.aborted ? stopSignal.reason : cancelled('request was cancelled');
  } catch (err) {
    if (!sender.done) sender.fail(NereidError.from(stopSignal.aborted ? stopSignal.reason : err));
  } finally {
    meter?.end();
    if (lease !== undefined) await engine.release(lease, clean).catch(() => {});
  }
}

async function decodeTrt(
  req: BackendRequest,
  engine: LlamaEngine,
  lease: SequenceLease,
  rest: readonly Token[],
  plan: TrtPlan,
  request: TrtRequest,
  signal: AbortSignal,
  meter: RequestMeter,
): Promise<void> {
  const { sender } = req;
  const prompt = request.inputIds;
  const generated: Token[] = [];
  const logProbs: number[] = [];
  const isEnd = (t: Token): boolean =>
    request.endId !== undefined ? t === request.endId : engine.isEndOfGeneration(t);
  const endTokens = request.endId !== undefined ? [request.endId as Token] : engine.endTokens;
  const constrained = request.minLength > 0 || request.badWords.length > 0;
  const options = evaluateOptions(request, prompt, generated, {
    ...(constrained && { tokenBias: () => engine.forbid(forbiddenNext(request, generated, endTokens)) }),
  });
  // `rest`: the prompt's tokens after those the sequence already holds (engine.acquire).
  const steps = lease.sequence.evaluateWithMetadata(
    [...rest],
    { confidence: request.returnLogProbs },
    options,
  );
  for await (const step of steps) {
    if (signal.aborted) break;
    const token = step.token;
    if (isEnd(token)) break;
    const confidence = (step as { confidence?: number }).confidence;
    const logProb = request.returnLogProbs && confidence !== undefined ? Math.log(confidence) : 0;
    generated.push(token);
    logProbs.push(logProb);
    meter.token();
    if (request.streaming) {
      await sender.whenWritable?.();
      if (sender.done || signal.aborted) break;
      sender.send(trtResponse(plan, [token], [logProb]), { final: false });
    }
    if (request.stopWords.some((w) => endsWith(generated, w))) break;
    if (generated.length >= request.outputLen) break;
  }
  if (signal.aborted || sender.done) return;
  if (request.streaming) {
    sender.send([], { final: true });
    return;
  }
  const ids = request.excludeInputInOutput ? generated : [...prompt, ...generated];
  sender.send(trtResponse(plan, ids, logProbs), { final: true });
}
