/**
 * Helpers for the builtin backends' tests: configs from pbtxt text through the real config pipeline, load
 * contexts, and requests whose sender records every response with the time it arrived.
 */
import type {
  Backend,
  BackendRequest,
  InstanceHandle,
  ModelLoadContext,
  ResponseSender,
  SendOptions,
} from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../model-config/index.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';

export function configOf(text: string, backend: string): FrozenModelConfig {
  const c = normalizeModelConfig(parseModelConfigText(text, 'config.pbtxt'), { backend });
  validateModelConfig(c);
  return freezeModelConfig(c);
}

export function loadContext(config: FrozenModelConfig): ModelLoadContext {
  return {
    config,
    modelName: config.name,
    version: 1,
    modelDir: '/nonexistent',
    versionDir: '/nonexistent/1',
    modelPath: '/nonexistent/1',
    backendConfig: {},
    log: silentLogger(),
  };
}

/** Loads `config` with `backend` and creates its first instance. */
export async function instanceOf(backend: Backend, config: FrozenModelConfig): Promise<InstanceHandle> {
  const handle = await backend.loadModel(loadContext(config));
  return handle.createInstance({
    name: `${config.name}_0`,
    groupName: config.name,
    index: 0,
    kind: 'KIND_CPU',
    deviceId: 0,
  });
}

export interface Recorded {
  readonly outputs: readonly Tensor[];
  readonly options: SendOptions;
  /** performance.now() when it was sent. */
  readonly at: number;
  /** The timer turn it was sent in (see countTimerTurns). */
  readonly turn: number;
}

let timerTurn = 0;

/**
 * Counts passes through the event loop's timer phase while it runs (a 1 ms interval), so a test can tell
 * whether two responses left in the same turn or with a timer wait between them, without reading a clock:
 * a sleep of any length lets the interval, due sooner, fire first. Returns the function that stops it.
 */
/** The current timer turn (see countTimerTurns). */
export function currentTimerTurn(): number {
  return timerTurn;
}

export function countTimerTurns(): () => void {
  const interval = setInterval(() => timerTurn++, 1);
  return () => clearInterval(interval);
}

export class RecordingSender implements ResponseSender {
  readonly sent: Recorded[] = [];
  error: NereidError | undefined;
  done = false;
  /** performance.now() when the stream ended. */
  endedAt = 0;
  private resolveEnded!: () => void;
  /** Resolves when the stream has ended (a decoupled backend may end it after execute() returned). */
  readonly ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));

  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.done) throw new Error('send() after the stream ended');
    this.sent.push({ outputs, options, at: performance.now(), turn: timerTurn });
    if (options.final) this.end();
  }

  fail(error: NereidError): void {
    if (this.done) throw new Error('fail() after the stream ended');
    this.error = error;
    this.end();
  }

  private end(): void {
    this.done = true;
    this.endedAt = performance.now();
    this.resolveEnded();
  }
}

/** Runs one execute() and waits until every request's stream has ended too. */
export async function executeAll(
  instance: InstanceHandle,
  requests: readonly (BackendRequest & { sender: RecordingSender })[],
): Promise<void> {
  await instance.execute(requests);
  await Promise.all(requests.map((r) => r.sender.ended));
}

export function tensor(name: string, datatype: 'INT32' | 'UINT32' | 'FP32', values: number[]): Tensor {
  const data = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => {
    if (datatype === 'INT32') data.writeInt32LE(v, i * 4);
    else if (datatype === 'UINT32') data.writeUInt32LE(v, i * 4);
    else data.writeFloatLE(v, i * 4);
  });
  return { name, datatype, shape: [values.length], data };
}

export function requestOf(
  inputs: Tensor[],
  outputs: string[],
  signal: AbortSignal = new AbortController().signal,
): BackendRequest & { sender: RecordingSender } {
  return {
    id: '',
    inputs: new Map(inputs.map((t) => [t.name, t])),
    requestedOutputs: new Set(outputs),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal,
    sender: new RecordingSender(),
  };
}

/** The one value of a one-element INT32/UINT32 output. */
export function valueOf(r: Recorded, name: string): number {
  const t = r.outputs.find((o) => o.name === name);
  if (t === undefined) throw new Error(`no output ${name}`);
  return t.datatype === 'UINT32' ? t.data.readUInt32LE(0) : t.data.readInt32LE(0);
}

/** How many timers and immediates the process holds right now. */
export function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length;
}
