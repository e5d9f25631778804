/**
 * Triton's `square` test backend (decoupled): for IN INT32[1] holding n it sends n responses, each with
 * OUT = n, then a flag-only final response (n = 0: no response at all, only the final flag). Config
 * parameters slow it down as Triton's QA uses it: CUSTOM_INFER_DELAY_NS before each response,
 * CUSTOM_OUTPUT_DELAY_NS before sending it, CUSTOM_CANCEL_DELAY_NS before giving up on a cancelled request;
 * CUSTOM_EMPTY_COUNT / CUSTOM_FAIL_COUNT make the last responses produce nothing (a response carrying an
 * error cannot continue a stream in this core, so "failed" responses are skipped like empty ones).
 * Cancellation is checked before each response, as the original does; the request then ends CANCELLED.
 * As in Triton, execute() returns once the requests' responses have started (Triton spawns a thread per
 * request and releases it): the instance takes its next batch while earlier requests keep streaming.
 * Before each response it awaits the sender's room for one more (the request's undelivered-response
 * bound), so a huge count answered to a slow reader costs time, not memory.
 */
import type {
  Backend,
  BackendRequest,
  InstanceHandle,
  ModelHandle,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { NereidError, cancelled, invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import {
  expectCount,
  expectName,
  expectShapeOne,
  expectType,
  integerParameter,
  scalarTensor,
  simpleModelHandle,
  sleep,
} from './support.js';

export interface SquareSettings {
  readonly inferDelayMs: number;
  readonly outputDelayMs: number;
  readonly cancelDelayMs: number;
  /** Responses (from the end) that produce nothing. */
  readonly silentCount: number;
}

/** The checks of Triton's square backend at model load, with its messages. */
export function validateSquareConfig(config: FrozenModelConfig): void {
  expectCount(config.input.length, 1, 'input');
  expectCount(config.output.length, 1, 'output');
  const [inT] = config.input;
  const [out] = config.output;
  expectName(inT, 'first input', 'IN');
  expectName(out, 'first output', 'OUT');
  expectShapeOne(inT);
  expectShapeOne(out);
  expectType(inT, 'INT32');
  expectType(out, 'INT32');
}

export function squareSettings(config: FrozenModelConfig): SquareSettings {
  const ms = (key: string): number => integerParameter(config, key, 0) / 1e6;
  return {
    inferDelayMs: ms('CUSTOM_INFER_DELAY_NS'),
    outputDelayMs: ms('CUSTOM_OUTPUT_DELAY_NS'),
    cancelDelayMs: ms('CUSTOM_CANCEL_DELAY_NS'),
    silentCount:
      integerParameter(config, 'CUSTOM_FAIL_COUNT', 0) + integerParameter(config, 'CUSTOM_EMPTY_COUNT', 0),
  };
}

async function runRequest(r: BackendRequest, settings: SquareSettings): Promise<void> {
  const inT = r.inputs.get('IN');
  if (inT === undefined || inT.data.length !== 4 || (inT.shape.length === 2 && inT.shape[0] !== 1)) {
    r.sender.fail(invalidArg('unexpected shape for IN input'));
    return;
  }
  const count = inT.data.readInt32LE(0);
  if (count < 0) {
    // Triton reads it as an unsigned count, which would mean ~4 billion responses.
    r.sender.fail(invalidArg(`expected IN to be a non-negative count of responses, got ${count}`));
    return;
  }
  const shape = inT.shape.map(() => 1);
  for (let e = 0; e < count; e++) {
    // Back-pressure: a client that reads slowly slows the responses down; none pile up in the server.
    await r.sender.whenWritable?.();
    if (r.sender.done) return;
    if (r.signal.aborted) {
      await sleep(settings.cancelDelayMs);
      r.sender.fail(cancelled('request cancelled'));
      return;
    }
    // Waits only on timers; a zero delay still yields, so a large count never blocks the event loop.
    await sleep(settings.inferDelayMs);
    if (e + settings.silentCount < count) {
      await sleep(settings.outputDelayMs);
      if (r.sender.done) return;
      r.sender.send([scalarTensor('OUT', 'INT32', count, shape)], { final: false });
    }
  }
  if (!r.sender.done) r.sender.send([], { final: true });
}

export class SquareBackend implements Backend {
  readonly name = 'square';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = '';
  readonly requiresModelFile = false;

  loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    return Promise.resolve().then(() => {
      validateSquareConfig(ctx.config);
      const settings = squareSettings(ctx.config);
      if (integerParameter(ctx.config, 'CUSTOM_FAIL_COUNT', 0) > 0) {
        ctx.log.warn(
          `model '${ctx.modelName}': CUSTOM_FAIL_COUNT responses are skipped (no error response mid-stream)`,
        );
      }
      return simpleModelHandle((spec): InstanceHandle => ({
        name: spec.name,
        execute: (requests) => {
          for (const r of requests) {
            runRequest(r, settings).catch((err: unknown) => {
              if (!r.sender.done) r.sender.fail(NereidError.from(err));
            });
          }
          return Promise.resolve();
        },
        close: () => Promise.resolve(),
      }));
    });
  }
}
