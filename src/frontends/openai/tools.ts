/**
 * Tool calling for /v1/chat/completions: `tools` and `tool_choice` read and checked, the grammar that
 * makes a model's answer a tool call, and the model's text read back into OpenAI's `tool_calls`.
 *
 * - `required` and a named function: the answer is constrained (guided decoding, a llama.cpp grammar) to
 *   JSON — for `required` a list of one or more `{"name": ..., "arguments": {...}}` (one only when
 *   `parallel_tool_calls` is false), for a named function one such object — and parsed as that.
 * - `auto`: the model answers freely and its text is scanned for the Hermes form that Qwen, Hermes and
 *   many chat templates teach, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (any number of
 *   them; text outside them is the message's content), or for an answer that is only such a JSON object
 *   (the Llama 3.x form). A call naming a function that is not in `tools` stays text.
 * - `none` (the default without tools): plain text, the tools not shown to the model.
 * docs/openai.md describes the forms; the prompt shows the tools through the chat template's `tools`.
 */
import { randomUUID } from 'node:crypto';
import { badRequest } from './errors.js';

type Doc = Record<string, unknown>;

export interface ToolSpec {
  readonly name: string;
  /** The function's JSON schema for its arguments ({type: object} when the tool gives none). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** The tool as the client sent it: what chat templates read. */
  readonly raw: Readonly<Doc>;
}

export type ToolChoice =
  | { readonly kind: 'none' }
  | { readonly kind: 'auto' }
  | { readonly kind: 'required' }
  | { readonly kind: 'function'; readonly name: string };

export interface ToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/** Most tools one request may offer (OpenAI's bound). */
export const MAX_TOOLS = 128;
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseTools(doc: Doc): {
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
} {
  const raw = doc.tools ?? [];
  if (!Array.isArray(raw)) throw badRequest("'tools' must be a list", 'tools');
  if (raw.length > MAX_TOOLS) throw badRequest(`'tools' takes at most ${MAX_TOOLS} tools`, 'tools');
  const tools = raw.map((t: unknown, i): ToolSpec => {
    if (!isObject(t) || t.type !== 'function' || !isObject(t.function)) {
      throw badRequest(`tools[${i}] must be {"type": "function", "function": {...}}`, 'tools');
    }
    const f = t.function;
    if (typeof f.name !== 'string' || !NAME.test(f.name)) {
      throw badRequest(`tools[${i}].function.name must be 1 to 64 letters, digits, '_' or '-'`, 'tools');
    }
    if (f.parameters !== undefined && f.parameters !== null && !isObject(f.parameters)) {
      throw badRequest(`tools[${i}].function.parameters must be a JSON schema object`, 'tools');
    }
    const parameters = isObject(f.parameters) ? f.parameters : { type: 'object', properties: {} };
    return { name: f.name, parameters, raw: t };
  });
  const names = new Set(tools.map((t) => t.name));
  if (names.size !== tools.length) throw badRequest("'tools' names a function twice", 'tools');

  const parallel = doc.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean') {
    throw badRequest("'parallel_tool_calls' must be a boolean", 'parallel_tool_calls');
  }
  const tc = doc.tool_choice;
  let toolChoice: ToolChoice;
  if (tc === undefined || tc === null) toolChoice = { kind: tools.length > 0 ? 'auto' : 'none' };
  else if (tc === 'none' || tc === 'auto' || tc === 'required') toolChoice = { kind: tc };
  else if (
    isObject(tc) &&
    tc.type === 'function' &&
    isObject(tc.function) &&
    typeof tc.function.name === 'string'
  ) {
    toolChoice = { kind: 'function', name: tc.function.name };
  } else {
    throw badRequest(
      '\'tool_choice\' must be \'none\', \'auto\', \'required\' or {"type": "function", "function": {"name": ...}}',
      'tool_choice',
    );
  }
  if (toolChoice.kind !== 'none' && tools.length === 0) {
    throw badRequest(`'tool_choice' ${JSON.stringify(tc)} needs 'tools'`, 'tool_choice');
  }
  if (toolChoice.kind === 'function' && !names.has(toolChoice.name)) {
    throw badRequest(
      `'tool_choice' names the function '${toolChoice.name}', which 'tools' does not have`,
      'tool_choice',
    );
  }
  return { tools, toolChoice, parallelToolCalls: parallel !== false };
}

/** An assistant message's `tool_calls` (arguments as the JSON text OpenAI sends, or an object). */
export function parseToolCalls(v: unknown, i: number): ToolCall[] {
  if (!Array.isArray(v)) throw badRequest(`messages[${i}].tool_calls must be a list`, 'messages');
  return v.map((c: unknown, j): ToolCall => {
    const where = `messages[${i}].tool_calls[${j}]`;
    if (!isObject(c) || !isObject(c.function) || typeof c.function.name !== 'string') {
      throw badRequest(
        `${where} must be {"id", "type": "function", "function": {"name", "arguments"}}`,
        'messages',
      );
    }
    const args = c.function.arguments;
    const text = typeof args === 'string' ? args : isObject(args) ? JSON.stringify(args) : undefined;
    if (text === undefined) throw badRequest(`${where}.function.arguments must be a JSON text`, 'messages');
    return {
      id: typeof c.id === 'string' ? c.id : newCallId(),
      type: 'function',
      function: { name: c.function.name, arguments: text },
    };
  });
}

