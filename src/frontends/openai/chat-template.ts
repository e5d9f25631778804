/**
 * Chat messages → one prompt, through the model's chat template: Jinja as Hugging Face tokenizers store
 * it, rendered by @huggingface/jinja with `messages`, `add_generation_prompt` (true), `bos_token` and
 * `eos_token` (from tokenizer_config.json or the GGUF when they have them, else empty), and `tools` (the
 * request's tools as OpenAI sends them) when the model may call any. An assistant message's `tool_calls`
 * reach the template with their `arguments` parsed into objects (what Hugging Face templates expect), a
 * `tool` message with its `tool_call_id`. Where the template comes from, first found wins:
 *   1. the model config's parameter `chat_template` (the template text itself);
 *   2. `chat_template.jinja` in the model's folder (in one of the --model-repository folders);
 *   3. `tokenizer_config.json` in the model's folder, its `chat_template` (a string, or Hugging Face's
 *      list of named templates, of which `default`);
 *   4. the template the model's backend read from the model file (ResolvedModel.chatTemplate: the
 *      llamacpp backend publishes its GGUF's `tokenizer.chat_template`, backends/llamacpp/gguf-check.ts),
 *      with tokenizer_config.json's BOS / EOS text when it has them;
 *   5. the fallback: one `<role>: <content>` line per message, then `assistant:` (docs/openai.md); with
 *      tools, a first `system:` line lists them and asks for tools.ts's `<tool_call>` form.
 * Repository files are hostile: only a model name that is one plain path segment is looked up, a file
 * over MAX_TEMPLATE_BYTES is refused, templates render in a thread with a time and a memory limit
 * (template-sandbox.ts), and a template that does not parse, render or keep within the limits is a 500
 * naming the model.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ModelChatTemplate } from '../../backend-api/backend.js';
import { internal } from '../../common/errors.js';
import type { ChatMessage } from './request.js';
import { TemplateSandbox } from './template-sandbox.js';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN, type ToolSpec } from './tools.js';

/** Largest template (or tokenizer_config.json) read from a model folder. */
export const MAX_TEMPLATE_BYTES = 1 << 20;

export interface ChatTemplateSource {
  readonly text: string;
  readonly origin: string;
  readonly bosToken: string;
  readonly eosToken: string;
}

/** Which model a template is for: its name, its config's template parameter, its model file's template. */
export interface TemplateTarget {
  readonly model: string;
  readonly configParameter?: string | undefined;
  /** The template the version's backend read from its model file (ResolvedModel.chatTemplate). */
  readonly modelTemplate?: ModelChatTemplate | undefined;
}

/** The fallback prompt for a model without a chat template. */
export function fallbackPrompt(messages: readonly ChatMessage[], tools: readonly ToolSpec[] = []): string {
  const lines: string[] = [];
  if (tools.length > 0) {
    const list = JSON.stringify(tools.map((t) => t.raw.function));
    lines.push(
      `system: You can call these functions: ${list}. To call one, answer ${TOOL_CALL_OPEN}{"name": <function name>, "arguments": <arguments object>}${TOOL_CALL_CLOSE}\n`,
    );
  }
  for (const m of messages) {
    const calls = (m.tool_calls ?? [])
      .map(
        (c) =>
          `${TOOL_CALL_OPEN}{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}${TOOL_CALL_CLOSE}`,
      )
      .join('');
    lines.push(`${m.role}: ${m.content}${calls}\n`);
  }
  return lines.join('') + 'assistant:';
}

/** A message as templates read it: tool-call arguments as objects when they parse. */
function templateMessage(m: ChatMessage): Record<string, unknown> {
  if (m.tool_calls === undefined) return { ...m };
  return {
    ...m,
    tool_calls: m.tool_calls.map((c) => {
      let args: unknown = c.function.arguments;
      try {
        args = JSON.parse(c.function.arguments);
      } catch {
        // a template gets the text as it came
      }
      return { id: c.id, type: c.type, function: { name: c.function.name, arguments: args } };
    }),
  };
}

