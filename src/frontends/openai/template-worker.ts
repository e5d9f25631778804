/**
 * The thread chat templates render in (template-sandbox.ts). A template comes from a model folder or a
 * model config, so it is hostile: `range(1e9)` or a loop that never ends would take the main thread with
 * it. Here it can only take this thread, which the sandbox ends when it runs past its time or memory.
 * Compiled templates are kept by their text, a bounded number of them.
 */
import { parentPort } from 'node:worker_threads';
import { Template } from '@huggingface/jinja';

export interface RenderRequest {
  readonly id: number;
  readonly text: string;
  readonly context: Record<string, unknown>;
  /** Longest prompt the render may produce, in UTF-16 code units. */
  readonly maxLength: number;
}

export type RenderReply =
  | { readonly ready: true }
  | { readonly id: number; readonly prompt: string }
  | { readonly id: number; readonly error: string };

const CACHE_LIMIT = 64;
const compiled = new Map<string, Template>();

function render(r: RenderRequest): Exclude<RenderReply, { ready: true }> {
  try {
    let template = compiled.get(r.text);
    if (template === undefined) {
      template = new Template(r.text);
      if (compiled.size >= CACHE_LIMIT) compiled.clear();
      compiled.set(r.text, template);
    }
    const prompt = template.render(r.context);
    if (prompt.length > r.maxLength) {
      return { id: r.id, error: `its prompt is longer than ${r.maxLength} characters` };
    }
    return { id: r.id, prompt };
  } catch (err) {
    return { id: r.id, error: err instanceof Error ? err.message : String(err) };
  }
}

parentPort?.on('message', (r: RenderRequest) => parentPort?.postMessage(render(r)));
// Loaded: the sandbox starts a render's clock only from here, so a slow thread start is not held against it.
parentPort?.postMessage({ ready: true } satisfies RenderReply);
