/**
 * The OpenAI request bodies, checked and reduced to what the frontend uses. A body is hostile JSON: every
 * field is type- and range-checked here, a wrong one is a 400 naming it (OpenAI's `param`), and options
 * this server cannot honour (n > 1, logit_bias, suffix, the legacy `functions`) are refused rather than
 * ignored, as Triton's OpenAI frontend refuses them. `response_format`, `logprobs` / `top_logprobs` and
 * `tools` / `tool_choice` are read here; whether the model can honour them is contract.ts's question. Unknown keys with scalar values (vLLM's `ignore_eos`, a
 * model's own knobs, sent with the clients' `extra_body`) travel on to the model's sampling parameters.
 */
import { badRequest } from './errors.js';
import { parseToolCalls, parseTools, type ToolCall, type ToolChoice, type ToolSpec } from './tools.js';

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
  /**
   * Structured output as vLLM's `guided_decoding` object (`{json: schema}` or `{json_object: true}`),
   * from `response_format`; undefined = free text.
   */
  readonly guided?: Readonly<Record<string, unknown>>;
  /** Log probs asked for: how many alternatives per token (0 = the sampled token's only). */
  readonly logprobs?: number;
}

/** Most alternatives per token: OpenAI's top_logprobs bound (20); completions' logprobs takes as many. */
export const MAX_TOP_LOGPROBS = 20;

export interface CompletionRequest extends GenerationOptions {
  readonly prompt: string;
  readonly echo: boolean;
}

export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  readonly name?: string;
  /** An assistant message's tool calls (a round trip). */
  readonly tool_calls?: readonly ToolCall[];
  /** A `tool` message: the call it answers. */
  readonly tool_call_id?: string;
}

export interface ChatRequest extends GenerationOptions {
  readonly messages: readonly ChatMessage[];
  /** The functions the model may call (tools.ts); empty = none. */
  readonly tools: readonly ToolSpec[];
  readonly toolChoice: ToolChoice;
  readonly parallelToolCalls: boolean;
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
  if (present(doc, 'suffix')) throw badRequest('suffix is not currently supported', 'suffix');
  for (const key of ['functions', 'function_call']) {
    if (present(doc, key) && !(Array.isArray(doc[key]) && doc[key].length === 0)) {
      throw badRequest(`the deprecated '${key}' is not supported: use 'tools' and 'tool_choice'`, key);
    }
  }
}

/** `response_format` as vLLM's guided_decoding object, or undefined for plain text. */
function guidedOf(doc: Doc): Record<string, unknown> | undefined {
  if (!present(doc, 'response_format')) return undefined;
  const rf = doc.response_format;
  if (typeof rf !== 'object' || rf === null || Array.isArray(rf)) {
    throw badRequest("'response_format' must be an object", 'response_format');
  }
  const f = rf as Doc;
  switch (f.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { json_object: true };
    case 'json_schema': {
      const js = f.json_schema;
      if (typeof js !== 'object' || js === null || Array.isArray(js)) {
        throw badRequest("'response_format.json_schema' must be an object", 'response_format');
      }
      const schema = (js as Doc).schema;
      if (schema === undefined || schema === null) return { json_object: true };
      if (typeof schema !== 'object' || Array.isArray(schema)) {
        throw badRequest(
          "'response_format.json_schema.schema' must be a JSON schema object",
          'response_format',
        );
      }
      return { json: schema };
    }
    default:
      throw badRequest(
        "'response_format.type' must be 'text', 'json_object' or 'json_schema'",
        'response_format',
      );
  }
}

/** Chat's `logprobs` (a boolean) and `top_logprobs`; completions' `logprobs` (how many; 0 = none). */
function logprobsOf(doc: Doc, chat: boolean): number | undefined {
  if (!chat) {
    const n = num(doc, 'logprobs', 0, MAX_TOP_LOGPROBS, true);
    if (present(doc, 'top_logprobs')) throw badRequest("'top_logprobs' is a chat option", 'top_logprobs');
    return n === undefined || n === 0 ? undefined : n;
  }
  const on = bool(doc, 'logprobs') ?? false;
  const top = num(doc, 'top_logprobs', 0, MAX_TOP_LOGPROBS, true);
  if (top !== undefined && !on) {
    throw badRequest("'top_logprobs' needs 'logprobs' set to true", 'top_logprobs');
  }
  return on ? (top ?? 0) : undefined;
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
  const guided = guidedOf(doc);
  const logprobs = logprobsOf(doc, maxTokensKey === 'max_completion_tokens');
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
    ...(guided !== undefined && { guided }),
    ...(logprobs !== undefined && { logprobs }),
  };
}

function optional<K extends string>(key: K, v: number | undefined): Partial<Record<K, number>> {
  return v === undefined ? {} : ({ [key]: v } as Record<K, number>);
}

export function parseCompletionRequest(doc: Doc): CompletionRequest {
  const options = generationOptions(doc, 'max_tokens');
  for (const key of ['tools', 'tool_choice']) {
    if (present(doc, key)) throw badRequest(`'${key}' is a chat option (/v1/chat/completions)`, key);
  }
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
    const toolCalls =
      d.role === 'assistant' && present(d, 'tool_calls') ? parseToolCalls(d.tool_calls, i) : undefined;
    let toolCallId: string | undefined;
    if (d.role === 'tool') {
      if (typeof d.tool_call_id !== 'string' || d.tool_call_id === '') {
        throw badRequest(`messages[${i}]: a 'tool' message needs its 'tool_call_id'`, 'messages');
      }
      toolCallId = d.tool_call_id;
    }
    characters += content.length + d.role.length + (name?.length ?? 0);
    for (const c of toolCalls ?? []) characters += c.function.name.length + c.function.arguments.length;
    if (characters > MAX_CHAT_CHARACTERS) {
      throw badRequest(
        `'messages' hold more than the ${MAX_CHAT_CHARACTERS} characters a request may hold`,
        'messages',
      );
    }
    return {
      role: d.role,
      content,
      ...(name !== undefined && { name }),
      ...(toolCalls !== undefined && { tool_calls: toolCalls }),
      ...(toolCallId !== undefined && { tool_call_id: toolCallId }),
    };
  });
  const tools = parseTools(doc);
  return { ...options, messages, ...tools };
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
