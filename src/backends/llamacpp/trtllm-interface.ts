/**
 * The tensor interface of TensorRT-LLM's `tensorrt_llm` model (Triton's tensorrtllm_backend), so a
 * repository laid out like `inflight_batcher_llm` (preprocessing → tensorrt_llm → postprocessing, or the
 * `tensorrt_llm_bls` model) runs with only this model's backend changed to `llamacpp`. Token ids in,
 * token ids out: `input_ids` (INT32 [-1]), `input_lengths`, `request_output_len`, `end_id`, `pad_id`,
 * `streaming`, the sampling inputs (`temperature`, `runtime_top_k`, `runtime_top_p`, `random_seed`,
 * `repetition_penalty`, `presence_penalty`, `frequency_penalty`, `min_length`; newer TensorRT-LLM's names
 * `seed` and `min_tokens` too), `stop_words_list` /
 * `bad_words_list` (TensorRT-LLM's [2, -1] layout: the ids of every word one after another, then each
 * word's end offset, padded with -1), `return_log_probs`, `num_return_sequences` → `output_ids`,
 * `sequence_length`, `cum_log_probs`, `output_log_probs`.
 *
 * Inputs this engine cannot honour on a CPU — LoRA, draft models (speculative decoding), encoder inputs,
 * p-tuning tables, beam search, logits outputs, several sequences per request — are refused with a 400
 * naming them when a request sets them to anything but their neutral value: never silently ignored.
 * A model picks this interface by declaring an `input_ids` input (docs/llm.md).
 */
