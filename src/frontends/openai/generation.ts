/**
 * POST /v1/completions and /v1/chat/completions: one inference request through InferenceServerApi.infer
 * (the call the generate endpoints make), its responses turned into OpenAI's JSON or its SSE chunks.
 * Text is decoded across responses (a character may be split between two), stop sequences are applied
 * here (stop.ts) and end the model's work when they match, `usage` is summed from the model's token
 * counts, and `finish_reason` is `length` when the model reports as many tokens as max_tokens allowed.
 * A client that goes away, or falls too far behind (sse.ts), cancels the request through its signal.
 * Log probs ride with the text they belong to (logprobs.ts); a chat with tools reads its answer into
 * `tool_calls` (tools.ts): whole at the end, or, streaming, content as it comes and the calls as one delta
 * each before the last chunk, whose finish_reason is then `tool_calls`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { streamCall, type InferenceResponse, type InferenceServerApi } from '../../core/index.js';
import { CancelOnClose } from '../signal-pool.js';
import {
  checkFeatures,
  generationInputs,
  modelHandlesEcho,
  openAiCall,
  openAiRequest,
  readGeneration,
  type ModelFacts,
} from './contract.js';
import { badRequest, toOpenAiError } from './errors.js';
import { chatLogprobs, completionLogprobs, parseModelLogprobs, type ModelLogprob } from './logprobs.js';
import type { GenerationOptions } from './request.js';
import { SseWriter } from './sse.js';
import { StopMatcher } from './stop.js';
import { toolGrammar, ToolStream, type ToolCall, type ToolChoice, type ToolSpec } from './tools.js';

export type Kind = 'chat' | 'completion';

export interface GenerationContext {
  readonly api: InferenceServerApi;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly defaultMaxTokens: number;
  readonly maxBufferedBytes: number;
}

export interface JsonReply {
  readonly status: number;
  readonly body: string;
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Token counts as the model reports them: prompt once, completion summed over responses. */
class UsageCounter {
  private prompt: number | undefined;
  private completion = 0;
  private seen = false;

  add(inputTokens: number | undefined, outputTokens: number | undefined): void {
    if (inputTokens === undefined || outputTokens === undefined) return;
    this.seen = true;
    this.prompt ??= inputTokens;
    this.completion += outputTokens;
  }

  get completionTokens(): number {
    return this.completion;
  }

  usage(): Usage | undefined {
    if (!this.seen) return undefined;
    const prompt = this.prompt ?? 0;
    return {
      prompt_tokens: prompt,
      completion_tokens: this.completion,
      total_tokens: prompt + this.completion,
    };
  }
}

/** A chat's tools (none for a completion). */
export interface ToolOptions {
  readonly tools: readonly ToolSpec[];
  readonly toolChoice: ToolChoice;
  readonly parallelToolCalls: boolean;
}

const NO_TOOLS: ToolOptions = { tools: [], toolChoice: { kind: 'none' }, parallelToolCalls: true };

/** A decoupled model's flag-only final response carries nothing. */
const isEmptyFinal = (r: InferenceResponse): boolean => r.final && r.outputs.length === 0;

export async function runGeneration(
  ctx: GenerationContext,
  kind: Kind,
  facts: ModelFacts,
  prompt: string,
  asked: GenerationOptions,
  echo: boolean,
  toolOptions: ToolOptions = NO_TOOLS,
): Promise<JsonReply | undefined> {
  const generation = new Generation(ctx, kind, facts, prompt, asked, echo, toolOptions);
  try {
    return await (generation.options.stream ? generation.streamed() : generation.whole());
  } finally {
    generation.cancel.done();
  }
}

/** One generation request: its options settled, its model call started, read whole or as a stream. */
class Generation {
  readonly options: GenerationOptions;
  readonly cancel: CancelOnClose;
  private readonly res: ServerResponse;
  private readonly maxBufferedBytes: number;
  private readonly maxTokens: number;
  private readonly tools: readonly ToolSpec[];
  private readonly toolChoice: ToolChoice;
  private readonly id: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly decoder = new StringDecoder('utf8');
  private readonly stop: StopMatcher;
  private readonly usage = new UsageCounter();
  /** The prompt, when the frontend echoes it itself (the model has no input for it); else ''. */
  private readonly lead: string;
  private readonly responses: AsyncIterable<InferenceResponse>;
  /** Where the next log-prob token starts in the choice's text (completions' text_offset). */
  private offset: number;

