/**
 * Response senders the sequence batcher puts between a backend and a request: one that keeps a
 * sequence's state outputs before passing the response on (the request's own sender then drops every
 * output the client did not ask for), and one that swallows the answers of padding rows.
 */
import type { FailOptions, ResponseSender, SendOptions } from '../../../backend-api/backend.js';
import type { NereidError } from '../../../common/errors.js';
import type { Tensor } from '../../../common/tensor.js';
import { captureStates, type SequenceStates, type StateSpec } from './state.js';

/**
 * Forwards to `inner` (the request's own sender, which the instance pool finds through `inner` for its
 * statistics) after keeping the state outputs in `states`.
 */
export class StateKeepingSender implements ResponseSender {
  constructor(
    readonly inner: ResponseSender,
    private readonly specs: readonly StateSpec[],
    private readonly states: SequenceStates,
  ) {}

  get done(): boolean {
    return this.inner.done;
  }

  get full(): boolean {
    return this.inner.full ?? false;
  }

  whenWritable(): Promise<void> {
    return this.inner.whenWritable?.() ?? Promise.resolve();
  }

  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.inner.done) return;
    captureStates(this.specs, outputs, this.states);
    this.inner.send(outputs, options);
  }

  fail(error: NereidError, options?: FailOptions): void {
    this.inner.fail(error, options);
  }
}

/** The sender of a padding row: nobody waits for it, so everything it gets is dropped. */
export class DiscardingSender implements ResponseSender {
  private ended = false;

  get done(): boolean {
    // Never done before the batch runs, or a backend would drop the row and shift the slots below it.
    return this.ended;
  }

  send(_outputs: readonly Tensor[], options: SendOptions): void {
    if (options.final) this.ended = true;
  }

  fail(): void {
    this.ended = true;
  }
}