import type { BackendRequest } from '../../backend-api/backend.js';
import { invalidArg } from '../../common/errors.js';
import { elementCount, type Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { Token } from './engine.js';

export interface TrtRequest {
  readonly inputIds: readonly Token[];
  readonly outputLen: number;
  /** undefined: the model's own end-of-generation tokens end the text. */
  readonly endId: number | undefined;
  readonly streaming: boolean;
  readonly temperature: number;
  /** 0 = off. */
  readonly topK: number;
  readonly topP: number;
  readonly seed: number | undefined;
  readonly repetitionPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly minLength: number;
  readonly stopWords: readonly (readonly Token[])[];
  readonly badWords: readonly (readonly Token[])[];
  readonly returnLogProbs: boolean;
  readonly excludeInputInOutput: boolean;
}

/** How a model's config shapes this interface: batch dimension, declared outputs, config parameters. */
export interface TrtPlan {
  readonly batched: boolean;
  readonly outputs: ReadonlySet<string>;
  /** The config parameter `exclude_input_in_output` (as TensorRT-LLM's model reads it). */
  readonly excludeInputInOutput: boolean;
}

export function usesTrtInterface(config: FrozenModelConfig): boolean {
  return config.input.some((i) => i.name === 'input_ids');
}

export function trtPlan(config: FrozenModelConfig): TrtPlan {
  const p = config.parameters.exclude_input_in_output?.string_value?.trim().toLowerCase();
  return {
    batched: config.max_batch_size > 0,
    outputs: new Set(config.output.map((o) => o.name)),
    excludeInputInOutput: p === 'true' || p === '1',
  };
}

/** Every element of a numeric or BOOL tensor as a number (INT64/UINT64 through BigInt). */
export function numbersOf(t: Tensor): number[] {
  const n = elementCount(t.shape);
  const out = new Array<number>(n);
  const d = t.data;
  const at = (size: number): void => {
    if (d.length < n * size) throw invalidArg(`input '${t.name}' holds fewer bytes than its shape`);
  };
  switch (t.datatype) {
    case 'BOOL':
    case 'UINT8':
      at(1);
      for (let i = 0; i < n; i++) out[i] = d[i];
      return out;
    case 'INT8':
      at(1);
      for (let i = 0; i < n; i++) out[i] = d.readInt8(i);
      return out;
    case 'INT16':
      at(2);
      for (let i = 0; i < n; i++) out[i] = d.readInt16LE(2 * i);
      return out;
    case 'UINT16':
      at(2);
      for (let i = 0; i < n; i++) out[i] = d.readUInt16LE(2 * i);
      return out;
    case 'INT32':
      at(4);
      for (let i = 0; i < n; i++) out[i] = d.readInt32LE(4 * i);
      return out;
    case 'UINT32':
      at(4);
      for (let i = 0; i < n; i++) out[i] = d.readUInt32LE(4 * i);
      return out;
    case 'INT64':
      at(8);
      for (let i = 0; i < n; i++) out[i] = Number(d.readBigInt64LE(8 * i));
      return out;
    case 'UINT64':
      at(8);
      for (let i = 0; i < n; i++) out[i] = Number(d.readBigUInt64LE(8 * i));
      return out;
    case 'FP32':
      at(4);
      for (let i = 0; i < n; i++) out[i] = d.readFloatLE(4 * i);
      return out;
    case 'FP64':
      at(8);
      for (let i = 0; i < n; i++) out[i] = d.readDoubleLE(8 * i);
      return out;
    default:
      throw invalidArg(`input '${t.name}' must be a number or a bool, not ${t.datatype}`);
  }
}

/** Inputs honoured by name; everything else a request sends is checked against REFUSED. */
const HONOURED = new Set([
  'input_ids',
  'input_lengths',
  'request_output_len',
  'end_id',
  'pad_id',
  'streaming',
  'temperature',
  'runtime_top_k',
  'runtime_top_p',
  'random_seed',
  'repetition_penalty',
  'presence_penalty',
  'frequency_penalty',
  'min_length',
  'min_tokens',
  'seed',
  'stop_words_list',
  'bad_words_list',
  'return_log_probs',
  'num_return_sequences',
  'exclude_input_in_output',
]);

/**
 * Inputs TensorRT-LLM knows that this engine cannot honour, each with whether a value is the neutral one
 * (which changes nothing, so it is accepted) and why a real value is refused.
 */
const REFUSED: Readonly<Record<string, { neutral: (v: number[]) => boolean; why: string }>> = (() => {
  const none = (): boolean => false;
  const empty = (v: number[]): boolean => v.length === 0;
  const allZero = (v: number[]): boolean => v.every((x) => x === 0);
  const oneOrLess = (v: number[]): boolean => v.every((x) => x <= 1);
  const lora = { neutral: none, why: 'LoRA adapters are not supported by the llamacpp backend' };
  const draft = {
    neutral: empty,
    why: 'draft models (speculative decoding) are not supported by the llamacpp backend',
  };
  const beam = { neutral: allZero, why: 'beam search options need beam_width > 1, which is not supported' };
  const logits = {
    neutral: allZero,
    why: 'logits outputs are not supported by the llamacpp backend (use return_log_probs)',
  };
  return {
    lora_task_id: lora,
    lora_weights: lora,
    lora_config: lora,
    draft_input_ids: draft,
    draft_logits: draft,
    draft_acceptance_threshold: draft,
    // inflight_batcher_llm's preprocessing sends a decoder-only model one pad token of length 1 here.
    decoder_input_ids: { neutral: (v) => v.length <= 1, why: 'encoder-decoder models are not supported' },
    decoder_input_lengths: { neutral: oneOrLess, why: 'encoder-decoder models are not supported' },
    encoder_input_features: { neutral: empty, why: 'encoder-decoder models are not supported' },
    encoder_output_lengths: { neutral: empty, why: 'encoder-decoder models are not supported' },
    prompt_embedding_table: { neutral: empty, why: 'p-tuning prompt tables are not supported' },
    prompt_vocab_size: { neutral: allZero, why: 'p-tuning prompt tables are not supported' },
    embedding_bias: { neutral: allZero, why: 'embedding_bias is not supported' },
    prompt_table_extra_ids: { neutral: empty, why: 'p-tuning prompt tables are not supported' },
    return_perf_metrics: { neutral: allZero, why: 'perf metrics outputs are not reported' },
    guided_decoding_guide_type: {
      neutral: empty,
      why: 'guided decoding through this interface is not supported (the vLLM interface and /v1 take a JSON schema)',
    },
    guided_decoding_guide: {
      neutral: empty,
      why: 'guided decoding through this interface is not supported (the vLLM interface and /v1 take a JSON schema)',
    },
    beam_width: {
      neutral: oneOrLess,
      why: 'beam_width > 1 (beam search) is not supported by the llamacpp backend',
    },
    len_penalty: beam,
    early_stopping: beam,
    beam_search_diversity_rate: beam,
    return_context_logits: logits,
    return_generation_logits: logits,
    return_kv_cache_reuse_stats: { neutral: allZero, why: 'KV-cache reuse statistics are not reported' },
    runtime_top_p_min: { neutral: allZero, why: 'top-p decay is not supported' },
    runtime_top_p_decay: { neutral: allZero, why: 'top-p decay is not supported' },
    runtime_top_p_reset_ids: { neutral: allZero, why: 'top-p decay is not supported' },
    stop: { neutral: allZero, why: "the 'stop' flag (stop a running request) is not supported" },
  };
})();

/** The one value of an input that must hold one element per request. */
function single(req: BackendRequest, name: string): number | undefined {
  const t = req.inputs.get(name);
  if (t === undefined) return undefined;
  const v = numbersOf(t);
  if (v.length === 0) return undefined;
  if (v.length !== 1) throw invalidArg(`input '${name}' must hold one value per request, got ${v.length}`);
  return v[0];
}

function ranged(
  req: BackendRequest,
  name: string,
  min: number,
  max: number,
  integer = false,
): number | undefined {
  const v = single(req, name);
  if (v === undefined) return undefined;
  if (!Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    throw invalidArg(`input '${name}' must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  }
  return v;
}

/** TensorRT-LLM's word lists: [2, L] (or [1, 2, L]): ids of every word, then each word's end offset. */
export function wordList(t: Tensor | undefined, name: string, vocabSize: number): Token[][] {
  if (t === undefined) return [];
  const values = numbersOf(t);
  if (values.length === 0) return [];
  if (values.length % 2 !== 0 || t.shape[t.shape.length - 2] !== 2) {
    throw invalidArg(`input '${name}' must have shape [2, L]: token ids, then each word's end offset`);
  }
  const len = values.length / 2;
  const ids = values.slice(0, len);
  const offsets = values.slice(len);
  const words: Token[][] = [];
  let start = 0;
  for (const end of offsets) {
    if (end < 0) break;
    if (!Number.isInteger(end) || end < start || end > len) {
      throw invalidArg(`input '${name}': offset ${end} is out of order or past the ${len} ids`);
    }
    const word = ids.slice(start, end);
    if (word.some((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize)) {
      throw invalidArg(`input '${name}': a token id is not in this model's vocabulary of ${vocabSize}`);
    }
    if (word.length > 0) words.push(word as Token[]);
    start = end;
  }
  return words;
}

/** Reads one request of the TensorRT-LLM interface; every problem is a 400 naming the input. */
export function readTrtRequest(req: BackendRequest, plan: TrtPlan, vocabSize: number): TrtRequest {
  if (req.batchSize !== 1) {
    throw invalidArg(
      `a request holds ${req.batchSize} sequences; the llamacpp backend takes one per request (send them as separate requests: they are decoded together)`,
    );
  }
  for (const [name, t] of req.inputs) {
    if (HONOURED.has(name)) continue;
    const refusal = Object.hasOwn(REFUSED, name) ? REFUSED[name] : undefined;
    if (refusal === undefined) {
      throw invalidArg(`input '${name}' is not supported by the llamacpp backend's TensorRT-LLM interface`);
    }
    const values = t.datatype === 'BYTES' ? (t.data.length === 0 ? [] : [1]) : numbersOf(t);
    if (!refusal.neutral(values)) throw invalidArg(`input '${name}': ${refusal.why}`);
  }
  const idsTensor = req.inputs.get('input_ids');
  if (idsTensor === undefined) throw invalidArg("input 'input_ids' is required");
  const ids = numbersOf(idsTensor);
  const length = ranged(req, 'input_lengths', 0, ids.length, true) ?? ids.length;
  const inputIds = ids.slice(0, length);
  if (inputIds.length === 0) throw invalidArg("input 'input_ids' is empty");
  if (inputIds.some((id) => id < 0 || id >= vocabSize)) {
    throw invalidArg(`input 'input_ids' holds a token id outside this model's vocabulary of ${vocabSize}`);
  }
  const outputLen = ranged(req, 'request_output_len', 1, 1 << 24, true);
  if (outputLen === undefined) throw invalidArg("input 'request_output_len' is required");
  const sequences = ranged(req, 'num_return_sequences', 0, 1 << 10, true);
  if (sequences !== undefined && sequences > 1) {
    throw invalidArg(
      "input 'num_return_sequences': only one sequence per request is supported by the llamacpp backend",
    );
  }
  const endId = ranged(req, 'end_id', -1, vocabSize - 1, true);
  ranged(req, 'pad_id', -1, 2 ** 31 - 1, true); // checked; beam width 1 needs no padding
  const topK = ranged(req, 'runtime_top_k', 0, 1 << 20, true) ?? 0;
  const topP = ranged(req, 'runtime_top_p', 0, 1) ?? 0;
  const temperature = ranged(req, 'temperature', 0, 100) ?? 1;
  const seed =
    ranged(req, 'random_seed', 0, Number.MAX_SAFE_INTEGER, true) ??
    ranged(req, 'seed', 0, Number.MAX_SAFE_INTEGER, true);
  const exclude = single(req, 'exclude_input_in_output');
  return {
    inputIds: inputIds as Token[],
    outputLen,
    endId: endId === undefined || endId < 0 ? undefined : endId,
    streaming: (single(req, 'streaming') ?? 0) !== 0,
    // TensorRT-LLM samples greedily unless top_k or top_p asks otherwise.
    temperature: topK === 0 && topP === 0 ? 0 : temperature,
    topK,
    topP: topP === 0 ? 1 : topP,
    // llama.cpp takes a 32-bit seed: the uint64 is taken modulo 2^32.
    seed: seed === undefined ? undefined : seed % 2 ** 32,
    repetitionPenalty: ranged(req, 'repetition_penalty', 0.01, 10) ?? 1,
    presencePenalty: ranged(req, 'presence_penalty', -2, 2) ?? 0,
    frequencyPenalty: ranged(req, 'frequency_penalty', -2, 2) ?? 0,
    minLength:
      ranged(req, 'min_length', 0, 1 << 24, true) ?? ranged(req, 'min_tokens', 0, 1 << 24, true) ?? 0,
    stopWords: wordList(req.inputs.get('stop_words_list'), 'stop_words_list', vocabSize),
    badWords: wordList(req.inputs.get('bad_words_list'), 'bad_words_list', vocabSize),
    returnLogProbs: (single(req, 'return_log_probs') ?? 0) !== 0,
    excludeInputInOutput: exclude === undefined ? plan.excludeInputInOutput : exclude !== 0,
  };
}

function int32s(name: string, shape: number[], values: readonly number[]): Tensor {
  const data = Buffer.allocUnsafe(4 * values.length);
  values.forEach((v, i) => data.writeInt32LE(v, 4 * i));
  return { name, datatype: 'INT32', shape, data };
}

function fp32s(name: string, shape: number[], values: readonly number[]): Tensor {
  const data = Buffer.allocUnsafe(4 * values.length);
  values.forEach((v, i) => data.writeFloatLE(v, 4 * i));
  return { name, datatype: 'FP32', shape, data };
}

/**
 * One response: `ids` as output_ids [batch?, beam 1, n] with sequence_length n, and the log probs
 * (zeros unless the request asked for them, as TensorRT-LLM sends them) when the config declares them.
 */
export function trtResponse(plan: TrtPlan, ids: readonly number[], logProbs: readonly number[]): Tensor[] {
  const lead = plan.batched ? [1, 1] : [1];
  const out: Tensor[] = [int32s('output_ids', [...lead, ids.length], ids)];
  if (plan.outputs.has('sequence_length')) out.push(int32s('sequence_length', lead, [ids.length]));
  if (plan.outputs.has('cum_log_probs')) {
    out.push(fp32s('cum_log_probs', lead, [logProbs.reduce((a, b) => a + b, 0)]));
  }
  if (plan.outputs.has('output_log_probs')) {
    out.push(fp32s('output_log_probs', [...lead, logProbs.length], logProbs));
  }
  return out;
}
