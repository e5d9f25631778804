/**
 * One Python model instance: a stub process running the model's TritonPythonModel, fed whole batches.
 * This file wires four parts and handles what the stub says:
 * - supervisor.ts starts, restarts and stops the stub (execution timeouts, memory limit, abort);
 * - ledger.ts keeps the batches and requests the stubs hold, their order and when execute() settles;
 * - batch-input.ts turns a batch into its EXECUTE frame (inputs inline or in /dev/shm);
 * - response-reader.ts reads the stub's responses in arrival order;
 * - credit.ts gives each request of a decoupled model its own flow control (a slow client's stream
 *   holds back only its own model thread).
 *
 * execute() sends one EXECUTE frame and settles when the stub reports the model's execute returned
 * (EXECUTE_DONE) and, for a default-mode model, every request of the batch has its response. A decoupled
 * model's requests may stay open after that, answered from other threads as in Triton: the instance takes
 * its next batch meanwhile. Default-mode responses come back in the EXECUTE_DONE frame; decoupled ones as
 * RESPONSE frames.
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
 */
import type {
  BackendRequest,
  ExecuteResult,
  InstanceHandle,
  ParameterValue,
  ServerApi,
} from '../../backend-api/backend.js';
import { NereidError, internal, invalidArg, unavailable } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { OutputCheck } from '../output-check.js';
import { capModelText } from '../model-errors.js';
import { batchInput, type StubBatchInput } from './batch-input.js';
import { BlsService, type ServerInfer } from './bls.js';
import { ResponseFlows } from './credit.js';
import { errorInfoOf, pythonFailure, type PythonFailureScope } from './failures.js';
import type { Frame } from './frames.js';
import { BatchLedger } from './ledger.js';
import type { StubFamily } from './metrics.js';
import { ModelControlService } from './model-control.js';
import {
  MessageType,
  decode,
  decodeExecuteDone,
  type ExecuteDoneIn,
  type LogIn,
  type ResponseIn,
} from './protocol.js';
import { ResponseReader, nsBetween, type ResponseReaderSink } from './response-reader.js';
import type { StubProcess } from './stub-process.js';
import { StubSupervisor, type SupervisorOptions } from './supervisor.js';

export type { InitTemplate } from './supervisor.js';

/** The supervisor's options (the stub, its INIT, its limits) and what the instance itself needs. */
export interface PythonInstanceOptions extends SupervisorOptions {
  /** Batches the core may hand the instance at once (default 1); they wait in order in the stub's socket. */
  readonly pipelineDepth?: number;
  readonly serverInfer: ServerInfer | undefined;
  /** Repository control for pb_utils.load_model and friends (the ModelLoadContext's serverApi). */
  readonly serverApi?: ServerApi;
  /** The model version's folders and failure log: what the model raises becomes a located error. */
  readonly failures?: Omit<PythonFailureScope, 'id'> & { readonly version: number };
  /** Checks the output names the model sends against its config (../output-check.ts). */
  readonly outputCheck?: OutputCheck;
}

/** Triton's words when a request is rescheduled on a model whose scheduler cannot take it back. */
export const RESCHEDULE_UNSUPPORTED =
  'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to ' +
  'handle such a flag.';

/** A time the stub reported (CLOCK_MONOTONIC ns), within [lo, hi]; undefined when it sent none. */
function clampedStubTime(v: number | undefined, lo: bigint, hi: bigint): bigint | undefined {
  if (v === undefined) return undefined;
  const t = BigInt(Math.round(v));
  return t < lo ? lo : t > hi ? hi : t;
}

function responseParameters(text: string): Record<string, ParameterValue> | undefined {
  if (text === '' || text === '{}') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    const out: Record<string, ParameterValue> = {};
    for (const [k, v] of Object.entries(parsed)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    }
    return out;
  } catch {
    return undefined;
  }
}

export class PythonInstance implements InstanceHandle {
  readonly name: string;
  /** Readonly for the core (InstanceHandle.pipelineDepth): batches it may hand this instance at once. */
  readonly pipelineDepth: number;
  private readonly ledger: BatchLedger;
  private readonly supervisor: StubSupervisor;
  private readonly reader: ResponseReader;
  /** A decoupled model's per-request flow control (credit.ts); undefined in default mode. */
  private readonly flows: ResponseFlows | undefined;
  private bls: BlsService | undefined;
  private control: ModelControlService | undefined;
  private nextMetricsQuery = 1;
  private readonly metricsQueries = new Map<number, (families: StubFamily[] | undefined) => void>();
  /** The last metrics a stub answered with, kept for when it is too busy to answer. */
  private lastMetrics: { stub: StubProcess; families: StubFamily[] } | undefined;
  private readonly scope: PythonFailureScope | undefined;

