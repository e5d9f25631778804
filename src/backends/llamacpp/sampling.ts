/**
 * `sampling_parameters`, the JSON object of Triton's vLLM backend interface, read into what llama.cpp's
 * sampler takes. Defaults are vLLM's (temperature 1, top_p 1, top_k off, min_p 0, max_tokens 16 unless the
 * model.json says otherwise). A key Nereid does not know, a wrong type or a value out of range is a client
 * error naming the key: a request never runs with a parameter silently dropped. vLLM options that the
 * llama.cpp engine cannot honour (n > 1, best_of, beam search, logprobs) are refused the same way.
 */
import { invalidArg } from '../../common/errors.js';

export interface Sampling {
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP: number;
  /** 0 = off (vLLM's -1). */
  readonly topK: number;
  readonly minP: number;
  readonly seed: number | undefined;
  readonly stop: readonly string[];
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
  readonly ignoreEos: boolean;
}

/** Most stop strings one request may give, and their longest length. */
const MAX_STOP = 16;
const MAX_STOP_CHARS = 256;

/** Keys that vLLM knows and this engine refuses, with why. */
const REFUSED: Readonly<Record<string, (v: unknown) => string | undefined>> = {
  n: (v) => (v === 1 ? undefined : 'only one sequence per request (n=1) is supported'),
  best_of: (v) => (v === 1 ? undefined : 'best_of > 1 is not supported'),
  use_beam_search: (v) => (v === false ? undefined : 'beam search is not supported'),
  logprobs: (v) => (v === 0 || v === false ? undefined : 'logprobs are not supported yet'),
  prompt_logprobs: (v) => (v === 0 || v === false ? undefined : 'prompt logprobs are not supported'),
};

function number(p: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw invalidArg(`sampling_parameters: '${key}' must be a number from ${min} to ${max}`);
  }
  return v;
}

function integer(p: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = number(p, key, min, max);
  if (v !== undefined && !Number.isInteger(v)) {
    throw invalidArg(`sampling_parameters: '${key}' must be an integer`);
  }
  return v;
}

function stopList(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string')) {
    throw invalidArg("sampling_parameters: 'stop' must be a string or a list of strings");
  }
  if (list.length > MAX_STOP)
    throw invalidArg(`sampling_parameters: 'stop' takes at most ${MAX_STOP} strings`);
  if (list.some((s) => s.length > MAX_STOP_CHARS)) {
    throw invalidArg(`sampling_parameters: a 'stop' string is longer than ${MAX_STOP_CHARS} characters`);
  }
  return list.filter((s) => s !== '');
}

const KNOWN = new Set([
  'max_tokens',
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'seed',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'repetition_penalty',
  'ignore_eos',
  ...Object.keys(REFUSED),
]);

/** Reads the JSON text of `sampling_parameters` (undefined or '' = every default). */
export function parseSampling(json: string | undefined, defaultMaxTokens: number): Sampling {
  let p: Record<string, unknown> = {};
  if (json !== undefined && json.trim() !== '') {
    let doc: unknown;
    try {
      doc = JSON.parse(json);
    } catch {
      throw invalidArg('sampling_parameters is not valid JSON');
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
      throw invalidArg('sampling_parameters must be a JSON object');
    }
    p = doc as Record<string, unknown>;
  }
  for (const key of Object.keys(p)) {
    if (!KNOWN.has(key)) throw invalidArg(`sampling_parameters: unsupported parameter '${key}'`);
    const refuse = Object.hasOwn(REFUSED, key) ? REFUSED[key](p[key]) : undefined;
    if (refuse !== undefined) throw invalidArg(`sampling_parameters: '${key}': ${refuse}`);
  }
  const ignoreEos = p.ignore_eos;
  if (ignoreEos !== undefined && ignoreEos !== null && typeof ignoreEos !== 'boolean') {
    throw invalidArg("sampling_parameters: 'ignore_eos' must be a boolean");
  }
  const topK = integer(p, 'top_k', -1, 1 << 20);
  const seed = integer(p, 'seed', -(2 ** 31), 2 ** 32 - 1);
  return {
    maxTokens: integer(p, 'max_tokens', 1, 1 << 24) ?? defaultMaxTokens,
    temperature: number(p, 'temperature', 0, 100) ?? 1,
    topP: number(p, 'top_p', 0, 1) ?? 1,
    topK: topK === undefined || topK < 0 ? 0 : topK,
    minP: number(p, 'min_p', 0, 1) ?? 0,
    // llama.cpp takes a 32-bit unsigned seed.
    seed: seed === undefined ? undefined : seed >>> 0,
    stop: stopList(p.stop),
    presencePenalty: number(p, 'presence_penalty', -2, 2) ?? 0,
    frequencyPenalty: number(p, 'frequency_penalty', -2, 2) ?? 0,
    repetitionPenalty: number(p, 'repetition_penalty', 0.01, 10) ?? 1,
    ignoreEos: ignoreEos === true,
  };
}
