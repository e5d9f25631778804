/**
 * The generator form of execute(): a model whose `execute` is a generator function (`async *execute(request)`
 * or `*execute(request)`) is called once per request, and each value it yields is sent as one response of
 * that request. When the generator returns, the final flag goes out (with the returned response, if it
 * returned one); when it throws, the request ends with that error. A request that is cancelled (client
 * gone, gRPC cancel, drop after a stall) stops its generator through `return()`, so the model's `finally`
 * blocks run, and the request then ends with the final flag as a sender-form model would end it.
 *
 * The driver is the only one to talk to the request's sender, so the model never sees one in this form.
 */
import { RESPONSE_COMPLETE_FINAL, type InferenceRequest } from '../../../sdk/request.js';
import type { InferenceResponse, InferenceResponseInit } from '../../../sdk/response.js';
import type { WorkerSender } from './sender.js';

type Yielded = InferenceResponse | InferenceResponseInit | null | undefined;
/** A sync generator may yield promises (awaited before sending). */
type AnyIterator =
  Iterator<Yielded | PromiseLike<Yielded>, Yielded | PromiseLike<Yielded>> | AsyncIterator<Yielded, Yielded>;

/** True for `function*`, `async function*` and generator methods (what the model author wrote). */
export function isGeneratorFunction(fn: unknown): boolean {
  const tag = Object.prototype.toString.call(fn);
  return tag === '[object AsyncGeneratorFunction]' || tag === '[object GeneratorFunction]';
}

/**
 * Runs one request's generator to its end. `fail` ends the request with an error when the sender can no
 * longer be used for it (the model threw, or sent something the sender refused).
 */
export async function driveGenerator(
  start: () => unknown,
  request: InferenceRequest,
  sender: WorkerSender,
  fail: (err: unknown) => void,
): Promise<void> {
  let it: AnyIterator;
  try {
    it = start() as AnyIterator;
    if (typeof it !== 'object' || it === null || typeof it.next !== 'function') {
      throw new Error('a generator execute() must return an iterator');
    }
  } catch (err) {
    fail(err);
    return;
  }
  const generator = it;
  let completed = false;
  let stopped = false;
  // return() runs the generator's finally blocks. On an async generator busy in an await it is queued
  // and takes effect at its next yield (or return): a model that awaits for long should pass
  // request.signal to what it awaits.
  const stop = (): void => {
    if (stopped || completed) return;
    stopped = true;
    void Promise.resolve()
      .then(() => generator.return?.(undefined))
      .catch(() => undefined);
  };
  request.signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      // Back-pressure: the next value is asked for once the reader has room for it.
      await sender.whenWritable();
      if (request.signal.aborted || sender.done) break;
      let step: IteratorResult<Yielded | PromiseLike<Yielded>, Yielded | PromiseLike<Yielded>>;
      try {
        step = await generator.next();
      } catch (err) {
        completed = true; // a generator that threw has finished: nothing left to stop
        throw err;
      }
      // A sync generator may yield promises; an async one has awaited its values already.
      const value = await Promise.resolve<Yielded>(step.value);
      if (step.done) {
        completed = true;
        if (!sender.done && !request.signal.aborted) {
          sender.send(value ?? undefined, RESPONSE_COMPLETE_FINAL);
        }
        break;
      }
      if (request.signal.aborted || sender.done) break;
      if (value === undefined || value === null) continue;
      // A yielded { error } ends the request (the sender closes itself); the generator is stopped below.
      sender.send(value);
    }
  } catch (err) {
    // The generator threw, or the sender refused what it yielded (then the generator is stopped below).
    // A cancelled request's generator may throw its signal's AbortError: that is the cancellation, not a
    // failure, and the request ends with the final flag below.
    if (!sender.done && !request.signal.aborted) fail(err);
  } finally {
    request.signal.removeEventListener('abort', stop);
    stop();
  }
  // Cancelled, or stopped by a yielded error: a cancelled stream still ends with the final flag.
  if (!sender.done) {
    try {
      sender.send(undefined, RESPONSE_COMPLETE_FINAL);
    } catch (err) {
      if (!sender.done) fail(err);
    }
  }
}