  constructor(
    ctx: GenerationContext,
    private readonly kind: Kind,
    facts: ModelFacts,
    prompt: string,
    asked: GenerationOptions,
    echo: boolean,
    toolOptions: ToolOptions,
  ) {
    this.res = ctx.res;
    this.maxBufferedBytes = ctx.maxBufferedBytes;
    this.tools = toolOptions.tools;
    this.toolChoice = toolOptions.toolChoice;
    // tool_choice required / a named function constrain the answer the way response_format does.
    const toolGuided = toolGrammar(this.tools, this.toolChoice, toolOptions.parallelToolCalls);
    if (toolGuided !== undefined && asked.guided !== undefined) {
      throw badRequest(
        "'response_format' cannot be combined with tool_choice 'required' or a named function",
        'response_format',
      );
    }
    const options: GenerationOptions = toolGuided === undefined ? asked : { ...asked, guided: toolGuided };
    this.options = options;
    checkFeatures(facts, options, toolGuided !== undefined ? 'tool_choice' : 'response_format');
    this.maxTokens = options.maxTokens ?? ctx.defaultMaxTokens;
    const modelEchoes = kind === 'completion' && modelHandlesEcho(facts);
    const inputs = generationInputs(facts, prompt, options, {
      maxTokens: ctx.defaultMaxTokens,
      // As Triton's frontend: the prompt is left out of the output unless a completion asks for echo.
      echo: kind === 'completion' ? echo : false,
    });
    this.id = (kind === 'chat' ? 'chatcmpl-' : 'cmpl-') + randomUUID();
    this.cancel = new CancelOnClose(ctx.res, false);
    this.stop = new StopMatcher(options.stop);
    this.lead = kind === 'completion' && echo && !modelEchoes ? prompt : '';
    this.offset = kind === 'completion' && echo ? prompt.length : 0;
    this.responses = streamCall(facts.model, openAiRequest(facts, inputs), openAiCall(this.cancel.signal));
  }

  private finishReason(): 'stop' | 'length' {
    const { stop, usage } = this;
    return !stop.done && usage.usage() !== undefined && usage.completionTokens >= this.maxTokens
      ? 'length'
      : 'stop';
  }

  private logprobsOf(entries: readonly ModelLogprob[]): Record<string, unknown> | null {
    const top = this.options.logprobs;
    if (top === undefined) return null;
    if (this.kind === 'chat') return chatLogprobs(entries, top);
    const out = completionLogprobs(entries, top, this.offset);
    for (const e of entries) this.offset += e.token.length;
    return out;
  }

  private entriesOf(text: string | undefined): ModelLogprob[] {
    return this.options.logprobs === undefined || text === undefined ? [] : parseModelLogprobs(text);
  }

  /** Reads the model's text (and log probs, usage) out of one response, through the stop sequences. */
  private read(r: InferenceResponse): { text: string; entries: ModelLogprob[] } {
    const piece = readGeneration(r);
    this.usage.add(piece.inputTokens, piece.outputTokens);
    return { text: this.stop.push(this.decoder.write(piece.bytes)), entries: this.entriesOf(piece.logprobs) };
  }

  /** The non-streaming answer: every response read, then one JSON body. */
  async whole(): Promise<JsonReply> {
    let text = this.lead;
    const entries: ModelLogprob[] = [];
    for await (const r of this.responses) {
      if (isEmptyFinal(r)) continue;
      const piece = this.read(r);
      entries.push(...piece.entries);
      text += piece.text;
      if (this.stop.done) {
        this.cancel.controller.abort(); // the rest is not wanted: stop the model's work
        break;
      }
    }
    text += this.stop.push(this.decoder.end()) + this.stop.flush();
    const answer = new ToolStream(this.tools, this.toolChoice);
    const before = answer.push(text);
    const parsed = answer.finish();
    const content = before + (parsed.content ?? '');
    const calls = parsed.calls;
    const body = completeBody(this.kind, this.id, this.created, this.options.model, {
      text: calls.length > 0 && content.trim() === '' ? null : content,
      calls,
      finish: calls.length > 0 ? 'tool_calls' : this.finishReason(),
      logprobs: this.logprobsOf(entries),
      usage: this.usage.usage(),
    });
    return { status: 200, body: JSON.stringify(body) };
  }

  private chunk(
    delta: string | undefined,
    finish: string | null,
    entries: readonly ModelLogprob[] = [],
    calls?: readonly ToolCall[],
  ): string {
    const { kind, id, created, options } = this;
    return JSON.stringify(
      chunkBody(kind, id, created, options.model, delta, finish, options.includeUsage, {
        logprobs: entries.length > 0 ? this.logprobsOf(entries) : null,
        ...(calls !== undefined && { calls }),
      }),
    );
  }