  private constructor(private readonly opts: PythonInstanceOptions) {
    this.name = opts.spec.name;
    this.pipelineDepth = Math.max(1, opts.pipelineDepth ?? 1);
    const f = opts.failures;
    this.scope = f && { ...f, id: { model: opts.modelName, version: f.version, instance: opts.spec.name } };
    this.ledger = new BatchLedger(opts.decoupled);
    const sink: ResponseReaderSink = {
      // A response is progress: its batch's execution timeout starts again.
      arriving: (r) => this.ledger.request(r.rid)?.batch.timer?.refresh(),
      deliver: (r, outputs) => (this.flows ? this.flows.arrived(r, outputs) : this.hand(r, outputs)),
    };
    this.reader = new ResponseReader(sink, this.name, opts.log);
    this.flows = opts.decoupled
      ? new ResponseFlows(
          this.ledger,
          (r, outputs) => this.hand(r, outputs),
          (f) => this.reader.backPressure(f.batch.stub, f.request.sender),
        )
      : undefined;
    this.supervisor = new StubSupervisor(opts, this.ledger, {
      attach: (stub) => this.attach(stub),
      detach: () => this.detach(),
      located: (raw) => this.located(raw, 'initialize'),
    });
  }

  /** Starts the stub and runs the model's initialize(); rejects with the model's error. */
  static async create(opts: PythonInstanceOptions): Promise<PythonInstance> {
    const instance = new PythonInstance(opts);
    await instance.supervisor.start();
    return instance;
  }

  /** close() was called. */
  get isClosed(): boolean {
    return this.supervisor.isClosed;
  }

  /** The stub's process id (tests kill it from outside). */
  get pid(): number | undefined {
    return this.supervisor.current?.pid;
  }

  /**
   * The model's metric families as this instance's stub holds them. The stub answers whenever it reads its
   * socket (at once when idle); one busy in a long execute() that does not answer within `timeoutMs` is
   * represented by its last answer. A stub that is down has none (a restarted stub starts from zero).
   */
  async customMetrics(timeoutMs: number): Promise<StubFamily[]> {
    const stub = this.supervisor.current;
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

  async execute(requests: readonly BackendRequest[]): Promise<ExecuteResult> {
    const live = requests.filter((r) => !r.sender.done);
    if (live.length === 0) return {};
    const execStart = process.hrtime.bigint();
    // Each batch takes its turn now and sends, or gives up, in it (ledger.ts).
    const turn = this.ledger.takeTurn();
    let turnTaken = false;
    try {
      let stub: StubProcess;
      try {
        const next = this.supervisor.live();
        stub = next instanceof Promise ? await next : next;
      } catch (err) {
        const e = NereidError.from(err);
        for (const r of live)
          r.sender.fail(unavailable(`Python model instance '${this.name}' is not available: ${e.message}`));
        return {};
      }
      const preparing = batchInput(live, {
        arena: stub.files?.toStub,
        threshold: this.opts.shmThreshold,
        // Also no BLS call may still be reading the host->stub file.
        reset: this.ledger.quiet && this.bls?.idle !== false,
        rid: () => this.ledger.takeRid(),
      });
      const input = preparing instanceof Promise ? await preparing : preparing;
      turnTaken = true;
      return await new Promise<ExecuteResult>((resolve) => {
        this.ledger.inTurn(turn, () => this.sendBatch(stub, live, input, execStart, resolve));
      });
    } finally {
      if (!turnTaken) this.ledger.inTurn(turn, () => undefined);
    }
  }

  /** Registers the batch and writes its EXECUTE frame (behind any batch the stub has not finished). */
  private sendBatch(
    stub: StubProcess,
    live: readonly BackendRequest[],
    input: StubBatchInput,
    execStart: bigint,
    resolve: (result: ExecuteResult) => void,
  ): void {
    const { wire, blob, unpin } = input;
    if (!stub.alive) {
      unpin();
      const e = this.supervisor.unhealthy(stub);
      for (const r of live) r.sender.fail(e);
      resolve({});
      return;
    }
    const rids = wire.map((w) => w.rid);
    const batch = this.ledger.open({ stub, requests: live, rids, execStart, unpin, resolve });
    stub.send(MessageType.Execute, { batch: batch.id, requests: wire }, blob.parts);
    this.supervisor.armRunning();
  }

  /** Ends everything at once (supervisor.ts); close() follows. */
  abort(error: NereidError): void {
    this.supervisor.abort(error);
  }

  async close(): Promise<void> {
    await this.supervisor.close();
  }

  /** The client's text for what the model raised, logged once per distinct error; undefined without info. */
  private located(raw: unknown, phase: 'initialize' | 'execute'): string | undefined {
    const info = errorInfoOf(raw);
    return info && this.scope ? pythonFailure(info, this.scope, phase) : undefined;
  }

  // --- a stub's life ----------------------------------------------------------------------------------------

  private attach(stub: StubProcess): void {
    stub.onFrame = (frame) => this.onFrame(stub, frame);
    this.bls = new BlsService(
      stub,
      this.opts.serverInfer,
      this.opts.shmThreshold,
      this.opts.log,
      (rid) => this.ledger.request(rid)?.request.trace,
      this.opts.modelName,
    );
    this.control = new ModelControlService(stub, {
      api: this.opts.serverApi,
      modelName: this.opts.modelName,
      initializing: () => this.supervisor.isInitializing(stub),
      log: this.opts.log,
    });
  }

  private detach(): void {
    this.bls?.abortAll();
    for (const done of [...this.metricsQueries.values()]) done(undefined);
  }

  // --- frames from the stub ---------------------------------------------------------------------------------

  private onFrame(stub: StubProcess, frame: Frame): void {
    const h = frame.header;
    switch (frame.type) {
      case MessageType.Response:
        this.reader.read(stub, [decode[MessageType.Response](h)], frame.blob);
        break;
      case MessageType.ExecuteDone: {
        const arrived = process.hrtime.bigint();
        let done: ExecuteDoneIn;
        try {
          done = decodeExecuteDone(frame.head);
        } catch (err) {
          // As for a frame that is not one at all (stub-process.ts): the stub is stopped, its requests fail.
          stub.terminate(`protocol error: ${NereidError.from(err).message}`);
          return;
        }
        this.reader.read(stub, done.responses, frame.blob, (readingNs) =>
          this.executeReturned(done, arrived, readingNs),
        );
        break;
      }
      case MessageType.BlsRequest:
        this.bls?.onRequest(decode[MessageType.BlsRequest](h), frame.blob);
        break;
      case MessageType.BlsCancel:
        this.bls?.onCancel(decode[MessageType.BlsCancel](h).call);
        break;
      case MessageType.BlsCredit: {
        const credit = decode[MessageType.BlsCredit](h);
        this.bls?.onCredit(credit.call, credit.n);
        break;
      }
      case MessageType.ModelControl:
        this.control?.onRequest(decode[MessageType.ModelControl](h), frame.blob);
        break;
      case MessageType.Metrics: {
        const m = decode[MessageType.Metrics](h);
        this.metricsQueries.get(m.query)?.(m.families);
        break;
      }
      case MessageType.Log:
        this.onLog(decode[MessageType.Log](h));
        break;
      default:
        break;
    }
  }

  private onLog(h: LogIn): void {
    // Printed at the model's own place (`model.py:12`), as Triton's Python backend prints it.
    const severity = h.level === 1 ? 'W' : h.level === 2 ? 'E' : h.level === 3 ? 'verbose' : 'I';
    this.opts.log.logAt(severity, h.file, h.line, h.message);
  }

  /** The model's execute returned (its responses already delivered): timings, errors, reschedules. */
  private executeReturned(h: ExecuteDoneIn, arrived: bigint, readingNs: number): void {
    const batch = this.ledger.batch(h.batch);
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
      const located = this.located(h.errorInfo, 'execute');
      const error = internal(located ?? capModelText(h.error));
      // A located error went to the failure log (once per distinct error); anything else is logged here.
      if (located === undefined) this.opts.log.error(error.message);
      this.ledger.failBatch(batch, error);
    }
    for (const rid of h.rescheduled) this.handBack(rid);
    // Open streams get a whole execution timeout from here.
    batch.timer?.refresh();
    this.ledger.returned(batch);
    // The stub has gone on to the next batch sent to it.
    this.supervisor.armRunning();
  }