function readSmall(file: string): string | undefined {
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) return undefined;
    size = st.size;
  } catch {
    return undefined;
  }
  if (size > MAX_TEMPLATE_BYTES) {
    throw internal(`chat template file '${path.basename(file)}' is larger than ${MAX_TEMPLATE_BYTES} bytes`);
  }
  return readFileSync(file, 'utf8');
}

function tokenText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return '';
}

export class ChatTemplates {
  private readonly sandbox = new TemplateSandbox();

  constructor(private readonly repositories: readonly string[]) {}

  /** Where the model's template comes from, or undefined for the fallback. */
  find(target: TemplateTarget): ChatTemplateSource | undefined {
    const { model, configParameter, modelTemplate } = target;
    if (configParameter !== undefined && configParameter !== '') {
      return { text: configParameter, origin: 'config parameter chat_template', bosToken: '', eosToken: '' };
    }
    const folder = this.fromFolder(model);
    if (folder !== undefined && 'text' in folder) return folder;
    if (modelTemplate === undefined) return undefined;
    const bosToken = folder?.bosToken ?? '';
    const eosToken = folder?.eosToken ?? '';
    return {
      text: modelTemplate.text,
      origin: modelTemplate.origin,
      bosToken: bosToken === '' ? modelTemplate.bosToken : bosToken,
      eosToken: eosToken === '' ? modelTemplate.eosToken : eosToken,
    };
  }

  /**
   * The template in the model's folder (the first --model-repository folder that has the model), or the
   * BOS / EOS text of its tokenizer_config.json without a template; undefined without a folder.
   */
  private fromFolder(
    model: string,
  ): ChatTemplateSource | { readonly bosToken: string; readonly eosToken: string } | undefined {
    if (model === '' || model === '.' || model === '..' || model.includes('/') || model.includes('\\')) {
      return undefined;
    }
    for (const repo of this.repositories) {
      const dir = path.join(repo, model);
      const jinja = readSmall(path.join(dir, 'chat_template.jinja'));
      const tokenizer = readSmall(path.join(dir, 'tokenizer_config.json'));
      let tk: Record<string, unknown> = {};
      if (tokenizer !== undefined) {
        try {
          const doc: unknown = JSON.parse(tokenizer);
          if (typeof doc === 'object' && doc !== null) tk = doc as Record<string, unknown>;
        } catch {
          throw internal(`model '${model}': tokenizer_config.json is not valid JSON`);
        }
      }
      const bosToken = tokenText(tk.bos_token);
      const eosToken = tokenText(tk.eos_token);
      if (jinja !== undefined) return { text: jinja, origin: 'chat_template.jinja', bosToken, eosToken };
      const t = tk.chat_template;
      if (typeof t === 'string') return { text: t, origin: 'tokenizer_config.json', bosToken, eosToken };
      if (Array.isArray(t)) {
        const named = t.find((e: unknown) => (e as { name?: unknown }).name === 'default') as
          { template?: unknown } | undefined;
        if (typeof named?.template === 'string') {
          return { text: named.template, origin: 'tokenizer_config.json', bosToken, eosToken };
        }
      }
      if (tokenizer === undefined && !exists(dir)) continue;
      return { bosToken, eosToken };
    }
    return undefined;
  }

  /** The prompt for `messages` with the model's template (or the fallback). */
  async render(
    target: TemplateTarget,
    messages: readonly ChatMessage[],
    tools: readonly ToolSpec[] = [],
  ): Promise<string> {
    const { model } = target;
    const source = this.find(target);
    if (source === undefined) return fallbackPrompt(messages, tools);
    try {
      return await this.sandbox.render(source.text, {
        messages: messages.map(templateMessage),
        add_generation_prompt: true,
        bos_token: source.bosToken,
        eos_token: source.eosToken,
        ...(tools.length > 0 && { tools: tools.map((t) => t.raw) }),
      });
    } catch (err) {
      throw internal(
        `model '${model}': its chat template (${source.origin}) failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  /** Ends the render thread. */
  close(): Promise<void> {
    return this.sandbox.close();
  }
}

function exists(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
