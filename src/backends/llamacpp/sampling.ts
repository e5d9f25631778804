/**
 * `sampling_parameters`, the JSON object of Triton's vLLM backend interface, read into what llama.cpp's
 * sampler takes. Defaults are vLLM's (temperature 1, top_p 1, top_k off, min_p 0, max_tokens 16 unless the
 * model.json says otherwise). A key Nereid does not know, a wrong type or a value out of range is a client
 * error naming the key: a request never runs with a parameter silently dropped. vLLM options that the
 * llama.cpp engine cannot honour (n > 1, best_of, beam search, prompt logprobs, regex-guided decoding)
 * are refused the same way.
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
  /** Structured output (vLLM's `guided_decoding`), or undefined for free text. */
  readonly guided: Guided | undefined;
  /** vLLM's `logprobs`: undefined = none; n = the sampled token's log prob and the n most likely. */
  readonly logprobs: number | undefined;
}

/**
 * vLLM's `guided_decoding` (its GuidedDecodingParams) as llama.cpp grammars honour it: `json` (a JSON
 * schema, object or text), `json_object: true` (any JSON object), `choice` (exactly one of a list of
 * strings), `grammar` (GBNF, llama.cpp's grammar language). `regex` is refused.
 */
export type Guided =
  | { readonly kind: 'json'; readonly schema: object | undefined }
  | { readonly kind: 'grammar'; readonly text: string };

/** Most top log probs one token may carry (vLLM's and OpenAI's bound is 20). */
export const MAX_LOGPROBS = 20;

/** Most stop strings one request may give, and their longest length. */
const MAX_STOP = 16;
const MAX_STOP_CHARS = 256;

/** Keys that vLLM knows and this engine refuses, with why. */
const REFUSED: Readonly<Record<string, (v: unknown) => string | undefined>> = {
  n: (v) => (v === 1 ? undefined : 'only one sequence per request (n=1) is supported'),
  best_of: (v) => (v === 1 ? undefined : 'best_of > 1 is not supported'),
  use_beam_search: (v) => (v === false ? undefined : 'beam search is not supported'),
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
  'guided_decoding',
  'logprobs',
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
    guided: guidedOf(p.guided_decoding),
    logprobs: logprobsOf(p.logprobs),
  };
}

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
/** Keywords node-llama-cpp's grammar would drop silently: refused so no answer breaks them unnoticed. */
const UNHONOURED = ['pattern', 'allOf', 'not', 'if', 'patternProperties', 'dependentSchemas'];
const MAX_SCHEMA_DEPTH = 64;

/**
 * A JSON schema in the form node-llama-cpp's grammar reads: `anyOf` as `oneOf` (for a grammar they are
 * the same language), an unknown `type` or a keyword it would ignore refused with the path to it.
 */
function llamaSchema(v: unknown, path: string, depth = 0): unknown {
  if (depth > MAX_SCHEMA_DEPTH) throw invalidArg(`guided_decoding: the JSON schema is nested too deeply`);
  if (Array.isArray(v)) return v.map((x, i) => llamaSchema(x, `${path}[${i}]`, depth + 1));
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const where = `${path}.${key}`;
    if (UNHONOURED.includes(key)) {
      throw invalidArg(
        `guided_decoding: '${where}': '${key}' is not supported by llama.cpp's JSON-schema grammar`,
      );
    }
    if (key === 'type') {
      const types = Array.isArray(value) ? value : [value];
      if (!types.every((t) => typeof t === 'string' && JSON_TYPES.has(t))) {
        throw invalidArg(`guided_decoding: '${where}' must name JSON types (${[...JSON_TYPES].join(', ')})`);
      }
    }
    // Inside `properties` and `$defs` the keys are names, not keywords.
    const named = key === 'properties' || key === '$defs' || key === 'definitions';
    out[key === 'anyOf' ? 'oneOf' : key] =
      named && typeof value === 'object' && value !== null && !Array.isArray(value)
        ? Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([k, x]) => [
              k,
              llamaSchema(x, `${where}.${k}`, depth + 1),
            ]),
          )
        : llamaSchema(value, where, depth + 1);
  }
  return out;
}

function logprobsOf(v: unknown): number | undefined {
  if (v === undefined || v === null || v === false) return undefined;
  if (v === true) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_LOGPROBS) {
    throw invalidArg(`sampling_parameters: 'logprobs' must be an integer from 0 to ${MAX_LOGPROBS}`);
  }
  return v;
}

const GUIDED_KEYS = new Set([
  'json',
  'json_object',
  'choice',
  'grammar',
  'regex',
  'backend',
  'whitespace_pattern',
]);

function guidedOf(v: unknown): Guided | undefined {
  if (v === undefined || v === null) return undefined;
  const where = "sampling_parameters: 'guided_decoding'";
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArg(`${where} must be an object`);
  const g = v as Record<string, unknown>;
  for (const key of Object.keys(g)) {
    if (!GUIDED_KEYS.has(key)) throw invalidArg(`${where}: unsupported key '${key}'`);
  }
  if (g.regex !== undefined && g.regex !== null) {
    throw invalidArg(`${where}: 'regex' is not supported by llama.cpp grammars (use 'json' or 'grammar')`);
  }
  if (g.whitespace_pattern !== undefined && g.whitespace_pattern !== null) {
    throw invalidArg(`${where}: 'whitespace_pattern' is not supported`);
  }
  const given = ['json', 'json_object', 'choice', 'grammar'].filter(
    (k) => g[k] !== undefined && g[k] !== null && g[k] !== false,
  );
  if (given.length === 0) return undefined;
  if (given.length > 1) throw invalidArg(`${where}: give only one of ${given.join(', ')}`);
  switch (given[0]) {
    case 'json': {
      let schema = g.json;
      if (typeof schema === 'string') {
        try {
          schema = JSON.parse(schema);
        } catch {
          throw invalidArg(`${where}: 'json' is not a valid JSON schema text`);
        }
      }
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
        throw invalidArg(`${where}: 'json' must be a JSON schema object`);
      }
      return { kind: 'json', schema: llamaSchema(schema, 'json') as object };
    }
    case 'json_object':
      if (g.json_object !== true) throw invalidArg(`${where}: 'json_object' must be true`);
      return { kind: 'json', schema: undefined };
    case 'choice': {
      const c = g.choice;
      if (!Array.isArray(c) || c.length === 0 || !c.every((x): x is string => typeof x === 'string')) {
        throw invalidArg(`${where}: 'choice' must be a non-empty list of strings`);
      }
      // GBNF string literals escape like JSON's (quote, backslash, \n, \t).
      return { kind: 'grammar', text: `root ::= ${c.map((x) => JSON.stringify(x)).join(' | ')}` };
    }
    default:
      if (typeof g.grammar !== 'string' || g.grammar.trim() === '') {
        throw invalidArg(`${where}: 'grammar' must be GBNF text`);
      }
      return { kind: 'grammar', text: g.grammar };
  }
}
