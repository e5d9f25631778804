/**
 * One Python model instance: a stub process running the model's TritonPythonModel, fed whole batches.
 *
 * execute() writes the batch's inputs (inline or into /dev/shm), sends one EXECUTE frame and settles when
 * the stub reports the model's execute returned (EXECUTE_DONE), and for a default-mode model every request
 * of the batch has its response. A decoupled model's requests may stay open after that, answered from
 * other threads as in Triton: the instance takes its next batch meanwhile. Default-mode responses come back
 * in the EXECUTE_DONE frame; decoupled ones as RESPONSE frames. A request whose AbortSignal fired is
 * reported to the stub with a CANCEL frame (request.is_cancelled() in Python) within CANCEL_POLL_MS.
 *
 * Statistics as Triton's Python backend reports them: a batch the stub answered for is an execution, also
 * when execute raised; a request the model answered with an error response
 * (`InferenceResponse(error=...)`) counts as a success. Its phases are Triton's (python_be.cc): compute_input
 * from execute() to the EXECUTE frame going out (the inputs written for the stub), compute_infer the round
 * trip until EXECUTE_DONE arrives (the stub reading them, the model's execute, the stub writing the
 * answers), compute_output reading the outputs back; the core adds the time it spends sending them.
 *
 * A request the model rescheduled (request.set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE),
 * listed in EXECUTE_DONE) is handed back to the scheduler through BackendRequest.reschedule, or fails with
 * Triton's error where the scheduler cannot take it back.
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
 *   (the model was told they were cancelled); the stub goes on serving;
 * - a stub whose resident memory passes its limit (`stub_memory_limit_mb`, memory-watch.ts) is killed and
 *   replaced; the requests it held fail.
 * abort() (an unload that waited too long) fails everything and kills the stub without a replacement.
 */
import type {
  BackendRequest,
  ExecuteResult,
  InstanceHandle,
  InstanceSpec,
  ParameterValue,
  ServerApi,
} from '../../backend-api/backend.js';
import { isServerParameter, type BackendTraceToken } from '../../backend-api/backend.js';
import { NereidError, internal, invalidArg, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { BlsService, type ServerInfer } from './bls.js';
import type { Frame } from './frames.js';
import { parseMetricsReply, type StubFamily } from './metrics.js';
import { ModelControlService } from './model-control.js';
import {
  MessageType,
  errorCodeOf,
  type ExecuteDoneMessage,
  type LogMessage,
  type WireError,
  type WireRequest,
  type WireResponse,
  type WireTensor,
} from './protocol.js';
import type { OutputCheck } from '../output-check.js';
import { errorInfoOf, pythonFailure, type PythonFailureScope } from './failures.js';
import { watchMemory } from './memory-watch.js';
import type { StubLaunchOptions } from './stub-process.js';
import { StubProcess } from './stub-process.js';
import {
  BlobBuilder,
  describeInline,
  describeTensors,
  readInlineTensors,
  readTensors,
  type FreedRanges,
  type TensorSink,
} from './tensors.js';

export interface PythonInstanceOptions {
  readonly spec: InstanceSpec;
  readonly modelName: string;
  readonly launch: StubLaunchOptions;
  /** The INIT header without the instance's own fields. */
  readonly init: InitTemplate;
  readonly decoupled: boolean;
  /** Bound on initialize() and finalize() (stub-timeout-seconds). */
  readonly timeoutMs: number;
  /** Longest a batch may go without progress (0 = none), counted from when the stub starts it. */
  readonly executionTimeoutMs?: number;
  /** Batches the core may hand the instance at once (default 1); they wait in order in the stub's socket. */
  readonly pipelineDepth?: number;
  /** Resident memory a stub may hold (bytes, 0 = no limit). */
  readonly memoryLimitBytes?: number;
  readonly shmThreshold: number;
  readonly log: Logger;
  readonly serverInfer: ServerInfer | undefined;
  /** Repository control for pb_utils.load_model and friends (the ModelLoadContext's serverApi). */
  readonly serverApi?: ServerApi;
  /** The model version's folders and failure log: what the model raises becomes a located error. */
  readonly failures?: Omit<PythonFailureScope, 'id'> & { readonly version: number };
  /** Checks the output names the model sends against its config (../output-check.ts). */
  readonly outputCheck?: OutputCheck;
}

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

interface Inflight {
  readonly request: BackendRequest;
  readonly batch: Batch;
  /** The stub has been told this request was cancelled. */
  cancelSent: boolean;
}

interface Batch {
  readonly id: number;
  /** The batch's requests, for the phase timings reported when the stub answers. */
  readonly requests: readonly BackendRequest[];
  /** process.hrtime.bigint() when execute() was called, and when the batch was sent to the stub. */
  readonly execStart: bigint;
  readonly sentAt: bigint;
  /** The stub the batch was sent to. */
  readonly stub: StubProcess;
  pending: number;
  /** EXECUTE_DONE arrived: the model's execute returned or raised. */
  pythonReturned: boolean;
  /** Settles execute() (see the module comment for when). */
  readonly resolve: (result: ExecuteResult) => void;
  /** Fires after the execution timeout without progress; armed when the stub starts the batch. */
  timer: NodeJS.Timeout | undefined;
  /** Frees the batch's space in the host->stub file (once every request of it has ended). */
  readonly unpin: () => void;
}

/** A batch ready to send: its requests on the wire, their inline bytes, and its hold on /dev/shm. */
interface Prepared {
  readonly wire: WireRequest[];
  readonly blob: BlobBuilder;
  readonly unpin: () => void;
}

/**
 * How often a running batch's requests are checked for cancellation. Polling instead of one 'abort'
 * listener per request: a listener costs more than a whole small request on a busy AbortSignal, and
 * cancellation only needs to reach request.is_cancelled() soon, not instantly.
 */
const CANCEL_POLL_MS = 10;

/** Triton's words when a request is rescheduled on a model whose scheduler cannot take it back. */
export const RESCHEDULE_UNSUPPORTED =
  'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to ' +
  'handle such a flag.';

/** A parameter value as JSON text (bigints exactly, as JSON numbers). */
function parameterJson(v: ParameterValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v);
}

