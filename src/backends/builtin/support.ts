/**
 * What the builtin test backends share: abortable timers (they wait, never compute), Triton-style reading
 * of `parameters { key value { string_value } }`, one-element output tensors, and the config checks their
 * C++ originals make at load. Everything runs on the event loop; no timer outlives its request.
 */
import type { InstanceHandle, InstanceSpec, ModelHandle } from '../../backend-api/backend.js';
import { invalidArg } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';

/**
 * Resolves true after `ms` milliseconds, or false as soon as `signal` aborts; either way the timer and
 * the abort listener are gone when it settles. A zero wait still yields once to the event loop, so a long
 * run of zero delays cannot starve other work.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (): void => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    };
    const onAbort = (): void => {
      if (ms > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
      resolve(false);
    };
    const timer = ms > 0 ? setTimeout(done, ms) : setImmediate(done);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A config `parameters` entry's string_value, or undefined. */
export function stringParameter(config: FrozenModelConfig, key: string): string | undefined {
  return Object.hasOwn(config.parameters, key) ? config.parameters[key].string_value : undefined;
}

/**
 * A non-negative integer parameter the way Triton's test backends read them: all digits, else the default
 * (they log and keep the default rather than fail the load).
 */
export function integerParameter(config: FrozenModelConfig, key: string, fallback: number): number {
  const text = stringParameter(config, key);
  if (text === undefined || !/^\d{1,15}$/.test(text)) return fallback;
  return Number(text);
}

/** `[1,2,3]`, as Triton's ShapeToString prints dims. */
export const shapeToString = (dims: readonly number[]): string => `[${dims.join(',')}]`;

/** A one-element INT32 or UINT32 tensor (the outputs of `repeat` and `square`). */
export function scalarTensor(
  name: string,
  datatype: 'INT32' | 'UINT32',
  value: number,
  shape: readonly number[],
): Tensor {
  const data = Buffer.allocUnsafe(4);
  if (datatype === 'INT32') data.writeInt32LE(value, 0);
  else data.writeUInt32LE(value, 0);
  return { name, datatype, shape, data };
}

/** Copies a 32-bit tensor's elements out (the backends keep them after the input buffers may go). */
export function readInt32s(t: Tensor): Int32Array {
  const out = new Int32Array(Math.floor(t.data.length / 4));
  for (let i = 0; i < out.length; i++) out[i] = t.data.readInt32LE(i * 4);
  return out;
}

export function readUint32s(t: Tensor): Uint32Array {
  const out = new Uint32Array(Math.floor(t.data.length / 4));
  for (let i = 0; i < out.length; i++) out[i] = t.data.readUInt32LE(i * 4);
  return out;
}

/** What a config check needs to know of one input or output. */
interface TensorConfig {
  readonly name: string;
  readonly data_type: string;
  readonly dims: readonly number[];
}

/** Triton's "expected <what> tensor name to be X, got Y" check. */
export function expectName(t: TensorConfig, what: string, expected: string): void {
  if (t.name !== expected) {
    throw invalidArg(`expected ${what} tensor name to be ${expected}, got ${t.name}`);
  }
}

/** Triton's "expected X datatype to be INT32, got TYPE_..." check. */
export function expectType(t: TensorConfig, expected: 'INT32' | 'UINT32'): void {
  if (t.data_type !== `TYPE_${expected}`) {
    throw invalidArg(`expected ${t.name} datatype to be ${expected}, got ${t.data_type}`);
  }
}

/** Triton's "expected X shape to be [1], got ..." check. */
export function expectShapeOne(t: TensorConfig): void {
  if (t.dims.length !== 1 || t.dims[0] !== 1) {
    throw invalidArg(`expected ${t.name} shape to be [1], got ${shapeToString(t.dims)}`);
  }
}

/** Triton's count check, e.g. "expected 3 inputs, got 2" / "expected 1 input, got 2". */
export function expectCount(got: number, expected: number, noun: 'input' | 'output'): void {
  if (got !== expected) {
    throw invalidArg(`expected ${expected} ${noun}${expected === 1 ? '' : 's'}, got ${got}`);
  }
}

/** A model handle whose instances need nothing but a name (no sessions, threads or files to release). */
export function simpleModelHandle(createInstance: (spec: InstanceSpec) => InstanceHandle): ModelHandle {
  return {
    createInstance: (spec) => new Promise((resolve) => resolve(createInstance(spec))),
    unload: () => Promise.resolve(),
  };
}
