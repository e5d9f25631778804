/**
 * The OpenAI request bodies, checked and reduced to what the frontend uses. A body is hostile JSON: every
 * field is type- and range-checked here, a wrong one is a 400 naming it (OpenAI's `param`), and options
 * this server cannot honour (n > 1, logit_bias, logprobs, tools, suffix) are refused rather than ignored,
 * as Triton's OpenAI frontend refuses them. Unknown keys with scalar values (vLLM's `ignore_eos`, a
 * model's own knobs, sent with the clients' `extra_body`) travel on to the model's sampling parameters.
 */
import { badRequest } from './errors.js';

export type SamplingValue = string | number | boolean | readonly (string | number | boolean)[];

export interface GenerationOptions {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** undefined: the server's default (--openai-default-max-tokens). */
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly seed?: number;
  readonly frequencyPenalty?: number;
  readonly presencePenalty?: number;
  readonly stop: readonly string[];
  /** Other scalar keys, passed to the model's sampling parameters as they are. */
  readonly extra: Readonly<Record<string, SamplingValue>>;
}

export interface CompletionRequest extends GenerationOptions {
  readonly prompt: string;
  readonly echo: boolean;
}

export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  readonly name?: string;
}

export interface ChatRequest extends GenerationOptions {
  readonly messages: readonly ChatMessage[];
}

export interface EmbeddingRequest {
  readonly model: string;
  readonly input: readonly string[];
  readonly encodingFormat: 'float' | 'base64';
}

type Doc = Record<string, unknown>;

/** Largest number of stop sequences, as in OpenAI's API. */
const MAX_STOP = 4;
/** Largest number of strings in one embeddings request (OpenAI allows 2048). */
export const MAX_EMBEDDING_INPUTS = 2048;
/**
 * Largest number of messages in one chat request, and of characters in all their contents: a client's
 * request past them is refused with 400 before the chat template runs (200k messages or a 10 M-character
 * message otherwise reached the template sandbox and came back as its 500, issue 33). The characters leave
 * room under the sandbox's 8 Mi-character prompt for the template's own text.
 */
export const MAX_CHAT_MESSAGES = 4096;
export const MAX_CHAT_CHARACTERS = 4 * 1024 * 1024;

/** Keys the frontend reads itself (or refuses); the rest may travel to the model. */
const KNOWN = new Set([
  'model',
  'prompt',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'stop',
  'echo',
  'n',
  'best_of',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'suffix',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'parallel_tool_calls',
  'user',
  'store',
  'metadata',
  'response_format',
  'service_tier',
]);

