/**
 * Triton's `identity` test backend: OUTPUT<i> is a copy of INPUT<i> (same datatype and shape), for every
 * requested output. Config parameters as Triton's QA uses them: `execute_delay_ms` waits before each
 * execution (a whole batch waits once), `instance_wise_delay_multiplier` scales it by the instance's device
 * id (at least 1), `creation_delay_sec` slows the load. Each response carries the example parameters the
 * original attaches (param0, param1, param2). The delay is a timer, never CPU work; requests cancelled
 * during it end CANCELLED, and when all of a batch's requests are cancelled the wait stops at once.
 */
import type {
  Backend,
  BackendRequest,
  InstanceHandle,
  InstanceSpec,
  ModelHandle,
  ModelLoadContext,
} from '../../backend-api/backend.js';
import { cancelled, invalidArg, unsupported } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { integerParameter, shapeToString, simpleModelHandle, sleep } from './support.js';

const RESPONSE_PARAMETERS = { param0: 'an example string parameter', param1: 42, param2: false } as const;

/** The checks of Triton's identity backend at model load, with its messages. */
export function validateIdentityConfig(config: FrozenModelConfig): void {
  if (config.input.length !== config.output.length) {
    throw invalidArg('model configuration must have equal input/output pairs');
  }
  const inputs = new Map<string, { type: string; shape: string }>();
  const outputs = new Map<string, { type: string; shape: string }>();
  for (let i = 0; i < config.input.length; i++) {
    const input = config.input[i];
    const output = config.output[i];
    if (!input.name.startsWith('INPUT')) {
      throw invalidArg(`expected input name to follow INPUT<index> pattern, got '${input.name}'`);
    }
    if (!output.name.startsWith('OUTPUT')) {
      throw invalidArg(`expected output name to follow OUTPUT<index> pattern, got '${output.name}'`);
    }
    inputs.set(input.name.slice('INPUT'.length), {
      type: input.data_type,
      shape: shapeToString(input.reshape?.shape ?? input.dims),
    });
    outputs.set(output.name.slice('OUTPUT'.length), {
      type: output.data_type,
      shape: shapeToString(output.reshape?.shape ?? output.dims),
    });
  }
  for (const [index, out] of outputs) {
    const input = inputs.get(index);
    if (input === undefined) throw invalidArg('expected input and output indices to match');
    if (input.type !== out.type) {
      throw invalidArg(`expected input and output datatype to match, got ${input.type} and ${out.type}`);
    }
    if (input.shape !== out.shape) {
      throw invalidArg(`expected input and output shape to match, got ${input.shape} and ${out.shape}`);
    }
  }
}

/** A signal that aborts once every one of `signals` has aborted; dispose() removes its listeners. */
function allAborted(signals: readonly AbortSignal[]): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  let remaining = signals.filter((s) => !s.aborted).length;
  const onAbort = (): void => {
    if (--remaining === 0) controller.abort();
  };
  if (remaining === 0) controller.abort();
  else for (const s of signals) if (!s.aborted) s.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      for (const s of signals) s.removeEventListener('abort', onAbort);
    },
  };
}

function respond(r: BackendRequest): void {
  if (r.sender.done) return;
  if (r.signal.aborted) {
    r.sender.fail(cancelled('request cancelled'));
    return;
  }
  const outputs: Tensor[] = [];
  for (const name of r.requestedOutputs) {
    const inputName = 'INPUT' + name.slice('OUTPUT'.length);
    const input = r.inputs.get(inputName);
    if (input === undefined) {
      r.sender.fail(unsupported(`failed to get input '${inputName}'`));
      return;
    }
    // A copy: outputs belong to the core after send(), inputs only until execute() settles.
    outputs.push({ name, datatype: input.datatype, shape: input.shape, data: Buffer.from(input.data) });
  }
  r.sender.send(outputs, { final: true, parameters: RESPONSE_PARAMETERS });
}

class IdentityInstance implements InstanceHandle {
  readonly name: string;

  constructor(
    spec: InstanceSpec,
    private readonly delayMs: number,
  ) {
    this.name = spec.name;
  }

  async execute(requests: readonly BackendRequest[]): Promise<void> {
    if (this.delayMs > 0) {
      const all = allAborted(requests.map((r) => r.signal));
      try {
        await sleep(this.delayMs, all.signal);
      } finally {
        all.dispose();
      }
    }
    for (const r of requests) respond(r);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

export class IdentityBackend implements Backend {
  readonly name = 'identity';
  readonly platforms: readonly string[] = [];
  readonly defaultModelFilename = '';
  readonly requiresModelFile = false;

  async loadModel(ctx: ModelLoadContext): Promise<ModelHandle> {
    validateIdentityConfig(ctx.config);
    const creationDelaySec = integerParameter(ctx.config, 'creation_delay_sec', 0);
    if (creationDelaySec > 0) await sleep(creationDelaySec * 1000);
    const executeDelayMs = integerParameter(ctx.config, 'execute_delay_ms', 0);
    const multiplied = integerParameter(ctx.config, 'instance_wise_delay_multiplier', 0) > 0;
    return simpleModelHandle((spec) => {
      if (spec.kind !== 'KIND_CPU') throw invalidArg("'identity' backend only supports CPU instances");
      const multiplier = multiplied ? Math.max(spec.deviceId, 1) : 1;
      return new IdentityInstance(spec, executeDelayMs * multiplier);
    });
  }
}
