/**
 * Triton's `repeat` test backend (decoupled): for a request with IN INT32[n], DELAY UINT32[n] and WAIT
 * UINT32[1] it sends n responses, the i-th after waiting DELAY[i] ms, with OUT = IN[i] and IDX = i, then a
 * flag-only final response. As in Triton, execute() returns after WAIT ms (the longest WAIT of the batch),
 * whether or not the responses are done: the instance then takes its next request while the earlier ones
 * keep streaming, so with one instance the responses of several requests interleave. A cancelled request
 * stops at once and ends CANCELLED (Triton's backend does not look).
 *
 * The waits come from clients, so Nereid bounds them (Triton's test backend does not): a WAIT over
 * MAX_WAIT_MS or a DELAY over MAX_DELAY_MS is refused with INVALID_ARG, and abort() (an unload that waited
 * too long) ends every wait at once.
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
  readInt32s,
  readUint32s,
  scalarTensor,
  shapeToString,
  simpleModelHandle,
  sleep,
} from './support.js';

const ONE = [1] as const;
/** execute() waits WAIT ms with the instance held: at most 10 s. */
export const MAX_WAIT_MS = 10_000;
/** Each response waits DELAY[i] ms (the instance is free meanwhile): at most 60 s. */
export const MAX_DELAY_MS = 60_000;

/** The checks of Triton's repeat backend at model load, with its messages. */
export function validateRepeatConfig(config: FrozenModelConfig): void {
  if (config.max_batch_size !== 0) {
    throw invalidArg('repeat backend only supports models with max_batch_size == 0');
  }
  expectCount(config.input.length, 3, 'input');
  expectCount(config.output.length, 2, 'output');
  const [inT, delay, wait] = config.input;
  const [out, idx] = config.output;
  expectName(inT, 'first input', 'IN');
  expectName(delay, 'second input', 'DELAY');
  expectName(wait, 'third input', 'WAIT');
  expectName(out, 'first output', 'OUT');
  expectName(idx, 'second output', 'IDX');
  if (inT.dims.length !== 1) {
    throw invalidArg(`expected IN shape to have one dimension, got ${shapeToString(inT.dims)}`);
  }
  if (shapeToString(inT.dims) !== shapeToString(delay.dims)) {
    throw invalidArg(
      `expected IN and DELAY shape to match, got ${shapeToString(inT.dims)} and ${shapeToString(delay.dims)}`,
    );
  }
  expectShapeOne(wait);
  expectShapeOne(out);
  expectShapeOne(idx);
  expectType(inT, 'INT32');
  expectType(delay, 'UINT32');
  expectType(wait, 'UINT32');
  expectType(out, 'INT32');
  expectType(idx, 'UINT32');
}

/** Sends one response per element; resolves once the request has ended. */
async function respond(
  r: BackendRequest,
  values: Int32Array,
  delays: Uint32Array,
  signal: AbortSignal,
): Promise<void> {
  for (let e = 0; e < values.length; e++) {
    if (!(await sleep(delays[e], signal))) break;
    await r.sender.whenWritable?.(); // back-pressure from a slow reader
    if (r.sender.done) return;
    if (signal.aborted) break;
    r.sender.send([scalarTensor('OUT', 'INT32', values[e], ONE), scalarTensor('IDX', 'UINT32', e, ONE)], {
      final: false,
    });
  }
  if (r.sender.done) return;
  if (r.signal.aborted) r.sender.fail(cancelled('request cancelled'));
  else r.sender.send([], { final: true });
}

/**
 * Checks the request and starts its responses (they run on after execute() returns); resolves after the
 * request's WAIT, or at once for a request that failed.
 */
function startRequest(r: BackendRequest, stopped: AbortSignal): Promise<unknown> {
  const wait = r.inputs.get('WAIT');
  const inT = r.inputs.get('IN');
  const delay = r.inputs.get('DELAY');
  if (wait === undefined || wait.data.length !== 4) {
    r.sender.fail(invalidArg('unexpected size for WAIT input'));
    return Promise.resolve();
  }
  if (inT === undefined || delay === undefined) {
    r.sender.fail(invalidArg('repeat backend requires inputs IN and DELAY'));
    return Promise.resolve();
  }
  if (shapeToString(inT.shape) !== shapeToString(delay.shape)) {
    r.sender.fail(
      invalidArg(
        `expected IN and DELAY shape to match, got ${shapeToString(inT.shape)} and ${shapeToString(delay.shape)}`,
      ),
    );
    return Promise.resolve();
  }
  const waitMs = wait.data.readUInt32LE(0);
  const delays = readUint32s(delay);
  if (waitMs > MAX_WAIT_MS || delays.some((d) => d > MAX_DELAY_MS)) {
    r.sender.fail(
      invalidArg(`WAIT must be at most ${MAX_WAIT_MS} ms and each DELAY at most ${MAX_DELAY_MS} ms`),
    );
    return Promise.resolve();
  }
  const signal = AbortSignal.any([r.signal, stopped]);
  respond(r, readInt32s(inT), delays, signal).catch((err: unknown) => {
    if (!r.sender.done) r.sender.fail(NereidError.from(err));
  });
  return sleep(waitMs, signal);
}

export class RepeatBackend implements Backend {
  readonly name = 'repeat';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = '';
  readonly requiresModelFile = false;

  loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    return Promise.resolve().then(() => {
      validateRepeatConfig(ctx.config);
      return simpleModelHandle((spec): InstanceHandle => {
        const stop = new AbortController();
        return {
          name: spec.name,
          execute: async (requests) => {
            await Promise.all(requests.map((r) => startRequest(r, stop.signal)));
          },
          abort: (error) => {
            stop.abort(error);
          },
          close: () => Promise.resolve(),
        };
      });
    });
  }
}