export function parseJsonBody(body: Buffer): Doc {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw badRequest(
      `the request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw badRequest('the request body must be a JSON object');
  }
  return doc as Doc;
}

const present = (doc: Doc, key: string): boolean => doc[key] !== undefined && doc[key] !== null;

function str(doc: Doc, key: string, required: true): string;
function str(doc: Doc, key: string, required?: false): string | undefined;
function str(doc: Doc, key: string, required = false): string | undefined {
  if (!present(doc, key)) {
    if (required) throw badRequest(`'${key}' is a required property`, key);
    return undefined;
  }
  if (typeof doc[key] !== 'string') throw badRequest(`'${key}' must be a string`, key);
  return doc[key];
}

function bool(doc: Doc, key: string): boolean | undefined {
  if (!present(doc, key)) return undefined;
  if (typeof doc[key] !== 'boolean') throw badRequest(`'${key}' must be a boolean`, key);
  return doc[key];
}

function num(doc: Doc, key: string, min: number, max: number, integer = false): number | undefined {
  if (!present(doc, key)) return undefined;
  const v = doc[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isSafeInteger(v))) {
    throw badRequest(`'${key}' must be ${integer ? 'an integer' : 'a number'}`, key);
  }
  if (v < min || v > max) throw badRequest(`'${key}' must be between ${min} and ${max}, got ${v}`, key);
  return v;
}

function stopOf(doc: Doc): string[] {
  const v = doc.stop;
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string')) {
    throw badRequest("'stop' must be a string or a list of strings", 'stop');
  }
  if (list.length > MAX_STOP) throw badRequest(`'stop' takes at most ${MAX_STOP} sequences`, 'stop');
  return list.filter((s) => s !== '');
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function extraOf(doc: Doc): Record<string, SamplingValue> {
  const extra: Record<string, SamplingValue> = {};
  for (const [key, v] of Object.entries(doc)) {
    if (KNOWN.has(key) || v === null) continue;
    if (isScalar(v) || (Array.isArray(v) && v.every(isScalar))) extra[key] = v;
    else
      throw badRequest(`unsupported parameter '${key}': only scalar values can be passed to the model`, key);
  }
  return extra;
}

function refuseUnsupported(doc: Doc): void {
  const n = num(doc, 'n', 1, 128, true);
  if (n !== undefined && n > 1) {
    throw badRequest(`Received n=${n}, but only single choice (n=1) is currently supported`, 'n');
  }
  const bestOf = num(doc, 'best_of', 1, 128, true);
  if (bestOf !== undefined && bestOf > 1) {
    throw badRequest(
      `Received best_of=${bestOf}, but only single choice (best_of=1) is currently supported`,
      'best_of',
    );
  }
  if (present(doc, 'logit_bias')) throw badRequest('logit bias is not currently supported', 'logit_bias');
  const logprobs = doc.logprobs;
  if (logprobs === true || (typeof logprobs === 'number' && logprobs > 0) || present(doc, 'top_logprobs')) {
    throw badRequest('logprobs are not supported by this server', 'logprobs');
  }
  if (present(doc, 'suffix')) throw badRequest('suffix is not currently supported', 'suffix');
  for (const key of ['tools', 'functions']) {
    if (present(doc, key) && !(Array.isArray(doc[key]) && doc[key].length === 0)) {
      throw badRequest('tool and function calling are not supported by this server', key);
    }
  }
}

function generationOptions(
  doc: Doc,
  maxTokensKey: 'max_tokens' | 'max_completion_tokens',
): GenerationOptions {
  const model = str(doc, 'model', true);
  refuseUnsupported(doc);
  const stream = bool(doc, 'stream') ?? false;
  let includeUsage = false;
  if (present(doc, 'stream_options')) {
    const so = doc.stream_options;
    if (typeof so !== 'object' || so === null || Array.isArray(so)) {
      throw badRequest("'stream_options' must be an object", 'stream_options');
    }
    if (!stream)
      throw badRequest('`stream_options` can only be used when `stream` is True', 'stream_options');
    includeUsage = bool(so as Doc, 'include_usage') ?? false;
  }
  const maxTokens =
    num(doc, maxTokensKey, 1, 2 ** 31 - 1, true) ??
    (maxTokensKey === 'max_completion_tokens' ? num(doc, 'max_tokens', 1, 2 ** 31 - 1, true) : undefined);
  return {
    model,
    stream,
    includeUsage,
    ...(maxTokens !== undefined && { maxTokens }),
    ...optional('temperature', num(doc, 'temperature', 0, 2)),
    ...optional('topP', num(doc, 'top_p', 0, 1)),
    ...optional('seed', num(doc, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true)),
    ...optional('frequencyPenalty', num(doc, 'frequency_penalty', -2, 2)),
    ...optional('presencePenalty', num(doc, 'presence_penalty', -2, 2)),
    stop: stopOf(doc),
    extra: extraOf(doc),
  };
}

function optional<K extends string>(key: K, v: number | undefined): Partial<Record<K, number>> {
  return v === undefined ? {} : ({ [key]: v } as Record<K, number>);
}

export function parseCompletionRequest(doc: Doc): CompletionRequest {
  const options = generationOptions(doc, 'max_tokens');
  let prompt = doc.prompt;
  // A list holding one string is the same request; more than one would need n choices.
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') prompt = prompt[0];
  if (prompt === undefined || prompt === null) throw badRequest("'prompt' is a required property", 'prompt');
  if (typeof prompt !== 'string') throw badRequest('only single string input is supported', 'prompt');
  if (prompt === '') throw badRequest('prompt must be non-empty', 'prompt');
  return { ...options, prompt, echo: bool(doc, 'echo') ?? false };
}

/** A message's content as text: a string, or the text parts of a list of parts. */
function contentOf(content: unknown, i: number): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw badRequest(`messages[${i}].content must be a string or a list of parts`, 'messages');
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part !== 'object' || part === null)
      throw badRequest(`messages[${i}].content has a malformed part`, 'messages');
    const p = part as Doc;
    if (p.type !== 'text' || typeof p.text !== 'string') {
      throw badRequest(
        `messages[${i}].content: only text parts are supported, got '${String(p.type)}'`,
        'messages',
      );
    }
    texts.push(p.text);
  }
  return texts.join('\n');
}

export function parseChatRequest(doc: Doc): ChatRequest {
  const options = generationOptions(doc, 'max_completion_tokens');
  const raw = doc.messages;
  if (raw === undefined || raw === null) throw badRequest("'messages' is a required property", 'messages');
  if (!Array.isArray(raw) || raw.length === 0)
    throw badRequest("'messages' must be a non-empty list", 'messages');
  if (raw.length > MAX_CHAT_MESSAGES) {
    throw badRequest(
      `'messages' holds ${raw.length} messages, more than the ${MAX_CHAT_MESSAGES} a request may hold`,
      'messages',
    );
  }
  let characters = 0;
  const messages = raw.map((m: unknown, i): ChatMessage => {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) {
      throw badRequest(`messages[${i}] must be an object`, 'messages');
    }
    const d = m as Doc;
    if (typeof d.role !== 'string' || d.role === '')
      throw badRequest(`messages[${i}].role must be a string`, 'messages');
    const name = typeof d.name === 'string' ? d.name : undefined;
    const content = contentOf(d.content, i);
    characters += content.length + d.role.length + (name?.length ?? 0);
    if (characters > MAX_CHAT_CHARACTERS) {
      throw badRequest(
        `'messages' hold more than the ${MAX_CHAT_CHARACTERS} characters a request may hold`,
        'messages',
      );
    }
    return { role: d.role, content, ...(name !== undefined && { name }) };
  });
  return { ...options, messages };
}

export function parseEmbeddingRequest(doc: Doc): EmbeddingRequest {
  const model = str(doc, 'model', true);
  const raw = doc.input;
  if (raw === undefined || raw === null) throw badRequest("'input' is a required property", 'input');
  const input = typeof raw === 'string' ? [raw] : raw;
  if (
    !Array.isArray(input) ||
    input.length === 0 ||
    !input.every((s): s is string => typeof s === 'string')
  ) {
    throw badRequest(
      "'input' must be a string or a non-empty list of strings (token arrays are not supported)",
      'input',
    );
  }
  if (input.length > MAX_EMBEDDING_INPUTS) {
    throw badRequest(`'input' takes at most ${MAX_EMBEDDING_INPUTS} strings`, 'input');
  }
  if (input.some((s) => s === '')) throw badRequest("'input' strings must be non-empty", 'input');
  const format = str(doc, 'encoding_format') ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw badRequest("'encoding_format' must be 'float' or 'base64'", 'encoding_format');
  }
  if (present(doc, 'dimensions'))
    throw badRequest("'dimensions' is not supported by this server", 'dimensions');
  return { model, input, encodingFormat: format };
}