export function newCallId(): string {
  return 'call_' + randomUUID().replace(/-/g, '').slice(0, 24);
}

const callSchema = (t: ToolSpec): Doc => ({
  type: 'object',
  properties: { name: { const: t.name }, arguments: t.parameters },
  required: ['name', 'arguments'],
});

/** The guided_decoding object that makes the answer a tool call, or undefined when it is free. */
export function toolGrammar(
  tools: readonly ToolSpec[],
  choice: ToolChoice,
  parallel: boolean,
): Record<string, unknown> | undefined {
  if (choice.kind === 'function') {
    return { json: callSchema(tools.find((t) => t.name === choice.name)!) };
  }
  if (choice.kind !== 'required') return undefined;
  const item = tools.length === 1 ? callSchema(tools[0]) : { oneOf: tools.map(callSchema) };
  return { json: { type: 'array', items: item, minItems: 1, ...(!parallel && { maxItems: 1 }) } };
}

/** A `{"name", "arguments"}` value naming one of `names`, as a call; otherwise undefined. */
function asCall(v: unknown, names: ReadonlySet<string>): ToolCall | undefined {
  if (!isObject(v) || typeof v.name !== 'string' || !names.has(v.name)) return undefined;
  const args = v.arguments ?? v.parameters ?? {};
  if (!isObject(args)) return undefined;
  return { id: newCallId(), type: 'function', function: { name: v.name, arguments: JSON.stringify(args) } };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface ParsedAnswer {
  /** The message's text, null when the answer is only tool calls. */
  readonly content: string | null;
  readonly calls: readonly ToolCall[];
}

/** Reads a whole answer (tools.ts header for the forms). */
export function parseAnswer(text: string, tools: readonly ToolSpec[], choice: ToolChoice): ParsedAnswer {
  const names = new Set(tools.map((t) => t.name));
  if (choice.kind === 'none' || tools.length === 0) return { content: text, calls: [] };
  if (choice.kind === 'required' || choice.kind === 'function') {
    const doc = parseJson(text);
    const list = Array.isArray(doc) ? doc : [doc];
    const calls = list.map((v) => asCall(v, names));
    // A constrained answer cut short (max_tokens) does not parse: it stays text.
    if (calls.length === 0 || calls.some((c) => c === undefined)) return { content: text, calls: [] };
    return { content: null, calls: calls as ToolCall[] };
  }
  const calls: ToolCall[] = [];
  let rest = '';
  let at = 0;
  for (;;) {
    const open = text.indexOf(TOOL_CALL_OPEN, at);
    if (open < 0) break;
    const close = text.indexOf(TOOL_CALL_CLOSE, open);
    const body = text.slice(open + TOOL_CALL_OPEN.length, close < 0 ? undefined : close);
    const call = asCall(parseJson(body.trim()), names);
    const end = close < 0 ? text.length : close + TOOL_CALL_CLOSE.length;
    if (call === undefined) {
      rest += text.slice(at, end);
    } else {
      rest += text.slice(at, open);
      calls.push(call);
    }
    at = end;
  }
  rest += text.slice(at);
  if (calls.length === 0) {
    const whole = asCall(parseJson(text.trim()), names);
    if (whole !== undefined) return { content: null, calls: [whole] };
    return { content: text, calls: [] };
  }
  const content = rest.trim();
  return { content: content === '' ? null : content, calls };
}

/**
 * A streamed answer with tools: content that cannot be part of a tool call is let through at once; from
 * the first `<tool_call>` (or an answer that opens with `{`, or any constrained answer) the text is held
 * and read by parseAnswer() at the end.
 */
export class ToolStream {
  private held = '';
  private holding: boolean;
  private sent = '';

  constructor(
    private readonly tools: readonly ToolSpec[],
    private readonly choice: ToolChoice,
  ) {
    this.holding = choice.kind === 'required' || choice.kind === 'function';
  }

  /** Text that may be sent as content now. */
  push(piece: string): string {
    if (this.choice.kind === 'none' || this.tools.length === 0) return piece;
    if (this.holding) {
      this.held += piece;
      return '';
    }
    const text = this.held + piece;
    if (this.sent === '' && /^\s*\{/.test(text)) {
      this.holding = true;
      this.held = text;
      return '';
    }
    if (this.sent === '' && /^\s*$/.test(text)) {
      this.held = text;
      return '';
    }
    const open = text.indexOf(TOOL_CALL_OPEN);
    if (open >= 0) {
      this.holding = true;
      this.held = text.slice(open);
      return this.emit(text.slice(0, open));
    }
    let keep = 0;
    for (let k = Math.min(TOOL_CALL_OPEN.length - 1, text.length); k > 0; k--) {
      if (TOOL_CALL_OPEN.startsWith(text.slice(text.length - k))) {
        keep = k;
        break;
      }
    }
    this.held = text.slice(text.length - keep);
    return this.emit(text.slice(0, text.length - keep));
  }

  private emit(text: string): string {
    this.sent += text;
    return text;
  }

  /** The end: content still to send, and the calls. */
  finish(): ParsedAnswer {
    const held = this.held;
    this.held = '';
    if (this.choice.kind === 'none' || this.tools.length === 0) return { content: held, calls: [] };
    const parsed = parseAnswer(held, this.tools, this.choice);
    return parsed;
  }
}
