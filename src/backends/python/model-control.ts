/**
 * The model loading API (pb_utils.load_model / unload_model / is_model_ready): a MODEL_CONTROL frame from
 * the stub runs on the server's repository through the ModelLoadContext's serverApi (the same calls as
 * the repository HTTP/gRPC API, so explicit model control mode only), and a MODEL_CONTROL_DONE frame
 * answers it: the readiness, or the error the stub raises as TritonModelException.
 *
 * Deadlocks are avoided as Triton's semantics allow: unload_model does not wait for the model to be
 * unloaded (TRITONSERVER_ServerUnloadModel does not either), only until it is no longer ready, so a model
 * may unload itself from execute() although its own request holds its unload; a model may not load or
 * unload itself from initialize(), while its own load holds the repository's lock on it.
 */
import type { ServerApi } from '../../backend-api/backend.js';
import { NereidError, invalidArg, unsupported } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { listOf } from './frames.js';
import { MessageType, tritonErrorCode, type ModelControlIn } from './protocol.js';
import type { StubProcess } from './stub-process.js';

/** How often an unload is checked for having begun (the model no longer ready). */
const UNLOAD_POLL_MS = 5;

const FILE_PREFIX = 'file:';

export interface ModelControlOptions {
  readonly api: ServerApi | undefined;
  /** The model the stub serves. */
  readonly modelName: string;
  /** True while the stub runs the model's initialize(). */
  readonly initializing: () => boolean;
  readonly log: Logger;
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The `file:` overrides of a load, read from the frame's blob. */
function overrideFiles(h: ModelControlIn, blob: Buffer): Record<string, Buffer> | undefined {
  if (h.files.length === 0) return undefined;
  const files: Record<string, Buffer> = {};
  for (const entry of h.files) {
    const [name, offset, size] = listOf(entry);
    if (
      typeof name !== 'string' ||
      typeof offset !== 'number' ||
      typeof size !== 'number' ||
      !Number.isInteger(offset) ||
      !Number.isInteger(size)
    ) {
      throw invalidArg('malformed load_model files from the Python stub');
    }
    if (offset < 0 || size < 0 || offset + size > blob.length) {
      throw invalidArg(`load_model file '${name}' lies outside its frame`);
    }
    if (!name.startsWith(FILE_PREFIX)) {
      // Triton's repository refuses any load parameter but `config` and `file:...`.
      throw invalidArg(`Unrecognized load parameter '${name}' with type 'BYTES'`);
    }
    // The frame is reused once handled: the repository gets its own copy.
    files[name] = Buffer.from(blob.subarray(offset, offset + size));
  }
  return files;
}

export class ModelControlService {
  constructor(
    private readonly stub: StubProcess,
    private readonly opts: ModelControlOptions,
  ) {}

  /** A MODEL_CONTROL message; the answer goes back as MODEL_CONTROL_DONE. */
  onRequest(h: ModelControlIn, blob: Buffer): void {
    if (h.call === 0) return;
    void this.run(h, blob);
  }

  private async run(h: ModelControlIn, blob: Buffer): Promise<void> {
    try {
      const ready = await this.perform(h, blob);
      this.stub.send(MessageType.ModelControlDone, {
        call: h.call,
        ...(ready !== undefined && { ready }),
      });
    } catch (err) {
      const e = NereidError.from(err);
      this.opts.log.verbose(
        `${h.op} of model '${h.modelName}' from '${this.stub.name}' failed: ${e.message}`,
      );
      this.stub.send(MessageType.ModelControlDone, {
        call: h.call,
        error: { code: tritonErrorCode(e.code), message: e.message },
      });
    }
  }

  /** Runs the operation; `ready` answers is_model_ready. */
  private async perform(h: ModelControlIn, blob: Buffer): Promise<boolean | undefined> {
    const api = this.opts.api;
    const name = h.modelName;
    if (h.op === 'ready') {
      if (!api?.isModelReady) throw this.unavailableApi();
      const version = h.version !== '' ? h.version : undefined;
      return api.isModelReady(name, version);
    }
    if (h.op !== 'load' && h.op !== 'unload') throw invalidArg(`unknown model control operation '${h.op}'`);
    if (name === this.opts.modelName && this.opts.initializing()) {
      throw invalidArg(
        `model '${name}' cannot ${h.op} itself from initialize(): its own load is still in progress`,
      );
    }
    if (h.op === 'load') {
      if (!api?.loadModel) throw this.unavailableApi();
      const files = overrideFiles(h, blob);
      const config = h.config !== '' ? h.config : undefined;
      await api.loadModel(name, { ...(config !== undefined && { config }), ...(files && { files }) });
      return undefined;
    }
    if (!api?.unloadModel) throw this.unavailableApi();
    await this.unload(api, name, h.unloadDependents);
    return undefined;
  }

  /**
   * Starts the unload and returns once it finished or the model stopped being ready (it is draining),
   * whichever comes first; an error that comes later is only logged.
   */
  private async unload(api: ServerApi, name: string, unloadDependents: boolean): Promise<void> {
    const unloading = api.unloadModel!(name, { unloadDependents });
    let settled = false;
    let failure: NereidError | undefined;
    unloading.then(
      () => (settled = true),
      (err: unknown) => {
        settled = true;
        failure = NereidError.from(err);
      },
    );
    // Refusals (not explicit mode, server closing) come at once.
    await new Promise((r) => setImmediate(r));
    while (!settled && api.isModelReady?.(name) !== false) await delay(UNLOAD_POLL_MS);
    if (failure) throw failure;
    if (!settled) {
      unloading.catch((err: unknown) =>
        this.opts.log.error(
          `unload of model '${name}' requested by '${this.stub.name}' failed: ${NereidError.from(err).message}`,
        ),
      );
    }
  }

  private unavailableApi(): NereidError {
    return unsupported(
      'the model loading API is not available: this server gives the python backend no repository control',
    );
  }
}
