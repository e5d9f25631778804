/**
 * The stub supervisor of one Python instance: starts its stub process (INIT: the model's initialize()),
 * restarts it when it dies, stops runaway models, and ends everything on abort or close. What the stubs
 * hold is in the instance's ledger (ledger.ts); the supervisor fails it there when a stub goes.
 *
 * Faults: if the stub dies, every request it held fails with "Stub process '<name>' is not healthy" and the
 * reason, and a new stub is started right away (initialize runs again); the next batch waits for it. If
 * restarting fails, batches fail with UNAVAILABLE and each new batch tries again.
 *
 * Runaway models are stopped the same way, with their own UNAVAILABLE error:
 * - a batch that makes no progress (the model's execute has not returned and sent no response) for the
 *   execution timeout (`execution_timeout_seconds`) fails, and its stub is killed and replaced: a hung
 *   execute never blocks the instance, its unload or its reload for long. After a decoupled model's
 *   execute returned, a batch whose open streams send nothing for that long fails just those requests
 *   (the model was told they were cancelled); the stub goes on serving. While the host holds a stream
 *   of the stub back (its client reads slowly: credit.ts) or is not reading the stub's socket
 *   (response-reader.ts), its silence is not counted;
 * - a stub whose resident memory passes its limit (`stub_memory_limit_mb`, memory-watch.ts) is killed and
 *   replaced; the requests it held fail.
 * abort() (an unload that waited too long) fails everything and kills the stub without a replacement.
 */