  /** The model rescheduled the request: the scheduler runs it again later, or it fails here. */
  private handBack(rid: number): void {
    const f = this.ledger.request(rid);
    if (!f) return;
    const r = f.request;
    if (!r.sender.done) {
      if (r.reschedule) r.reschedule();
      else r.sender.fail(invalidArg(RESCHEDULE_UNSUPPORTED));
    }
    this.ledger.finish(rid, f);
  }

  // --- responses ---------------------------------------------------------------------------------------------

  /**
   * Hands one response from the stub to its request, in arrival order (response-reader.ts, through
   * credit.ts for a decoupled model). A response for a stream that already ended is dropped, and the
   * stub is told the request is cancelled.
   */
  private hand(r: ResponseIn, outputs: Tensor[] | NereidError): void {
    const f = this.ledger.request(r.rid);
    if (outputs instanceof NereidError) {
      if (f) this.ledger.fail(r.rid, f, outputs);
      return;
    }
    if (!f || f.request.sender.done) {
      if (f && r.final) this.ledger.finish(r.rid, f);
      else if (f) this.ledger.cancel(r.rid, f);
      return;
    }
    const sender = f.request.sender;
    if (r.error !== undefined) {
      const e = r.error;
      const message = (e.fromModel ? undefined : this.located(e.info, 'execute')) ?? capModelText(e.message);
      // The model's own error response counts as a success (Triton's backend sent a response for it);
      // errors the stub raised for the model (no final response, a raising coroutine) as failures.
      const error = new NereidError(e.code, message);
      if (e.fromModel) sender.fail(error, { countAs: 'success' });
      else sender.fail(error);
      this.ledger.finish(r.rid, f);
      return;
    }
    const mistake = this.opts.outputCheck?.check(outputs, r.undeclared, f.request.requestedOutputs);
    if (mistake) {
      this.ledger.fail(r.rid, f, mistake);
      return;
    }
    const parameters = responseParameters(r.parameters);
    sender.send(outputs, parameters ? { final: r.final, parameters } : { final: r.final });
    if (r.final) this.ledger.finish(r.rid, f);
  }
}
