/**
 * A single-consumer async stream of responses for one request: the backend side pushes responses (the last
 * one final) or an error; the frontend side iterates. Pushes after the end are ignored, so a late or
 * duplicate send from a backend can never corrupt a finished request.
 *
 * The queue of undelivered responses is bounded for producers that ask (issue 33): writable() resolves
 * at once while fewer than `maxUndelivered` responses wait for the consumer, else when the consumer takes
 * one, the stream ends, or the request's signal aborts. A frontend that stops pulling (its socket is full)
 * therefore stops the model instead of filling memory. A producer kept waiting `idleTimeoutMs` without the
 * consumer taking anything fails the stream CANCELLED and drops what was queued; an aborted signal drops
 * the queue too, so a client that leaves frees its undelivered responses at once.
 */
import { cancelled, type NereidError } from '../common/errors.js';
import { responseLimits, type ResponseLimits } from './response-limits.js';

type Waiter<T> = { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void };

/**
 * The producing side of a response stream: what a request's response sender writes to. ResponseStream is
 * one; the response cache puts a sink in front of it that stores a request's answer before passing it on.
 */
export interface ResponseSink<T> {
  /** True once the final response or an error was pushed. */
  readonly done: boolean;
  push(item: T, final: boolean): void;
  fail(error: NereidError): void;
  close(): void;
  /** Resolves when the sink can take another response without exceeding its bound (absent: always). */
  writable?(): Promise<void>;
  /** True while the sink is at its bound (writable() would wait); absent: never. */
  readonly full?: boolean;
}

export interface ResponseStreamOptions extends Partial<ResponseLimits> {
  /** The request's signal: when it aborts, queued responses are dropped and waiting producers released. */
  readonly signal?: AbortSignal;
  /** Called once when the stream ends (final response, error or close): the model's in-flight count. */
  readonly onEnd?: () => void;
}

export const idleMessage = (ms: number): string =>
  `the client took no response for ${ms} ms while the model waited to send more; request cancelled`;

export class ResponseStream<T> implements AsyncIterable<T>, ResponseSink<T> {
  private items: T[] = [];
  private error: NereidError | undefined;
  private ended = false;
  private waiter: Waiter<T> | undefined;
  private iterating = false;
  private readonly maxUndelivered: number;
  private readonly idleTimeoutMs: number;
  /** Producers waiting for room. */
  private writers: (() => void)[] = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private dropped = false;
  /** The request's signal while its listener is on it: removed once nothing is left to drop. */
  private signal: AbortSignal | undefined;
  private readonly onAbort = (): void => this.drop();
  private readonly onEnd: (() => void) | undefined;

  constructor(options: ResponseStreamOptions = {}) {
    this.onEnd = options.onEnd;
    const limits = responseLimits();
    this.maxUndelivered = Math.max(1, options.maxUndelivered ?? limits.maxUndelivered);
    this.idleTimeoutMs = options.idleTimeoutMs ?? limits.idleTimeoutMs;
    const signal = options.signal;
    if (signal !== undefined) {
      if (signal.aborted) this.dropped = true;
      else {
        // Removed when the stream is over (detach()): the signal may outlive the request by far (the core's
        // shared never-aborted one serves every in-process call that brings none), and a listener left on
        // it would keep this stream and its responses alive.
        this.signal = signal;
        signal.addEventListener('abort', this.onAbort, { once: true });
      }
    }
  }

  /** True once the final response or an error was pushed. */
  get done(): boolean {
    return this.ended;
  }

  /** Responses pushed that the consumer has not taken yet. */
  get undelivered(): number {
    return this.items.length;
  }

  push(item: T, final: boolean): void {
    if (this.ended) return;
    if (final) {
      this.ended = true;
      this.onEnd?.();
    }
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: item, done: false });
    } else if (!this.dropped) {
      this.items.push(item);
    }
    if (this.ended) {
      this.releaseWriters();
      this.detachIfDrained();
    }
  }

  fail(error: NereidError): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.();
    this.error = error;
    const w = this.waiter;
    if (w && this.items.length === 0) {
      this.waiter = undefined;
      w.reject(error);
    }
    this.releaseWriters();
    this.detachIfDrained();
  }

  /** Ends the stream without a further response (e.g. a decoupled model's final-only flag). */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.();
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: undefined, done: true });
    }
    this.releaseWriters();
    this.detachIfDrained();
  }

  get full(): boolean {
    return !this.ended && !this.dropped && this.items.length >= this.maxUndelivered;
  }

  writable(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((resolve) => {
      this.writers.push(resolve);
      this.armIdle();
    });
  }

  private armIdle(): void {
    if (this.idleTimeoutMs <= 0 || this.idleTimer !== undefined) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.writers.length === 0) return;
      this.items = [];
      this.fail(cancelled(idleMessage(this.idleTimeoutMs)));
    }, this.idleTimeoutMs);
  }

  private releaseWriters(): void {
    if (this.idleTimer !== undefined) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
    const writers = this.writers;
    if (writers.length === 0) return;
    this.writers = [];
    for (const w of writers) w();
  }

  /** The client left: nothing queued will be read; free it and let the producer see the cancellation. */
  private drop(): void {
    this.dropped = true;
    this.items = [];
    this.releaseWriters();
    this.detach();
  }

  /** Ended with every response taken: an abort has nothing left to free. */
  private detachIfDrained(): void {
    if (this.ended && this.items.length === 0) this.detach();
  }

  private detach(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
    this.signal = undefined;
  }

  private next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) {
      const value = this.items.shift()!;
      // The consumer took one: a waiting producer may send again (and its idle clock restarts).
      if (this.writers.length > 0 && this.items.length < this.maxUndelivered) this.releaseWriters();
      this.detachIfDrained();
      return Promise.resolve({ value, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    if (this.writers.length > 0) this.releaseWriters();
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterating) throw new Error('ResponseStream supports a single consumer');
    this.iterating = true;
    return { next: () => this.next() };
  }
}
