// Streams PROMPT's words back, one response each, through the request's response sender. execute()
// only starts the streams and returns; the responses follow from the event loop, as a real generator's
// would. A cancelled request stops early and still ends with the final flag, as Triton asks. The delay
// between words comes from the client (DELAY_MS), so it is bounded: at most MAX_DELAY_MS.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  NereidError,
  RESPONSE_COMPLETE_FINAL,
  Tensor,
  getParameter,
  type InferenceRequest,
  type ModelContext,
  type ModelInitializeArgs,
} from 'nereid-server';

/** Longest pause between two words a request may ask for. */
const MAX_DELAY_MS = 10_000;

export default class StreamModel {
  private delayMs = 0;

  initialize(_args: ModelInitializeArgs, context: ModelContext): void {
    this.delayMs = Number(getParameter(context.config, 'token_delay_ms') ?? '0');
  }

  execute(requests: InferenceRequest[]): void {
    for (const request of requests) void this.stream(request);
  }

  private async stream(request: InferenceRequest): Promise<void> {
    const sender = request.getResponseSender();
    try {
      const prompt = request.input('PROMPT')!.strings()[0];
      const delay = request.input('DELAY_MS')?.int32()[0] ?? this.delayMs;
      if (!(delay >= 0 && delay <= MAX_DELAY_MS)) {
        throw new NereidError('INVALID_ARG', `DELAY_MS must be between 0 and ${MAX_DELAY_MS}, got ${delay}`);
      }
      const words = prompt.split(/\s+/).filter((w) => w !== '');
      for (let i = 0; i < words.length && !request.isCancelled(); i++) {
        if (delay > 0) await sleep(delay, undefined, { signal: request.signal }).catch(() => undefined);
        if (request.isCancelled()) break;
        sender.send({
          outputs: [Tensor.fromStrings('TOKEN', [words[i]], [1]), Tensor.from('INDEX', new Int32Array([i]))],
        });
      }
      sender.send(undefined, RESPONSE_COMPLETE_FINAL);
    } catch (err) {
      if (!sender.done)
        sender.send({ error: err instanceof Error ? err : String(err) }, RESPONSE_COMPLETE_FINAL);
    }
  }
}
