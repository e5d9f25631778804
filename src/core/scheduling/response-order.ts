/**
 * `preserve_ordering`: responses leave in the order their requests left the queue, even when a later
 * batch finishes on another instance first. Each dispatched request takes a place in line; what a backend
 * sends for a request that is not at the head waits (in order) until every earlier request has ended.
 * Triton reserves the place when a request joins a batch (DelegateResponse), which this follows.
 */
import type { FailOptions, ResponseSender, SendOptions } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';

type Event =
  | { readonly kind: 'send'; readonly outputs: readonly Tensor[]; readonly options: SendOptions }
  | { readonly kind: 'fail'; readonly error: NereidError; readonly options?: FailOptions };

export class ResponseOrder {
  private readonly line: OrderedSender[] = [];

  /** Takes the next place in line for `target`; the backend answers through the returned sender. */
  enter(target: ResponseSender): OrderedSender {
    const sender = new OrderedSender(target, this);
    this.line.push(sender);
    return sender;
  }

  /** Requests that have a place but whose answers have not all gone out. */
  get waiting(): number {
    return this.line.length;
  }

  /** @internal */
  isHead(sender: OrderedSender): boolean {
    return this.line[0] === sender;
  }

  /** @internal The head ended: pass on whatever the following requests already produced. */
  advance(): void {
    this.line.shift();
    while (this.line.length > 0) {
      const next = this.line[0];
      next.flush();
      if (!next.ended) return;
      this.line.shift();
      next.settle();
    }
  }
}

export class OrderedSender implements ResponseSender {
  private readonly held: Event[] = [];
  /** The backend ended this request (final response or error), whether or not it went out yet. */
  ended = false;
  private resolveSettled!: () => void;
  /** Resolves once everything the backend sent for this request went out. */
  readonly settled: Promise<void> = new Promise((resolve) => (this.resolveSettled = resolve));

  constructor(
    private readonly target: ResponseSender,
    private readonly order: ResponseOrder,
  ) {}

  get done(): boolean {
    return this.ended || this.target.done;
  }

  /** The target's bound, once this request is the head (before, its responses are held here). */
  get full(): boolean {
    return this.order.isHead(this) && (this.target.full ?? false);
  }

  whenWritable(): Promise<void> {
    return this.order.isHead(this) ? (this.target.whenWritable?.() ?? Promise.resolve()) : Promise.resolve();
  }

  send(outputs: readonly Tensor[], options: SendOptions): void {
    this.event({ kind: 'send', outputs, options }, options.final);
  }

  fail(error: NereidError, options?: FailOptions): void {
    this.event({ kind: 'fail', error, options }, true);
  }

  private event(e: Event, final: boolean): void {
    if (this.ended) return;
    if (final) this.ended = true;
    if (!this.order.isHead(this)) {
      this.held.push(e);
      return;
    }
    this.deliver(e);
    if (final) {
      this.order.advance();
      this.settle();
    }
  }

  /** @internal */
  flush(): void {
    for (const e of this.held.splice(0)) this.deliver(e);
  }

  /** @internal */
  settle(): void {
    this.resolveSettled();
  }

  private deliver(e: Event): void {
    if (e.kind === 'send') this.target.send(e.outputs, e.options);
    else this.target.fail(e.error, e.options);
  }
}
