/**
 * Model warmup (config.pbtxt `model_warmup`, Triton's model_configuration.md "Model Warmup"): before a
 * version turns READY, every instance runs every sample `count` times (at least once), each time as one
 * execute() of `batch_size` requests, so lazy initialisation happens at load and not on the first client
 * requests. A sample whose requests fail fails the load with Triton's message, `failed to run warmup
 * sample '<name>': <error>; `.
 *
 * Inputs are zeros (`zero_data`), random bytes (`random_data`; BYTES inputs get empty strings instead, as
 * in Triton) or a file's bytes (`input_data_file`, in the model folder's `warmup/` subfolder, the path
 * confined to the model folder as every path a config names: model-paths.ts). Inputs the config does not declare are passed as they are
 * (sequence control tensors for a sequence model). Warmup requests go to the instances directly: no
 * scheduler, no response cache, and no statistics (they are not client inferences).
 */
import { randomFillSync } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BackendRequest, InstanceHandle, ResponseSender } from '../../backend-api/backend.js';
import { byteSizeOf, fromConfigDataType, type DataType } from '../../common/datatype.js';
import { NereidError, invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { ModelFolder } from './model-paths.js';
import { elementCount, type Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig, ModelWarmupInput } from '../../model-config/model-config.js';
import { MAX_WARMUP_INPUT_BYTES } from '../../model-config/validate-limits.js';
import { prepareRequest, withRequestId } from '../inference.js';
import type { InferInput } from '../types.js';
import { NEVER_ABORTED } from '../../common/never-aborted.js';

/** The folder under the model folder that `input_data_file` names files in (Triton's kWarmupDataFolder). */
export const WARMUP_FOLDER = 'warmup';
/** A BYTES warmup file is used whole; beyond this it is refused (a repository file is untrusted). */
export const MAX_WARMUP_BYTES_FILE = 64 * 1024 * 1024;

interface Sample {
  readonly name: string;
  readonly count: number;
  /** One entry per request of the batch (batch_size of them). */
  readonly requests: readonly WarmupRequest[];
}

interface WarmupRequest {
  readonly inputs: ReadonlyMap<string, Tensor>;
  readonly batchSize: number;
}

export interface WarmupOptions {
  /** The model's folder, with the repository's path rules; files come from its `warmup/` subfolder. */
  readonly folder: ModelFolder;
  readonly log: Logger;
  /**
   * Aborted when the load is no longer wanted (unload, shutdown): warmup stops before its next
   * iteration, its running requests see the signal (a Python model hears the cancellation), and it
   * rejects with the signal's reason.
   */
  readonly signal?: AbortSignal;
}

/** The signal's reason as the load's error. */
function cancelledBy(signal: AbortSignal): NereidError {
  const reason: unknown = signal.reason;
  return reason instanceof NereidError ? reason : NereidError.from(reason);
}

/**
 * The path of `file` in the model's `warmup/` folder, joined as Triton joins it and checked by the rules
 * every config-named path follows (model-paths.ts: it must stay inside the model folder, symbolic links
 * included, and exist).
 */
export function warmupFilePath(folder: ModelFolder, file: string, what: string): Promise<string> {
  return folder.resolveValue(path.join(folder.location.modelDir, WARMUP_FOLDER), file, what, {
    mustExist: true,
  });
}

/** The first `bytes` bytes of the file (all of it when undefined, up to the BYTES limit). */
async function readWarmupFile(
  folder: ModelFolder,
  file: string,
  what: string,
  bytes: number | undefined,
): Promise<Buffer> {
  const real = await warmupFilePath(folder, file, what);
  const info = await stat(real);
  if (!info.isFile()) throw invalidArg(`warmup input_data_file '${file}' is not a file`);
  if (bytes === undefined && info.size > MAX_WARMUP_BYTES_FILE) {
    throw invalidArg(
      `warmup input_data_file '${file}' is ${info.size} bytes, more than the ${MAX_WARMUP_BYTES_FILE} a BYTES input may use`,
    );
  }
  const want = bytes ?? info.size;
  if (info.size < want) {
    throw invalidArg(
      `[request id: <id_unknown>] warmup setting expects ${want} bytes, but the data provided from ${file} only has ${info.size} bytes`,
    );
  }
  const handle = await open(real, 'r');
  try {
    const out = Buffer.alloc(want);
    let done = 0;
    while (done < want) {
      const { bytesRead } = await handle.read(out, done, want - done, done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    if (done < want) throw invalidArg(`warmup input_data_file '${file}' shrank while it was read`);
    return out;
  } finally {
    await handle.close();
  }
}

async function inputData(
  sample: string,
  name: string,
  spec: Readonly<Pick<ModelWarmupInput, 'zero_data' | 'random_data' | 'input_data_file'>>,
  datatype: DataType,
  dims: readonly number[],
  options: WarmupOptions,
): Promise<Buffer> {
  if (dims.some((d) => d < 0)) {
    throw invalidArg(`warmup setting expects all variable-size dimensions are specified for input '${name}'`);
  }
  const count = elementCount(dims);
  const element = byteSizeOf(datatype);
  // BYTES: Triton's synthetic data is 4 zero bytes per element, i.e. every element an empty string.
  const size = element === 0 ? 4 * count : element * count;
  if (!Number.isSafeInteger(size) || size > MAX_WARMUP_INPUT_BYTES) {
    throw invalidArg(
      `warmup sample '${sample}': input '${name}' with dims [${dims.join(',')}] needs ${size} bytes, more than ` +
        `the limit of ${MAX_WARMUP_INPUT_BYTES} bytes per warmup input`,
    );
  }
  if (spec.input_data_file !== undefined && spec.input_data_file !== '') {
    return readWarmupFile(
      options.folder,
      spec.input_data_file,
      `input_data_file '${spec.input_data_file}' of warmup '${sample}' input '${name}'`,
      element === 0 ? undefined : size,
    );
  }
  if (spec.zero_data === true) return Buffer.alloc(size);
  if (spec.random_data === true) {
    const data = Buffer.alloc(size);
    if (element !== 0) randomFillSync(data);
    return data;
  }
  throw invalidArg(
    `[request id: <id_unknown>] warmup setting expects input '${name}' to have input_data_type set`,
  );
}

/** The samples of a config with their data generated (or read), ready to run on any instance. */
export async function buildWarmupSamples(
  config: FrozenModelConfig,
  options: WarmupOptions,
): Promise<Sample[]> {
  const batching = config.max_batch_size > 0;
  const declared = new Set(config.input.map((i) => i.name));
  const samples: Sample[] = [];
  for (const setting of config.model_warmup) {
    if (setting.batch_size === 0) {
      options.log.verbose(`Skipping batch 0 warmup sample '${setting.name}'`);
      continue;
    }
    options.log.verbose(`Generating warmup sample data for '${setting.name}'`);
    const originals: InferInput[] = [];
    const overrides: Tensor[] = [];
    for (const [name, spec] of Object.entries(setting.inputs)) {
      const datatype = fromConfigDataType(spec.data_type);
      if (datatype === undefined) {
        throw invalidArg(`warmup sample '${setting.name}': input '${name}' has no valid data_type`);
      }
      const dims = spec.dims.map(Number);
      const data = await inputData(setting.name, name, spec, datatype, dims, options);
      const shape = batching ? [1, ...dims] : dims;
      if (declared.has(name)) originals.push({ name, datatype, shape, data });
      else overrides.push({ name, datatype, shape, data });
    }
    // Checked like a client request (Triton prepares warmup requests for inference the same way).
    let prepared;
    try {
      prepared = prepareRequest(config, { modelName: config.name, inputs: originals });
    } catch (err) {
      throw withRequestId(err, undefined);
    }
    const inputs = new Map(prepared.inputs);
    for (const t of overrides) inputs.set(t.name, t);
    const request: WarmupRequest = { inputs, batchSize: prepared.batchSize };
    samples.push({
      name: setting.name,
      count: Math.max(1, setting.count),
      requests: Array.from({ length: setting.batch_size }, () => request),
    });
  }
  return samples;
}

/** A warmup request's sender: collects errors, and tells when the request ended. */
class WarmupSender implements ResponseSender {
  private ended = false;
  private onEnd: (() => void) | undefined;

  constructor(private readonly errors: string[]) {}

  get done(): boolean {
    return this.ended;
  }

  send(_outputs: readonly Tensor[], options: { final: boolean }): void {
    if (!this.ended && options.final) this.end();
  }

  fail(error: NereidError): void {
    if (this.ended) return;
    this.errors.push(error.message);
    this.end();
  }

  ended$(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => (this.onEnd = resolve));
  }

  private end(): void {
    this.ended = true;
    this.onEnd?.();
  }
}

async function runSample(
  config: FrozenModelConfig,
  instance: InstanceHandle,
  sample: Sample,
  iteration: number,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  log.verbose(
    `model '${config.name}' instance ${instance.name} is running warmup sample '${sample.name}' for iteration ${iteration}`,
  );
  const errors: string[] = [];
  const senders = sample.requests.map(() => new WarmupSender(errors));
  const requests: BackendRequest[] = sample.requests.map((r, i) => ({
    id: '',
    inputs: r.inputs,
    requestedOutputs: new Set(config.output.map((o) => o.name)),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize: r.batchSize,
    signal,
    sender: senders[i],
  }));
  const decoupled = config.model_transaction_policy?.decoupled === true;
  try {
    await instance.execute(requests);
  } catch (err) {
    const error = NereidError.from(err);
    for (const s of senders) s.fail(error);
  }
  for (const s of senders) {
    // A decoupled model may answer after execute() returned; any other must have answered by then.
    if (!s.done && !decoupled) s.fail(invalidArg('backend returned without a response for a warmup request'));
  }
  // A decoupled model told to stop may never end its streams: a cancelled warmup does not wait for them.
  await endedOrAborted(
    senders.map((s) => s.ended$()),
    signal,
  );
  if (signal.aborted) throw cancelledBy(signal);
  if (errors.length > 0) {
    log.verbose(
      `model '${config.name}' instance ${instance.name} failed to run warmup sample '${sample.name}'`,
    );
    throw invalidArg(`failed to run warmup sample '${sample.name}': ${errors.map((e) => `${e}; `).join('')}`);
  }
}

/**
 * Runs the config's warmup on every instance (instances in parallel, each one's samples in order) and
 * resolves when all are done; rejects with the first failure after every instance has stopped.
 */
export async function warmUpInstances(
  config: FrozenModelConfig,
  instances: readonly InstanceHandle[],
  options: WarmupOptions,
): Promise<void> {
  if (config.model_warmup.length === 0) return;
  const signal = options.signal ?? NEVER_ABORTED;
  if (signal.aborted) throw cancelledBy(signal);
  const samples = await buildWarmupSamples(config, options);
  if (samples.length === 0) return;
  const settled = await Promise.allSettled(
    instances.map(async (instance) => {
      for (const sample of samples) {
        for (let iteration = 1; iteration <= sample.count; iteration++) {
          if (signal.aborted) throw cancelledBy(signal);
          await runSample(config, instance, sample, iteration, options.log, signal);
        }
      }
    }),
  );
  if (signal.aborted) throw cancelledBy(signal);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw NereidError.from(failed.reason);
}

/** Resolves when every `ended` has, or when `signal` aborts; leaves no listener behind. */
async function endedOrAborted(ended: Promise<void>[], signal: AbortSignal): Promise<void> {
  if (signal === NEVER_ABORTED) {
    await Promise.all(ended);
    return;
  }
  if (signal.aborted) return;
  let onAbort = (): void => undefined;
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([Promise.all(ended), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