  /**
   * The streaming answer as server-sent events, each response's text as it comes; undefined once the
   * answer was sent (or the client went), or an error reply when it failed before any event was sent.
   */
  async streamed(): Promise<JsonReply | undefined> {
    const { kind, id, created, options } = this;
    const sse = new SseWriter(this.res, this.maxBufferedBytes, () => this.cancel.controller.abort());
    const toolStream = new ToolStream(this.tools, this.toolChoice);
    // A text-only chunk differs from the stream's others in its text alone: built around it.
    const textChunk = deltaTemplate(kind, id, created, options.model, options.includeUsage);
    const it = this.responses[Symbol.asyncIterator]();
    let first = true;
    const begin = (): boolean => {
      if (!first) return true;
      first = false;
      // The first chat chunk names the role, as OpenAI's does.
      if (kind === 'chat') return sse.send(chatRoleChunk(id, created, options.model, options.includeUsage));
      // An echoed prompt (echo without a model input for it) goes first, untouched by stop sequences.
      return this.lead === '' || sse.send(this.chunk(this.lead, null));
    };
    try {
      for (;;) {
        const next = await it.next();
        if (sse.closed) return undefined;
        if (next.done === true) break;
        if (!begin()) return undefined;
        if (isEmptyFinal(next.value)) continue;
        const piece = this.read(next.value);
        const text = toolStream.push(piece.text);
        if (text !== '' || piece.entries.length > 0) {
          const json = piece.entries.length > 0 ? this.chunk(text, null, piece.entries) : textChunk(text);
          if (!sse.send(json)) return undefined;
        }
        await sse.drained(); // back-pressure: the next response is taken once the client has read this one
        if (this.stop.done) {
          this.cancel.controller.abort();
          await it.return?.();
          break;
        }
      }
    } catch (err) {
      const e = toOpenAiError(err);
      if (!sse.isStarted) return { status: e.status, body: e.body };
      if (sse.send(e.body)) sse.done();
      return undefined;
    }
    if (begin()) this.streamEnd(sse, toolStream);
    return undefined;
  }

  /** The stream's last events: held-back text, tool calls, the finish reason, usage, then [DONE]. */
  private streamEnd(sse: SseWriter, toolStream: ToolStream): void {
    const { kind, id, created, options } = this;
    const tail = toolStream.push(this.stop.push(this.decoder.end()) + this.stop.flush());
    const parsed = toolStream.finish();
    const rest = tail + (parsed.content ?? '');
    let finish: string = this.finishReason();
    if (parsed.calls.length > 0) {
      finish = 'tool_calls';
      if (rest !== '' && !sse.send(this.chunk(rest, null))) return;
      if (!sse.send(this.chunk(undefined, null, [], parsed.calls))) return;
      if (!sse.send(this.chunk(undefined, finish))) return;
    } else if (!sse.send(this.chunk(rest === '' ? undefined : rest, finish))) return;
    const total = this.usage.usage();
    if (options.includeUsage && total !== undefined) {
      if (!sse.send(JSON.stringify(usageChunk(kind, id, created, options.model, total)))) return;
    }
    sse.done();
  }
}

interface Answer {
  /** null: a chat answer that is only tool calls. */
  readonly text: string | null;
  readonly calls: readonly ToolCall[];
  readonly finish: string;
  readonly logprobs: Record<string, unknown> | null;
  readonly usage: Usage | undefined;
}

function completeBody(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  answer: Answer,
): Record<string, unknown> {
  const { text, calls, finish, logprobs, usage } = answer;
  const message = {
    role: 'assistant',
    content: text,
    ...(calls.length > 0 && { tool_calls: calls }),
  };
  const choice =
    kind === 'chat'
      ? { index: 0, message, logprobs, finish_reason: finish }
      : { index: 0, text: text ?? '', logprobs, finish_reason: finish };
  return {
    id,
    object: kind === 'chat' ? 'chat.completion' : 'text_completion',
    created,
    model,
    choices: [choice],
    system_fingerprint: null,
    ...(usage !== undefined && { usage }),
  };
}

function chunkBody(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  text: string | undefined,
  finish: string | null,
  includeUsage: boolean,
  extra: { readonly logprobs: Record<string, unknown> | null; readonly calls?: readonly ToolCall[] },
): Record<string, unknown> {
  const { logprobs, calls } = extra;
  const delta =
    calls !== undefined
      ? { tool_calls: calls.map((c, index) => ({ index, ...c })) }
      : text === undefined
        ? {}
        : { content: text };
  const choice =
    kind === 'chat'
      ? { index: 0, delta, logprobs, finish_reason: finish }
      : { index: 0, text: text ?? '', logprobs, finish_reason: finish };
  return {
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [choice],
    system_fingerprint: null,
    // With stream_options.include_usage every chunk says `usage: null` but the last, as OpenAI's do.
    ...(includeUsage && { usage: null }),
  };
}

const DELTA_MARKER = '\u0000nereid-delta\u0000';

/**
 * The stream's text-only chunk (no log probs, tool calls or finish reason) as a function of its text:
 * chunkBody's JSON cut around a marker text once, so each token costs one JSON.stringify of its text and
 * the bytes are those of JSON.stringify(chunkBody(...)). Should the marker's JSON occur other than once
 * (an id or model name holding it), every chunk is made whole.
 */
export function deltaTemplate(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  includeUsage: boolean,
): (text: string) => string {
  const whole = (text: string): string =>
    JSON.stringify(chunkBody(kind, id, created, model, text, null, includeUsage, { logprobs: null }));
  const parts = whole(DELTA_MARKER).split(JSON.stringify(DELTA_MARKER));
  if (parts.length !== 2) return whole;
  const [head, tail] = parts;
  return (text) => head + JSON.stringify(text) + tail;
}

function chatRoleChunk(id: string, created: number, model: string, includeUsage: boolean): string {
  return JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    system_fingerprint: null,
    ...(includeUsage && { usage: null }),
  });
}

function usageChunk(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  usage: Usage,
): Record<string, unknown> {
  return {
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [],
    system_fingerprint: null,
    usage,
  };
}
