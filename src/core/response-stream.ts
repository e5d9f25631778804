/**
 * A single-consumer async stream of responses for one request: the backend side pushes responses (the last
 * one final) or an error; the frontend side iterates. Pushes after the end are ignored, so a late or
 * duplicate send from a backend can never corrupt a finished request.
 */
import type { NereidError } from '../common/errors.js';

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
}

export class ResponseStream<T> implements AsyncIterable<T>, ResponseSink<T> {
  private readonly items: T[] = [];
  private error: NereidError | undefined;
  private ended = false;
  private waiter: Waiter<T> | undefined;
  private iterating = false;

  /** True once the final response or an error was pushed. */
  get done(): boolean {
    return this.ended;
  }

  push(item: T, final: boolean): void {
    if (this.ended) return;
    if (final) this.ended = true;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  fail(error: NereidError): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    const w = this.waiter;
    if (w && this.items.length === 0) {
      this.waiter = undefined;
      w.reject(error);
    }
  }

  /** Ends the stream without a further response (e.g. a decoupled model's final-only flag). */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: undefined, done: true });
    }
  }

  private next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
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
