/**
 * The engine settings of a llamacpp model: `model.json` in the version folder (or, failing that, in the
 * model folder), the way Triton's vLLM backend reads its engine arguments from one. Every key is checked;
 * an unknown key, a wrong type or a value out of range fails the load with a message naming the key, so
 * a typo never runs with a silent default. vLLM's names for the same settings are accepted too.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ModelFiles } from '../../backend-api/backend.js';
import { invalidArg } from '../../common/errors.js';

export interface LlamacppOptions {
  /** Tokens of context each sequence has (prompt + generated); llama.cpp may round it up. */
  readonly contextSize: number;
  /** Sequences decoded together in one context: requests beyond it wait in the queue. */
  readonly parallelSequences: number;
  /** CPU threads for evaluation; 0 = node-llama-cpp's default (the machine's math cores). */
  readonly threads: number;
  /** Tokens evaluated in one llama.cpp decode call, across every sequence. */
  readonly batchSize: number;
  /** Requests that may wait for a sequence; 0 = no bound (Triton's max_queue_size). */
  readonly maxQueueSize: number;
  /** max_tokens when a request names none (vLLM's default is 16). */
  readonly defaultMaxTokens: number;
  /**
   * A request takes the free sequence whose cached tokens share the longest prefix with its prompt and
   * evaluates only the rest (vLLM's `enable_prefix_caching`); false clears every sequence after use.
   */
  readonly prefixCaching: boolean;
}

export const DEFAULT_OPTIONS: LlamacppOptions = {
  contextSize: 2048,
  parallelSequences: 4,
  threads: 0,
  batchSize: 512,
  maxQueueSize: 0,
  defaultMaxTokens: 16,
  prefixCaching: true,
};

type IntegerField = {
  [K in keyof LlamacppOptions]: LlamacppOptions[K] extends number ? K : never;
}[keyof LlamacppOptions];

type KeySpec =
  | { readonly field: IntegerField; readonly min: number; readonly max: number }
  | { readonly field: 'prefixCaching'; readonly boolean: true };

const KEYS: Readonly<Record<string, KeySpec>> = {
  context_size: { field: 'contextSize', min: 16, max: 1 << 20 },
  max_model_len: { field: 'contextSize', min: 16, max: 1 << 20 },
  parallel_sequences: { field: 'parallelSequences', min: 1, max: 256 },
  max_num_seqs: { field: 'parallelSequences', min: 1, max: 256 },
  threads: { field: 'threads', min: 0, max: 1024 },
  batch_size: { field: 'batchSize', min: 1, max: 1 << 16 },
  max_num_batched_tokens: { field: 'batchSize', min: 1, max: 1 << 16 },
  max_queue_size: { field: 'maxQueueSize', min: 0, max: 1 << 20 },
  default_max_tokens: { field: 'defaultMaxTokens', min: 1, max: 1 << 20 },
  enable_prefix_caching: { field: 'prefixCaching', boolean: true },
};

/** Largest model.json read: engine settings are a few lines. */
const MAX_MODEL_JSON_BYTES = 64 * 1024;

/** Settings from a parsed model.json document (`where` names the file in messages). */
export function parseOptions(doc: unknown, where: string): LlamacppOptions {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw invalidArg(`${where} must be a JSON object`);
  }
  const out: { -readonly [K in keyof LlamacppOptions]: LlamacppOptions[K] } = { ...DEFAULT_OPTIONS };
  const seen = new Map<keyof LlamacppOptions, string>();
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const spec = Object.hasOwn(KEYS, key) ? KEYS[key] : undefined;
    if (spec === undefined) {
      throw invalidArg(`${where}: unknown key '${key}' (known: ${Object.keys(KEYS).join(', ')})`);
    }
    const earlier = seen.get(spec.field);
    if (earlier !== undefined) throw invalidArg(`${where}: '${key}' and '${earlier}' set the same thing`);
    seen.set(spec.field, key);
    if ('boolean' in spec) {
      if (typeof value !== 'boolean') throw invalidArg(`${where}: '${key}' must be true or false`);
      out[spec.field] = value;
      continue;
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || value < spec.min || value > spec.max) {
      throw invalidArg(`${where}: '${key}' must be an integer from ${spec.min} to ${spec.max}`);
    }
    out[spec.field] = value;
  }
  return out;
}

const isFile = async (p: string): Promise<boolean> =>
  (await stat(p).catch(() => undefined))?.isFile() === true;

/** Reads model.json from the version folder, else the model folder; defaults when neither has one. */
export async function readOptions(
  versionDir: string,
  modelDir: string,
  files?: ModelFiles,
): Promise<LlamacppOptions> {
  for (const dir of [versionDir, modelDir]) {
    const candidate = path.join(dir, 'model.json');
    const where = `${dir === versionDir ? path.basename(versionDir) + '/' : ''}model.json`;
    const file = files ? await files.check(candidate, where) : candidate;
    if (!(await isFile(file))) continue;
    const text = await readFile(file);
    if (text.length > MAX_MODEL_JSON_BYTES) {
      throw invalidArg(`${where} is larger than ${MAX_MODEL_JSON_BYTES} bytes`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text.toString('utf8'));
    } catch (err) {
      throw invalidArg(`${where} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    return parseOptions(doc, where);
  }
  return DEFAULT_OPTIONS;
}
