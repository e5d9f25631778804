/**
 * AbortControllers for requests, reused. Node builds an AbortSignal in ~2.7 µs (its EventTarget set-up,
 * measured on Node 20), a measurable share of a small inference request that otherwise costs ~30 µs on
 * the server. A signal that ended neither aborted nor listened to cannot be told from a new one, so the
 * frontends hand it back here once the core is done with its request, and the next request takes it.
 *
 * Returning is the caller's promise that nothing of its own will abort the controller later (detach the
 * close/cancel listener first). Whatever the core or a backend left behind is checked here: a signal that
 * was aborted or still has an 'abort' listener is dropped, never reused.
 */
import { getEventListeners } from 'node:events';

/** Controllers kept for reuse; beyond this many idle ones, returned controllers are simply dropped. */
const MAX_IDLE = 256;

const idle: AbortController[] = [];

/** A controller whose signal is fresh: never aborted, no listeners. */
export function takeController(): AbortController {
  return idle.pop() ?? new AbortController();
}

/** Hands a controller back once its request is over; it is reused only if its signal is still clean. */
export function returnController(controller: AbortController): void {
  const { signal } = controller;
  if (signal.aborted || idle.length >= MAX_IDLE) return;
  if (getEventListeners(signal, 'abort').length > 0) return;
  idle.push(controller);
}

/** How many controllers wait for reuse (tests). */
export function idleControllers(): number {
  return idle.length;
}

/** What cancelOnClose() watches: an HTTP response (node:http's ServerResponse). */
interface ClosingResponse {
  readonly writableFinished: boolean;
  on(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
}

/**
 * An HTTP call's cancel signal: a client that disconnects before its response is sent cancels the request.
 * done() once the core is done with the request: the listener goes and a pooled controller (the default)
 * goes back to the pool for the next request (returnController's rule: only if it is still clean).
 */
export class CancelOnClose {
  readonly controller: AbortController;
  private readonly onClose: () => void;

  constructor(
    private readonly res: ClosingResponse,
    private readonly pooled = true,
  ) {
    const controller = pooled ? takeController() : new AbortController();
    this.controller = controller;
    this.onClose = () => {
      if (!res.writableFinished) controller.abort();
    };
    // on, not once: the listener is removed by done() either way, and once wraps it in another closure.
    res.on('close', this.onClose);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  done(): void {
    this.res.removeListener('close', this.onClose);
    if (this.pooled) returnController(this.controller);
  }
}
