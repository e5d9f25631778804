/**
 * Chat messages → one prompt, through the model's chat template: Jinja as Hugging Face tokenizers store
 * it, rendered by @huggingface/jinja with `messages`, `add_generation_prompt` (true), `bos_token` and
 * `eos_token` (from tokenizer_config.json when it has them, else empty). Where the template comes from,
 * first found wins:
 *   1. the model config's parameter `chat_template` (the template text itself);
 *   2. `chat_template.jinja` in the model's folder (in one of the --model-repository folders);
 *   3. `tokenizer_config.json` in the model's folder, its `chat_template` (a string, or Hugging Face's
 *      list of named templates, of which `default`);
 *   4. the fallback: one `<role>: <content>` line per message, then `assistant:` (docs/openai.md).
 * Repository files are hostile: only a model name that is one plain path segment is looked up, a file
 * over MAX_TEMPLATE_BYTES is refused, templates render in a thread with a time and a memory limit
 * (template-sandbox.ts), and a template that does not parse, render or keep within the limits is a 500
 * naming the model.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { internal } from '../../common/errors.js';
import type { ChatMessage } from './request.js';
import { TemplateSandbox } from './template-sandbox.js';

/** Largest template (or tokenizer_config.json) read from a model folder. */
export const MAX_TEMPLATE_BYTES = 1 << 20;

export interface ChatTemplateSource {
  readonly text: string;
  readonly origin: string;
  readonly bosToken: string;
  readonly eosToken: string;
}

/** The fallback prompt for a model without a chat template. */
export function fallbackPrompt(messages: readonly ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}\n`).join('') + 'assistant:';
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
  find(model: string, configParameter: string | undefined): ChatTemplateSource | undefined {
    if (configParameter !== undefined && configParameter !== '') {
      return { text: configParameter, origin: 'config parameter chat_template', bosToken: '', eosToken: '' };
    }
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
      if (jinja === undefined && tokenizer === undefined && !exists(dir)) continue;
      return undefined;
    }
    return undefined;
  }

  /** The prompt for `messages` with the model's template (or the fallback). */
  async render(
    model: string,
    configParameter: string | undefined,
    messages: readonly ChatMessage[],
  ): Promise<string> {
    const source = this.find(model, configParameter);
    if (source === undefined) return fallbackPrompt(messages);
    try {
      return await this.sandbox.render(source.text, {
        messages: messages.map((m) => ({ ...m })),
        add_generation_prompt: true,
        bos_token: source.bosToken,
        eos_token: source.eosToken,
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
