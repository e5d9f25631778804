/**
 * POST /v1/completions and /v1/chat/completions: one inference request through InferenceServerApi.infer
 * (the call the generate endpoints make), its responses turned into OpenAI's JSON or its SSE chunks.
 * Text is decoded across responses (a character may be split between two), stop sequences are applied
 * here (stop.ts) and end the model's work when they match, `usage` is summed from the model's token
 * counts, and `finish_reason` is `length` when the model reports as many tokens as max_tokens allowed.
 * A client that goes away, or falls too far behind (sse.ts), cancels the request through its signal.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { InferenceServerApi } from '../../core/server-api.js';
import type { InferenceResponse } from '../../core/types.js';
import { generationInputs, modelHandlesEcho, readGeneration, type ModelFacts } from './contract.js';
import { toOpenAiError } from './errors.js';
import type { GenerationOptions } from './request.js';
import { SseWriter } from './sse.js';
import { StopMatcher } from './stop.js';

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

/** A decoupled model's flag-only final response carries nothing. */
const isEmptyFinal = (r: InferenceResponse): boolean => r.final && r.outputs.length === 0;

export async function runGeneration(
  ctx: GenerationContext,
  kind: Kind,
  facts: ModelFacts,
  prompt: string,
  options: GenerationOptions,
  echo: boolean,
): Promise<JsonReply | undefined> {
  const { res } = ctx;
  const maxTokens = options.maxTokens ?? ctx.defaultMaxTokens;
  const modelEchoes = kind === 'completion' && modelHandlesEcho(facts);
  const inputs = generationInputs(facts, prompt, options, {
    maxTokens: ctx.defaultMaxTokens,
    // As Triton's frontend: the prompt is left out of the output unless a completion asks for echo.
    echo: kind === 'completion' ? echo : false,
  });
  const id = (kind === 'chat' ? 'chatcmpl-' : 'cmpl-') + randomUUID();
  const created = Math.floor(Date.now() / 1000);

  const controller = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) controller.abort();
  };
  res.once('close', onClose);

  const decoder = new StringDecoder('utf8');
  const stop = new StopMatcher(options.stop);
  const usage = new UsageCounter();
  // The frontend echoes the prompt itself when the model has no input for it.
  const lead = kind === 'completion' && echo && !modelEchoes ? prompt : '';

  const finishReason = (): 'stop' | 'length' =>
    !stop.done && usage.usage() !== undefined && usage.completionTokens >= maxTokens ? 'length' : 'stop';

  const responses = facts.model.stream({ modelName: facts.name, inputs, signal: controller.signal });

  try {
    if (!options.stream) {
      let text = lead;
      for await (const r of responses) {
        if (isEmptyFinal(r)) continue;
        const piece = readGeneration(r);
        usage.add(piece.inputTokens, piece.outputTokens);
        text += stop.push(decoder.write(piece.bytes));
        if (stop.done) {
          controller.abort(); // the rest is not wanted: stop the model's work
          break;
        }
      }
      text += stop.push(decoder.end()) + stop.flush();
      return {
        status: 200,
        body: JSON.stringify(
          completeBody(kind, id, created, options.model, text, finishReason(), usage.usage()),
        ),
      };
    }

    const sse = new SseWriter(res, ctx.maxBufferedBytes, () => controller.abort());
    const chunk = (delta: string | undefined, finish: string | null): string =>
      JSON.stringify(chunkBody(kind, id, created, options.model, delta, finish, options.includeUsage));
    const it = responses[Symbol.asyncIterator]();
    let first = true;
    const begin = (): boolean => {
      if (!first) return true;
      first = false;
      // The first chat chunk names the role, as OpenAI's does.
      if (kind === 'chat') return sse.send(chatRoleChunk(id, created, options.model, options.includeUsage));
      // An echoed prompt (echo without a model input for it) goes first, untouched by stop sequences.
      return lead === '' || sse.send(chunk(lead, null));
    };
    try {
      for (;;) {
        const next = await it.next();
        if (sse.closed) return undefined;
        if (next.done === true) break;
        if (!begin()) return undefined;
        const r = next.value;
        if (isEmptyFinal(r)) continue;
        const piece = readGeneration(r);
        usage.add(piece.inputTokens, piece.outputTokens);
        const text = stop.push(decoder.write(piece.bytes));
        if (text !== '' && !sse.send(chunk(text, null))) return undefined;
        await sse.drained(); // back-pressure: the next response is taken once the client has read this one
        if (stop.done) {
          controller.abort();
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
    if (!begin()) return undefined;
    const rest = stop.push(decoder.end()) + stop.flush();
    if (!sse.send(chunk(rest === '' ? undefined : rest, finishReason()))) return undefined;
    const total = usage.usage();
    if (options.includeUsage && total !== undefined) {
      if (!sse.send(JSON.stringify(usageChunk(kind, id, created, options.model, total)))) return undefined;
    }
    sse.done();
    return undefined;
  } finally {
    res.removeListener('close', onClose);
  }
}

function completeBody(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  text: string,
  finish: string,
  usage: Usage | undefined,
): Record<string, unknown> {
  const choice =
    kind === 'chat'
      ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }
      : { index: 0, text, logprobs: null, finish_reason: finish };
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
): Record<string, unknown> {
  const choice =
    kind === 'chat'
      ? {
          index: 0,
          delta: text === undefined ? {} : { content: text },
          logprobs: null,
          finish_reason: finish,
        }
      : { index: 0, text: text ?? '', logprobs: null, finish_reason: finish };
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