import type { InstanceSpec } from '../../backend-api/backend.js';
import { NereidError, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { capModelText } from '../model-errors.js';
import { RESPONSE_OVERDRAFT, RESPONSE_WINDOW } from './credit.js';
import type { Batch, BatchLedger } from './ledger.js';
import { watchMemory } from './memory-watch.js';
import { MessageType, type InitMessage } from './protocol.js';
import { StubProcess, type StubLaunchOptions } from './stub-process.js';

export interface InitTemplate {
  readonly model_path: string;
  /** A Python-based backend's folder, imported as a package of this name (model_path is its script). */
  readonly backend_package?: { readonly name: string; readonly dir: string };
  /** initialize(args) keys beyond Triton's (a Python-based backend's `backend_config`). */
  readonly extra_args?: Readonly<Record<string, string>>;
  readonly model_config: string;
  readonly model_repository: string;
  readonly model_version: string;
  readonly shm_initial: number;
  readonly shm_growth: number;
}

export interface SupervisorOptions {
  readonly spec: InstanceSpec;
  readonly modelName: string;
  readonly launch: StubLaunchOptions;
  /** The INIT header without the instance's own fields. */
  readonly init: InitTemplate;
  readonly decoupled: boolean;
  readonly shmThreshold: number;
  /** Bound on initialize() and finalize() (stub-timeout-seconds). */
  readonly timeoutMs: number;
  /** Longest a batch may go without progress (0 = none), counted from when the stub starts it. */
  readonly executionTimeoutMs?: number;
  /** Resident memory a stub may hold (bytes, 0 = no limit). */
  readonly memoryLimitBytes?: number;
  readonly log: Logger;
}

/** What the instance does around a stub's life. */
export interface StubHooks {
  /** A stub was launched: route its frames, give it its services (before its initialize() runs). */
  attach(stub: StubProcess): void;
  /** The stub ended: drop what waits for it (before the requests it held fail). */
  detach(stub: StubProcess): void;
  /** The client's text for what initialize() raised (failures.ts); undefined without its info. */
  located(raw: unknown): string | undefined;
}

/** The INIT message for an instance. */
export function initMessage(o: SupervisorOptions): InitMessage {
  const { spec, init: t } = o;
  return {
    name: spec.name,
    model_path: t.model_path,
    ...(t.backend_package && { backend_package: t.backend_package }),
    decoupled: o.decoupled,
    shm_threshold: o.shmThreshold,
    // Each request's flow control (credit.ts); a default-mode request sends one response.
    ...(o.decoupled && { response_window: RESPONSE_WINDOW, response_overdraft: RESPONSE_OVERDRAFT }),
    shm_initial: t.shm_initial,
    shm_growth: t.shm_growth,
    args: {
      model_config: t.model_config,
      model_instance_kind: spec.kind.replace('KIND_', ''),
      model_instance_name: spec.name,
      model_instance_device_id: String(spec.deviceId),
      model_repository: t.model_repository,
      model_version: t.model_version,
      model_name: o.modelName,
      ...t.extra_args,
    },
  };
}

const mib = (n: number): string => `${Math.round(n / (1024 * 1024))} MiB`;

export class StubSupervisor {
  private readonly name: string;
  private stub: StubProcess | undefined;
  private starting: Promise<StubProcess> | undefined;
  private closed = false;
  /** The stub being started is running the model's initialize(). */
  private initializing: StubProcess | undefined;

  constructor(
    private readonly opts: SupervisorOptions,
    private readonly ledger: BatchLedger,
    private readonly hooks: StubHooks,
  ) {
    this.name = opts.spec.name;
  }

  /** Starts the first stub; rejects with what initialize() raised. */
  async start(): Promise<void> {
    this.stub = await this.startStub();
  }

  /** The live stub, if there is one. */
  get current(): StubProcess | undefined {
    return this.stub;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** True while `stub` runs the model's initialize(). */
  isInitializing(stub: StubProcess): boolean {
    return this.initializing === stub;
  }

  /** The stub to send the next batch to: the live one at once (no promise turn), or one being started. */
  live(): StubProcess | Promise<StubProcess> {
    return this.stub?.alive && !this.closed ? this.stub : this.ensure();
  }

  /** The error of requests a dead stub held. */
  unhealthy(stub: StubProcess): NereidError {
    return internal(
      `Failed to process the request(s) for model instance '${this.name}', message: Stub process '${this.name}' ` +
        `is not healthy: ${stub.describeExit()}`,
    );
  }

  /**
   * Arms the execution timeout of the batch the stub is running (the ledger's oldest whose execute has
   * not returned). A batch pipelined behind it gets its timeout when it starts, so waiting behind a long
   * batch never counts against it.
   */
  armRunning(): void {
    const timeoutMs = this.opts.executionTimeoutMs ?? 0;
    if (timeoutMs <= 0) return;
    const b = this.ledger.running();
    if (b) b.timer ??= setTimeout(() => this.onTimeout(b), timeoutMs);
  }

  /** Ends everything at once (see the module comment); close() follows. */
  abort(error: NereidError): void {
    this.closed = true;
    this.ledger.failAll(error);
    this.stub?.kill();
  }

  async close(): Promise<void> {
    this.closed = true;
    const stub = this.stub ?? (await this.starting?.catch(() => undefined));
    this.stub = undefined;
    await stub?.stop(this.opts.timeoutMs);
    // Streams still open now have nobody left to answer them.
    this.ledger.failAll(
      unavailable(`Python model instance '${this.name}' was closed before the request ended`),
    );
  }

  private async ensure(): Promise<StubProcess> {
    if (this.closed) throw unavailable(`instance '${this.name}' is closed`);
    if (this.stub?.alive) return this.stub;
    this.stub = undefined;
    this.starting ??= this.startStub().finally(() => (this.starting = undefined));
    const stub = await this.starting;
    if (this.closed) {
      await stub.stop(this.opts.timeoutMs);
      throw unavailable(`instance '${this.name}' is closed`);
    }
    this.stub = stub;
    return stub;
  }

  private async startStub(): Promise<StubProcess> {
    const stub = StubProcess.launch(this.opts.launch);
    const limit = this.opts.memoryLimitBytes ?? 0;
    const stopWatch = watchMemory(stub.pid, limit, (rss) => this.onMemoryExceeded(stub, rss, limit));
    stub.onExitOnce(() => stopWatch());
    stub.onExitOnce((_reason, expected) => this.onStubExit(stub, expected));
    this.hooks.attach(stub);
    this.initializing = stub;
    const reply = await stub
      .call(
        MessageType.Init,
        initMessage(this.opts),
        MessageType.InitDone,
        this.opts.timeoutMs,
        'initialize()',
      )
      .catch((err: unknown) => {
        stub.kill();
        throw err;
      })
      .finally(() => {
        if (this.initializing === stub) this.initializing = undefined;
      });
    if (reply.failed) {
      await stub.stop(this.opts.timeoutMs);
      const located = this.hooks.located(reply.errorInfo);
      throw internal(
        located ?? (reply.error !== undefined ? capModelText(reply.error) : 'initialize() failed'),
      );
    }
    return stub;
  }

  private onStubExit(stub: StubProcess, expected: boolean): void {
    this.hooks.detach(stub);
    // Every request the stub held fails, open decoupled streams of earlier batches included.
    if (this.ledger.holdsAny) this.ledger.failAll(this.unhealthy(stub), stub);
    if (this.stub === stub) this.stub = undefined;
    if (expected || this.closed) return;
    this.opts.log.error(
      `Stub process '${this.name}' is unhealthy and it will be restarted: ${stub.describeExit()}`,
    );
    this.starting ??= this.startStub().finally(() => (this.starting = undefined));
    this.starting.then(
      (s) => {
        if (this.closed) void s.stop(this.opts.timeoutMs);
        else this.stub = s;
      },
      (err: unknown) =>
        this.opts.log.error(
          `failed to restart the stub of '${this.name}' (the next request tries again): ${NereidError.from(err).message}`,
        ),
    );
  }

  /**
   * A batch made no progress for the execution timeout. Before the model's execute returned, the stub is
   * hung (or busy for too long): its requests fail and it is killed and replaced. After it returned (a
   * decoupled model), only the batch's silent streams fail.
   */
  private onTimeout(batch: Batch): void {
    if (this.ledger.batch(batch.id) !== batch) return;
    if ((batch.stub.isReadingPaused || this.ledger.heldBack(batch.stub)) && batch.stub.alive) {
      // The host holds a response stream back (its client reads slowly) or is not reading the stub: the
      // model may be waiting to send (for credit, credit.ts, or in the socket), not hung.
      batch.timer?.refresh();
      return;
    }
    const secs = (this.opts.executionTimeoutMs ?? 0) / 1000;
    if (batch.pythonReturned) {
      this.failStalledStreams(batch, secs);
      return;
    }
    const why = `made no progress for ${secs} s (execution_timeout_seconds)`;
    this.opts.log.error(`Python model instance '${this.name}' ${why}; restarting its stub`);
    this.replace(
      batch.stub,
      unavailable(`Python model instance '${this.name}' ${why}; its stub was stopped and is being restarted`),
      `the stub ${why} and was stopped`,
    );
  }

  /** Decoupled streams that sent nothing for the timeout after execute returned: fail those requests. */
  private failStalledStreams(batch: Batch, secs: number): void {
    this.opts.log.error(
      `Python model instance '${this.name}': ${batch.pending} response stream(s) sent nothing for ${secs} s after execute returned (execution_timeout_seconds); failing them`,
    );
    for (const [rid, f] of this.ledger.requestsOf(batch)) {
      const error = unavailable(
        `Python model instance '${this.name}' sent nothing for request '${f.request.id}' for ${secs} s after execute returned (execution_timeout_seconds)`,
      );
      // The model sees the request cancelled; whatever it sends later is dropped.
      this.ledger.fail(rid, f, error);
    }
    this.ledger.close(batch);
  }

  /** The stub holds more resident memory than its limit: fail what it holds, kill it, start a new one. */
  private onMemoryExceeded(stub: StubProcess, rss: number, limit: number): void {
    if (!stub.alive || this.closed) return;
    const why = `its stub's resident memory reached ${mib(rss)}, over its limit of ${mib(limit)} (stub_memory_limit_mb)`;
    this.opts.log.error(`Python model instance '${this.name}': ${why}; restarting it`);
    this.replace(
      stub,
      unavailable(`Python model instance '${this.name}' was restarted: ${why}`),
      `the stub was stopped: ${why}`,
    );
  }

  /** Fails what `stub` holds and kills it; its exit starts a new one. */
  private replace(stub: StubProcess, error: NereidError, reason: string): void {
    // The next batch must not reach the dying stub: it waits for a new one instead.
    if (this.stub === stub) this.stub = undefined;
    this.ledger.failAll(error, stub);
    stub.terminate(reason);
  }
}