function parametersJson(params: Readonly<Record<string, ParameterValue>>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (isServerParameter(k)) continue;
    parts.push(`${JSON.stringify(k)}:${parameterJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/** Nanoseconds from `a` to `b` (0 if the clock reads otherwise). */
function nsBetween(a: bigint, b: bigint): number {
  return b > a ? Number(b - a) : 0;
}

/** A time the stub reported (CLOCK_MONOTONIC ns), within [lo, hi]; undefined when it sent none. */
function clampedStubTime(v: unknown, lo: bigint, hi: bigint): bigint | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  const t = BigInt(Math.round(v));
  return t < lo ? lo : t > hi ? hi : t;
}

/** Every response's outputs travel inline (so they can be read without waiting). */
function allInline(responses: readonly WireResponse[]): boolean {
  for (const r of responses) {
    const outputs: unknown = r?.outputs;
    if (outputs === undefined) continue;
    if (!Array.isArray(outputs)) return false;
    for (const t of outputs) if ((t as Partial<WireTensor> | null)?.in_shm !== false) return false;
  }
  return true;
}

function responseParameters(text: unknown): Record<string, ParameterValue> | undefined {
  if (typeof text !== 'string' || text === '' || text === '{}') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    const out: Record<string, ParameterValue> = {};
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    }
    return out;
  } catch {
    return undefined;
  }
}

/** A traced request's marker and context on the wire to the stub. */
function traceWire(trace: BackendTraceToken): { traced: true; trace_context?: string } {
  const context = trace.context();
  return context === undefined ? { traced: true } : { traced: true, trace_context: context };
}

export class PythonInstance implements InstanceHandle {
  readonly name: string;
  private stub: StubProcess | undefined;
  private starting: Promise<StubProcess> | undefined;
  private closed = false;
  private nextRid = 1;
  private nextBatch = 1;
  private readonly inflight = new Map<number, Inflight>();
  private readonly batches = new Map<number, Batch>();
  private bls: BlsService | undefined;
  private control: ModelControlService | undefined;
  /** The stub being started is running the model's initialize(). */
  private initializing: StubProcess | undefined;
  private nextMetricsQuery = 1;
  private readonly metricsQueries = new Map<number, (families: StubFamily[] | undefined) => void>();
  /** The last metrics a stub answered with, kept for when it is too busy to answer. */
  private lastMetrics: { stub: StubProcess; families: StubFamily[] } | undefined;
  private frameChain: Promise<void> = Promise.resolve();
  /** Polls open batches' requests for cancellation while there are any (see CANCEL_POLL_MS). */
  private cancelPoll: NodeJS.Timeout | undefined;
  /** Frames waiting in frameChain: while there are any, later frames queue behind them. */
  private queuedFrames = 0;
  /** Readonly for the core (InstanceHandle.pipelineDepth): batches it may hand this instance at once. */
  readonly pipelineDepth: number;
  /** execute() calls numbered in call order, the next to send its batch, and later ones ready first. */
  private nextTurn = 0;
  private turnToSend = 0;
  private readonly laterTurns = new Map<number, () => void>();

  private readonly scope: PythonFailureScope | undefined;

  private constructor(private readonly opts: PythonInstanceOptions) {
    this.name = opts.spec.name;
    this.pipelineDepth = Math.max(1, opts.pipelineDepth ?? 1);
    const f = opts.failures;
    this.scope = f && { ...f, id: { model: opts.modelName, version: f.version, instance: opts.spec.name } };
  }

  /** The client's text for what the model raised, logged once per distinct error; undefined without info. */
  private located(raw: unknown, phase: 'initialize' | 'execute'): string | undefined {
    const info = errorInfoOf(raw);
    return info && this.scope ? pythonFailure(info, this.scope, phase) : undefined;
  }

  /** Starts the stub and runs the model's initialize(); rejects with the model's error. */
  static async create(opts: PythonInstanceOptions): Promise<PythonInstance> {
    const instance = new PythonInstance(opts);
    instance.stub = await instance.startStub();
    return instance;
  }

  /** close() was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The model's metric families as this instance's stub holds them. The stub answers whenever it reads its
   * socket (at once when idle); one busy in a long execute() that does not answer within `timeoutMs` is
   * represented by its last answer. A stub that is down has none (a restarted stub starts from zero).
   */
  async customMetrics(timeoutMs: number): Promise<StubFamily[]> {
    const stub = this.stub;
    if (!stub?.alive) return [];
    const q = this.nextMetricsQuery++;
    const answer = await new Promise<StubFamily[] | undefined>((resolve) => {
      const timer = setTimeout(() => done(undefined), timeoutMs);
      const done = (families: StubFamily[] | undefined): void => {
        clearTimeout(timer);
        this.metricsQueries.delete(q);
        resolve(families);
      };
      this.metricsQueries.set(q, done);
      stub.send(MessageType.MetricsQuery, { query: q });
    });
    if (answer) {
      this.lastMetrics = { stub, families: answer };
      return answer;
    }
    return stub.alive && this.lastMetrics?.stub === stub ? this.lastMetrics.families : [];
  }

  /** The stub's process id (tests kill it from outside). */
  get pid(): number | undefined {
    return this.stub?.pid;
  }

  async execute(requests: readonly BackendRequest[]): Promise<ExecuteResult> {
    const live = requests.filter((r) => !r.sender.done);
    if (live.length === 0) return {};
    const execStart = process.hrtime.bigint();
    // Batches reach the stub in the order execute() was called (the contract for pipelined instances),
    // though preparing one may wait (a stub being restarted, inputs written to /dev/shm) while a later
    // one is ready at once: each takes a turn now and sends, or gives up, in it.
    const turn = this.nextTurn++;
    let turnTaken = false;
    try {
      let stub: StubProcess;
      try {
        // A live stub is taken without a promise turn (the small-request path).
        stub = this.stub?.alive && !this.closed ? this.stub : await this.ensureStub();
      } catch (err) {
        const e = NereidError.from(err);
        for (const r of live)
          r.sender.fail(unavailable(`Python model instance '${this.name}' is not available: ${e.message}`));
        return {};
      }
      const preparing = this.prepare(stub, live);
      const prepared = preparing instanceof Promise ? await preparing : preparing;
      turnTaken = true;
      return await new Promise<ExecuteResult>((resolve) => {
        this.inTurn(turn, () => this.sendBatch(stub, live, prepared, execStart, resolve));
      });
    } finally {
      if (!turnTaken) this.inTurn(turn, () => undefined);
    }
  }

  /**
   * The batch's EXECUTE frame contents: inputs inline in `blob` or written into the host->stub file under
   * the batch's pin (released by `unpin`). Small inputs are described without a promise (the small-request
   * path); the first request with a tensor for /dev/shm hands the rest to prepareShm().
   */
  private prepare(stub: StubProcess, live: readonly BackendRequest[]): Prepared | Promise<Prepared> {
    const arena = stub.files?.toStub;
    // Nothing in the host->stub file is read any more when no request of this instance is open, no other
    // execute() is between its call and its send (preparing, or prepared and waiting for its turn) and no
    // BLS call runs; otherwise this batch's inputs go around what other batches still hold.
    const alone = this.nextTurn - this.turnToSend === 1;
    if (this.batches.size === 0 && alone && this.bls?.idle !== false) arena?.reset();
    const pin = arena?.pin();
    const unpin = (): void => {
      if (pin !== undefined) arena?.unpin(pin);
    };
    const prepared: Prepared = { wire: [], blob: new BlobBuilder(), unpin };
    const sink = { arena, threshold: this.opts.shmThreshold, pin };
    try {
      for (let i = 0; i < live.length; i++) {
        const inputs = describeInline(live[i].inputs.values(), sink, prepared.blob);
        if (inputs === undefined) return this.prepareShm(live, i, sink, prepared);
        prepared.wire.push(this.wireRequest(live[i], inputs));
      }
    } catch (err) {
      unpin();
      throw err;
    }
    return prepared;
  }

  /** prepare() from request `from` on, writing tensors into /dev/shm (which may wait). */
  private async prepareShm(
    live: readonly BackendRequest[],
    from: number,
    sink: TensorSink,
    prepared: Prepared,
  ): Promise<Prepared> {
    try {
      for (let i = from; i < live.length; i++) {
        const r = live[i];
        const inputs =
          describeInline(r.inputs.values(), sink, prepared.blob) ??
          (await describeTensors(r.inputs.values(), sink, prepared.blob));
        prepared.wire.push(this.wireRequest(r, inputs));
      }
    } catch (err) {
      prepared.unpin();
      throw err;
    }
    return prepared;
  }

  private wireRequest(r: BackendRequest, inputs: WireTensor[]): WireRequest {
    const corr = r.correlationId;
    return {
      rid: this.nextRid++,
      request_id: r.id,
      correlation_id: String(corr),
      correlation_is_string: typeof corr === 'string',
      flags: r.flags,
      parameters: parametersJson(r.parameters),
      requested_outputs: [...r.requestedOutputs],
      inputs,
      ...(r.signal.aborted ? { cancelled: true } : {}),
      ...(r.trace ? traceWire(r.trace) : {}),
    };
  }

  /** Runs `send` once every execute() called before this one has sent its batch or given up. */
  private inTurn(turn: number, send: () => void): void {
    if (turn !== this.turnToSend) {
      this.laterTurns.set(turn, send);
      return;
    }
    send();
    this.turnToSend++;
    for (let next = this.laterTurns.get(this.turnToSend); next; next = this.laterTurns.get(this.turnToSend)) {
      this.laterTurns.delete(this.turnToSend);
      next();
      this.turnToSend++;
    }
  }

  /** Registers the batch and writes its EXECUTE frame (behind any batch the stub has not finished). */
  private sendBatch(
    stub: StubProcess,
    live: readonly BackendRequest[],
    prepared: Prepared,
    execStart: bigint,
    resolve: (result: ExecuteResult) => void,
  ): void {
    const { wire, blob, unpin } = prepared;
    if (!stub.alive) {
      unpin();
      const e = this.unhealthy(stub);
      for (const r of live) r.sender.fail(e);
      resolve({});
      return;
    }
    const id = this.nextBatch++;
    const batch: Batch = {
      id,
      requests: live,
      execStart,
      sentAt: process.hrtime.bigint(),
      stub,
      pending: live.length,
      pythonReturned: false,
      resolve,
      timer: undefined,
      unpin,
    };
    this.batches.set(id, batch);
    live.forEach((request, i) => {
      this.inflight.set(wire[i].rid, { request, batch, cancelSent: request.signal.aborted });
    });
    stub.send(MessageType.Execute, { batch: id, requests: wire }, blob.parts);
    // One poll for all of the instance's open batches, not a timer per batch.
    this.cancelPoll ??= setTimeout(() => this.pollCancellation(), CANCEL_POLL_MS);
    this.armRunning();
  }

  /**
   * Arms the execution timeout of the batch the stub is running: the oldest whose execute has not returned
   * (the stub runs batches in the order they were sent). A batch pipelined behind it gets its timeout
   * when it starts, so waiting behind a long batch never counts against it.
   */
  private armRunning(): void {
    const timeoutMs = this.opts.executionTimeoutMs ?? 0;
    if (timeoutMs <= 0) return;
    for (const b of this.batches.values()) {
      if (b.pythonReturned) continue;
      b.timer ??= setTimeout(() => this.onTimeout(b), timeoutMs);
      return;
    }
  }

  private pollCancellation(): void {
    this.cancelPoll = undefined;
    if (this.batches.size === 0) return;
    for (const [rid, f] of this.inflight) {
      if (f.cancelSent || !f.request.signal.aborted) continue;
      f.cancelSent = true;
      if (f.batch.stub.alive) f.batch.stub.send(MessageType.Cancel, { rid });
    }
    this.cancelPoll = setTimeout(() => this.pollCancellation(), CANCEL_POLL_MS);
  }

  /** Ends everything at once (see the module comment); close() follows. */
  abort(error: NereidError): void {
    this.closed = true;
    this.failInflight(error);
    this.stub?.kill();
  }

  async close(): Promise<void> {
    this.closed = true;
    const stub = this.stub ?? (await this.starting?.catch(() => undefined));
    this.stub = undefined;
    await stub?.stop(this.opts.timeoutMs);
    // Streams still open now have nobody left to answer them.
    this.failInflight(
      unavailable(`Python model instance '${this.name}' was closed before the request ended`),
    );
  }

  /** Fails every request this instance (or only `stub`) still holds and settles those batches. */
  private failInflight(error: NereidError, stub?: StubProcess): void {
    for (const [rid, f] of this.inflight) {
      if (stub && f.batch.stub !== stub) continue;
      if (!f.request.sender.done) f.request.sender.fail(error);
      this.finish(rid, f);
    }
    for (const b of [...this.batches.values()]) if (!stub || b.stub === stub) this.settle(b, true);
  }

  // --- stub lifecycle ---------------------------------------------------------------------------------------

  private async startStub(): Promise<StubProcess> {
    const stub = StubProcess.launch(this.opts.launch);
    const { spec } = this.opts;
    stub.onFrame = (frame) => this.onFrame(stub, frame);
    const limit = this.opts.memoryLimitBytes ?? 0;
    const stopWatch = watchMemory(stub.pid, limit, (rss) => this.onMemoryExceeded(stub, rss, limit));
    stub.onExitOnce(() => stopWatch());
    stub.onExitOnce((reason, expected) => this.onStubExit(stub, reason, expected));
    this.bls = new BlsService(
      stub,
      this.opts.serverInfer,
      this.opts.shmThreshold,
      this.opts.log,
      (rid) => this.inflight.get(rid)?.request.trace,
    );
    this.control = new ModelControlService(stub, {
      api: this.opts.serverApi,
      modelName: this.opts.modelName,
      initializing: () => this.initializing === stub,
      log: this.opts.log,
    });
    const t = this.opts.init;
    const header = {
      name: spec.name,
      model_path: t.model_path,
      ...(t.backend_package && { backend_package: t.backend_package }),
      decoupled: this.opts.decoupled,
      shm_threshold: this.opts.shmThreshold,
      shm_initial: t.shm_initial,
      shm_growth: t.shm_growth,
      args: {
        model_config: t.model_config,
        model_instance_kind: spec.kind.replace('KIND_', ''),
        model_instance_name: spec.name,
        model_instance_device_id: String(spec.deviceId),
        model_repository: t.model_repository,
        model_version: t.model_version,
        model_name: this.opts.modelName,
        ...t.extra_args,
      },
    };
    this.initializing = stub;
    const reply = await stub
      .call(MessageType.Init, header, MessageType.InitDone, this.opts.timeoutMs, 'initialize()')
      .catch((err: unknown) => {
        stub.kill();
        throw err;
      })
      .finally(() => {
        if (this.initializing === stub) this.initializing = undefined;
      });
    const e = (reply.header as { error?: unknown }).error;
    if (e !== undefined) {
      await stub.stop(this.opts.timeoutMs);
      const located = this.located((reply.header as { error_info?: unknown }).error_info, 'initialize');
      throw internal(located ?? (typeof e === 'string' ? e : 'initialize() failed'));
    }
    return stub;
  }

  private async ensureStub(): Promise<StubProcess> {
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

  private unhealthy(stub: StubProcess): NereidError {
    return internal(
      `Failed to process the request(s) for model instance '${this.name}', message: Stub process '${this.name}' ` +
        `is not healthy: ${stub.describeExit()}`,
    );
  }

  private onStubExit(stub: StubProcess, _reason: string, expected: boolean): void {
    this.bls?.abortAll();
    for (const done of [...this.metricsQueries.values()]) done(undefined);
    // Every request the stub held fails, open decoupled streams of earlier batches included.
    if (this.inflight.size > 0 || this.batches.size > 0) this.failInflight(this.unhealthy(stub), stub);
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
    if (!this.batches.has(batch.id)) return;
    const secs = (this.opts.executionTimeoutMs ?? 0) / 1000;
    if (batch.pythonReturned) {
      this.failStalledStreams(batch, secs);
      return;
    }
    const why = `made no progress for ${secs} s (execution_timeout_seconds)`;
    this.opts.log.error(`Python model instance '${this.name}' ${why}; restarting its stub`);
    const stub = batch.stub;
    // The next batch must not reach the dying stub: it waits for a new one instead.
    if (this.stub === stub) this.stub = undefined;
    this.failInflight(
      unavailable(`Python model instance '${this.name}' ${why}; its stub was stopped and is being restarted`),
      stub,
    );
    stub.terminate(`the stub ${why} and was stopped`);
  }

  /** Decoupled streams that sent nothing for the timeout after execute returned: fail those requests. */
  private failStalledStreams(batch: Batch, secs: number): void {
    this.opts.log.error(
      `Python model instance '${this.name}': ${batch.pending} response stream(s) sent nothing for ${secs} s after execute returned (execution_timeout_seconds); failing them`,
    );
    for (const [rid, f] of this.inflight) {
      if (f.batch !== batch) continue;
      if (!f.request.sender.done) {
        f.request.sender.fail(
          unavailable(
            `Python model instance '${this.name}' sent nothing for request '${f.request.id}' for ${secs} s after execute returned (execution_timeout_seconds)`,
          ),
        );
      }
      // The model sees the request cancelled; whatever it sends later is dropped.
      if (batch.stub.alive) batch.stub.send(MessageType.Cancel, { rid });
      this.finish(rid, f);
    }
    this.settle(batch, true);
  }

  /** The stub holds more resident memory than its limit: fail what it holds, kill it, start a new one. */
  private onMemoryExceeded(stub: StubProcess, rss: number, limit: number): void {
    if (!stub.alive || this.closed) return;
    const mib = (n: number): string => `${Math.round(n / (1024 * 1024))} MiB`;
    const why = `its stub's resident memory reached ${mib(rss)}, over its limit of ${mib(limit)} (stub_memory_limit_mb)`;
    this.opts.log.error(`Python model instance '${this.name}': ${why}; restarting it`);
    if (this.stub === stub) this.stub = undefined;
    this.failInflight(unavailable(`Python model instance '${this.name}' was restarted: ${why}`), stub);
    stub.terminate(`the stub was stopped: ${why}`);
  }

  // --- frames from the stub ---------------------------------------------------------------------------------

  private onFrame(stub: StubProcess, frame: Frame): void {
    switch (frame.type) {
      case MessageType.Response: {
        const responses = [frame.header as WireResponse];
        if (this.queuedFrames === 0 && allInline(responses)) this.onInlineResponses(responses, frame.blob);
        else this.inOrder(() => this.onResponses(stub, responses, frame.blob));
        break;
      }
      case MessageType.ExecuteDone: {
        const arrived = process.hrtime.bigint();
        const h = frame.header as ExecuteDoneMessage;
        const responses = Array.isArray(h.responses) ? h.responses : [];
        if (this.queuedFrames === 0 && allInline(responses)) {
          // Nothing to wait for (no /dev/shm read): answered in this turn, no promise chain.
          const reading = { ns: 0 };
          this.onInlineResponses(responses, frame.blob, reading);
          this.executeReturned(h, arrived, reading.ns);
        } else {
          this.inOrder(() => this.onExecuteDone(stub, h, frame.blob, arrived));
        }
        break;
      }
      case MessageType.BlsRequest:
      case MessageType.BlsCancel:
        this.bls?.onFrame(frame);
        break;
      case MessageType.ModelControl:
        this.control?.onFrame(frame);
        break;
      case MessageType.Metrics: {
        const q = (frame.header as { query?: unknown }).query;
        if (typeof q === 'number') this.metricsQueries.get(q)?.(parseMetricsReply(frame.header));
        break;
      }
      case MessageType.Log:
        this.onLog(frame.header as LogMessage);
        break;
      default:
        break;
    }
  }

  /**
   * Responses are handled strictly in arrival order: reading a large tensor from /dev/shm may wait, and a
   * later frame (say, a request's final response) must not overtake an earlier one.
   */
  private inOrder(task: () => Promise<void>): void {
    this.queuedFrames++;
    this.frameChain = this.frameChain
      .then(task)
      .catch((err: unknown) => {
        this.opts.log.error(`instance '${this.name}': ${NereidError.from(err).message}`);
      })
      .finally(() => this.queuedFrames--);
  }

  private onLog(h: LogMessage): void {
    const text = `${typeof h.file === 'string' ? h.file : ''}:${typeof h.line === 'number' ? h.line : 0}] ${String(h.message)}`;
    const log = this.opts.log;
    if (h.level === 1) log.warn(text);
    else if (h.level === 2) log.error(text);
    else if (h.level === 3) log.verbose(text);
    else log.info(text);
  }

  private async onExecuteDone(
    stub: StubProcess,
    h: ExecuteDoneMessage,
    blob: Buffer,
    arrived: bigint,
  ): Promise<void> {
    const reading = { ns: 0 };
    if (h.responses !== undefined) {
      await this.onResponses(stub, Array.isArray(h.responses) ? h.responses : [], blob, reading);
    }
    this.executeReturned(h, arrived, reading.ns);
  }

  /** The model's execute returned (its responses already delivered): timings, errors, reschedules. */
  private executeReturned(h: ExecuteDoneMessage, arrived: bigint, readingNs: number): void {
    const batch = this.batches.get(h.batch);
    if (!batch) return;
    // Reported before execute() settles, which is when the core reads them (BackendRequest.reportTiming).
    // The stub stamps its own start and end on the same clock (CLOCK_MONOTONIC: time.monotonic_ns() there,
    // process.hrtime here); kept within what the host saw, so the phases never exceed the request's time.
    const started = clampedStubTime(h.started, batch.execStart, arrived) ?? batch.sentAt;
    const finished = clampedStubTime(h.finished, started, arrived) ?? arrived;
    const timings = {
      computeInputNs: nsBetween(batch.execStart, started),
      computeInferNs: nsBetween(started, finished),
      computeOutputNs: readingNs,
    };
    for (const r of batch.requests) r.reportTiming?.(timings);
    if (h.error !== undefined) {
      const located = this.located(h.error_info, 'execute');
      const error = internal(located ?? String(h.error));
      // A located error went to the failure log (once per distinct error); anything else is logged here.
      if (located === undefined) this.opts.log.error(error.message);
      for (const [rid, f] of this.inflight) {
        if (f.batch !== batch) continue;
        if (!f.request.sender.done) f.request.sender.fail(error);
        this.finish(rid, f);
      }
    }
    if (Array.isArray(h.rescheduled)) for (const rid of h.rescheduled) this.handBack(rid);
    batch.pythonReturned = true;
    // Open streams get a whole execution timeout from here.
    batch.timer?.refresh();
    this.settle(batch, false);
    // The stub has gone on to the next batch sent to it.
    this.armRunning();
  }

  /** The model rescheduled the request: the scheduler runs it again later, or it fails here. */
  private handBack(rid: unknown): void {
    const f = typeof rid === 'number' ? this.inflight.get(rid) : undefined;
    if (!f) return;
    const r = f.request;
    if (!r.sender.done) {
      if (r.reschedule) r.reschedule();
      else r.sender.fail(invalidArg(RESCHEDULE_UNSUPPORTED));
    }
    this.finish(rid as number, f);
  }

  /** `reading`, when given, accumulates the time spent reading outputs (the compute_output phase). */
  private async onResponses(
    stub: StubProcess,
    responses: readonly WireResponse[],
    blob: Buffer,
    reading?: { ns: number },
  ): Promise<void> {
    const freed: FreedRanges = [];
    for (const r of responses) {
      const f = typeof r?.rid === 'number' ? this.inflight.get(r.rid) : undefined;
      f?.batch.timer?.refresh();
      let outputs;
      const readStart = process.hrtime.bigint();
      try {
        outputs = await readTensors(r?.outputs, blob, stub.files?.fromStub, freed);
        if (reading) reading.ns += nsBetween(readStart, process.hrtime.bigint());
      } catch (err) {
        if (f) {
          f.request.sender.fail(NereidError.from(err));
          this.finish(r.rid, f);
        }
        continue;
      }
      this.deliver(r, f, outputs);
    }
    if (freed.length > 0) stub.send(MessageType.Free, { ranges: freed });
  }

  /** onResponses for responses whose outputs are all inline: no /dev/shm read, so no promise. */
  private onInlineResponses(
    responses: readonly WireResponse[],
    blob: Buffer,
    reading?: { ns: number },
  ): void {
    for (const r of responses) {
      const f = typeof r?.rid === 'number' ? this.inflight.get(r.rid) : undefined;
      f?.batch.timer?.refresh();
      let outputs;
      const readStart = reading ? process.hrtime.bigint() : 0n;
      try {
        outputs = readInlineTensors(r?.outputs, blob) ?? [];
        if (reading) reading.ns += nsBetween(readStart, process.hrtime.bigint());
      } catch (err) {
        if (f) {
          f.request.sender.fail(NereidError.from(err));
          this.finish(r.rid, f);
        }
        continue;
      }
      this.deliver(r, f, outputs);
    }
  }

  /** Hands one response from the stub to its request. */
  private deliver(r: WireResponse, f: Inflight | undefined, outputs: Tensor[]): void {
    const final = r?.final === true;
    if (!f || f.request.sender.done) {
      if (f && final) this.finish(r.rid, f);
      return;
    }
    if (r.error !== undefined) {
      const e = (typeof r.error === 'object' ? r.error : null) as Partial<WireError> | null;
      const message =
        (e?.from_model !== true ? this.located(e?.info, 'execute') : undefined) ??
        (typeof e?.message === 'string' ? e.message : JSON.stringify(r.error));
      // The model's own error response counts as a success (Triton's backend sent a response for it);
      // errors the stub raised for the model (no final response, a raising coroutine) as failures.
      const error = new NereidError(errorCodeOf(e?.code), message);
      if (e?.from_model === true) f.request.sender.fail(error, { countAs: 'success' });
      else f.request.sender.fail(error);
      this.finish(r.rid, f);
      return;
    }
    const undeclared = Array.isArray(r.undeclared) ? r.undeclared : undefined;
    const mistake = this.opts.outputCheck?.check(outputs, undeclared, f.request.requestedOutputs);
    if (mistake) {
      f.request.sender.fail(mistake);
      this.finish(r.rid, f);
      return;
    }
    const parameters = responseParameters(r.parameters);
    f.request.sender.send(outputs, parameters ? { final, parameters } : { final });
    if (final) this.finish(r.rid, f);
  }

  private finish(rid: number, f: Inflight): void {
    if (!this.inflight.delete(rid)) return;
    f.batch.pending--;
    this.settle(f.batch, false);
  }

  private settle(batch: Batch, force: boolean): void {
    // Triton reports a batch's statistics once the stub answered for it, whatever execute did.
    const result: ExecuteResult = { executed: batch.pythonReturned };
    // A decoupled model's instance is free once its execute returned; its streams may go on.
    if (batch.pythonReturned && this.opts.decoupled) batch.resolve(result);
    if (!force && !(batch.pythonReturned && batch.pending <= 0)) return;
    if (!this.batches.delete(batch.id)) return;
    // The cancellation poll is left to lapse by itself: re-arming it for every batch costs more.
    clearTimeout(batch.timer);
    batch.unpin();
    batch.resolve(result);
  }
}
