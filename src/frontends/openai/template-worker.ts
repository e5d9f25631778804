/**
 * The thread chat templates render in (template-sandbox.ts). A template comes from a model folder or a
 * model config, so it is hostile: `range(1e9)` or a loop that never ends would take the main thread with
 * it. Here it can only take this thread, which the sandbox ends when it runs past its time or memory.
 * Compiled templates are kept by their text, a bounded number of them.
 */
import { parentPort } from 'node:worker_threads';
import { Environment, Template } from '@huggingface/jinja';

export interface RenderRequest {
  readonly id: number;
  readonly text: string;
  readonly context: Record<string, unknown>;
  /** Longest prompt the render may produce, in UTF-16 code units. */
  readonly maxLength: number;
}

// Template.render declares the library's globals (range among them) in a fresh Environment and refuses to
// declare a name twice, so the bounded range goes in where the globals are declared. This thread renders
// templates only, so the change reaches nothing else.
// (The library's .d.ts imports its runtime types without an extension, so they do not resolve here: the one
// method used is typed by hand.)
interface Scope {
  set: (this: Scope, name: string, value: unknown) => unknown;
}
const scopes = Environment as unknown as { prototype: Scope };
const declareGlobal = scopes.prototype.set;
scopes.prototype.set = function (this: Scope, name: string, value: unknown): unknown {
  return declareGlobal.call(this, name, name === 'range' ? boundedRange : value);
};

export type RenderReply =
  | { readonly ready: true }
  | { readonly id: number; readonly prompt: string }
  | { readonly id: number; readonly error: string };

const CACHE_LIMIT = 64;
/** The most items `range()` may make: the library's own builds the whole list, so `range(1e9)` would fill the heap. */
export const MAX_RANGE_ITEMS = 1 << 20;

/** Python's range() as the template library has it, refusing lists past MAX_RANGE_ITEMS before building them. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (![start, stop, step].every(Number.isFinite)) throw new Error('range() takes finite numbers');
  if (step === 0) throw new Error('range() step must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (count > MAX_RANGE_ITEMS) throw new Error(`range() of ${count} items is more than ${MAX_RANGE_ITEMS}`);
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = start + i * step;
  return out;
}
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
