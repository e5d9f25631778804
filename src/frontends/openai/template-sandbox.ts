/**
 * Renders chat templates away from the event loop, within a time and a memory limit. One worker thread
 * (template-worker.ts), started on the first render, takes renders one at a time; a render that runs past
 * TEMPLATE_TIME_LIMIT_MS is stopped by ending the thread, and one that allocates past the thread's heap
 * limit ends it by itself. Either way that request fails with a clear reason, the renders queued behind it
 * go to a fresh thread, and the server keeps serving. A legitimate template renders in well under a
 * millisecond, so the limits only ever meet a broken or hostile one.
 */
import { Worker } from 'node:worker_threads';
import type { RenderReply, RenderRequest } from './template-worker.js';

/** How long one render may take. */
export const TEMPLATE_TIME_LIMIT_MS = 2000;
/** The render thread's heap (old generation), in MiB. */
export const TEMPLATE_HEAP_LIMIT_MB = 64;
/** The longest prompt a template may produce (UTF-16 code units). */
export const TEMPLATE_MAX_PROMPT_LENGTH = 8 * 1024 * 1024;
/** Renders waiting for the thread; past this a render is refused at once. */
export const TEMPLATE_MAX_QUEUED = 1024;

const WORKER_URL = new URL('./template-worker.js', import.meta.url);

export class TemplateRenderError extends Error {}

interface Pending {
  readonly request: RenderRequest;
  readonly resolve: (prompt: string) => void;
  readonly reject: (err: Error) => void;
}

export class TemplateSandbox {
  private worker: Worker | undefined;
  /** The thread has loaded and takes renders. */
  private ready = false;
  private readonly queue: Pending[] = [];
  private current: Pending | undefined;
  private timer: NodeJS.Timeout | undefined;
  private nextId = 1;

  constructor(
    private readonly timeLimitMs = TEMPLATE_TIME_LIMIT_MS,
    private readonly heapLimitMb = TEMPLATE_HEAP_LIMIT_MB,
  ) {}

  /** The prompt `text` renders to with `context`; rejects with a TemplateRenderError saying why not. */
  render(text: string, context: Record<string, unknown>): Promise<string> {
    if (this.queue.length >= TEMPLATE_MAX_QUEUED) {
      return Promise.reject(new TemplateRenderError('too many chat templates waiting to render'));
    }
    return new Promise((resolve, reject) => {
      const request = { id: this.nextId++, text, context, maxLength: TEMPLATE_MAX_PROMPT_LENGTH };
      this.queue.push({ request, resolve, reject });
      this.pump();
    });
  }

  /** Ends the thread (renders in flight fail). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.fail(new TemplateRenderError('the server is shutting down'));
    for (const p of this.queue.splice(0)) p.reject(new TemplateRenderError('the server is shutting down'));
    await w?.terminate();
  }

  private pump(): void {
    if (this.current !== undefined || this.queue.length === 0) return;
    const worker = this.thread();
    if (!this.ready) return; // pumped again when the thread says it is ready
    const next = this.queue.shift()!;
    this.current = next;
    this.timer = setTimeout(() => {
      this.fail(new TemplateRenderError(`it ran for more than ${this.timeLimitMs} ms and was stopped`));
      this.restart(worker);
    }, this.timeLimitMs);
    worker.postMessage(next.request);
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_URL, {
      name: 'nereid:chat-template',
      resourceLimits: { maxOldGenerationSizeMb: this.heapLimitMb, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    this.ready = false;
    worker.on('message', (reply: RenderReply) => {
      if ('ready' in reply) {
        this.ready = true;
        this.pump();
        return;
      }
      const p = this.current;
      if (p === undefined || p.request.id !== reply.id) return;
      this.settle();
      if ('prompt' in reply) p.resolve(reply.prompt);
      else p.reject(new TemplateRenderError(reply.error));
      this.pump();
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const reason =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `it used more than the ${this.heapLimitMb} MiB a template may use and was stopped`
          : `its render thread failed: ${err.message}`;
      if (!this.ready && this.worker === worker) {
        // The thread could not even start: fail what waits rather than start threads in a loop.
        this.worker = undefined;
        for (const p of this.queue.splice(0)) p.reject(new TemplateRenderError(reason));
        void worker.terminate();
        return;
      }
      this.fail(new TemplateRenderError(reason));
      this.restart(worker);
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.ready = false;
      this.fail(new TemplateRenderError('its render thread stopped'));
      this.pump();
    });
    this.worker = worker;
    return worker;
  }

  /** Rejects the render in flight, if any. */
  private fail(err: Error): void {
    const p = this.current;
    this.settle();
    p?.reject(err);
  }

  private settle(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.current = undefined;
  }

  /** Drops a thread that is stuck or broken; the next render starts a fresh one. */
  private restart(worker: Worker): void {
    if (this.worker === worker) {
      this.worker = undefined;
      this.ready = false;
    }
    void worker.terminate();
    this.pump();
  }
}
