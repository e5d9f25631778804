/**
 * One JavaScript model instance: a worker thread running the model, fed whole batches. execute() sends
 * the batch and settles once the model's execute() has returned; for a default-mode model also every
 * request of the batch has its response by then. A decoupled model's requests may stay open after that
 * (senders work after execute() returned, as in Triton): the instance takes its next batch meanwhile, and
 * the open requests end when the model sends their final flag.
 *
 * Faults, each confined to this instance (other instances and models keep serving):
 * - the model throws in execute(): the batch's requests fail with its error; the worker lives on;
 * - the worker makes no progress for execution_timeout_ms (no response, execute() not returned — a hang
 *   or a busy loop): the pending requests fail with UNAVAILABLE, the thread is terminated and replaced;
 *   after execute() returned, a batch whose open streams send nothing for that long fails just those
 *   requests (the worker answered: it is not hung, the streams were forgotten or stalled);
 * - the worker dies (uncaught exception, process.exit(), out of memory): its requests (open streams of
 *   earlier batches included) fail with INTERNAL, and a new worker (initialize() again) is started right
 *   away; if that fails, the next batch tries again and fails with UNAVAILABLE if it cannot.
 * Cancelled requests are told to the worker (request.signal, isCancelled()) within CANCEL_POLL_MS.
 * abort() (an unload that waited too long) fails everything and terminates the worker without a
 * replacement.
 */
import type {
  BackendRequest,
  InstanceHandle,
  InstanceSpec,
  ParameterValue,
  ResponseSender,
  ServerApi,
} from '../../backend-api/backend.js';
import { isServerParameter } from '../../backend-api/backend.js';
import type { DataType } from '../../common/datatype.js';
import { NereidError, cancelled, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import type { MetricFamilySnapshot } from '../../sdk/metrics.js';
import { BlsBridge } from './bls.js';
import type { JavascriptOptions } from './options.js';
import type {
  JsFromWorker,
  TransferCounters,
  WireError,
  WireRequest,
  WireResponse,
  JsWorkerInit,
} from './protocol.js';
import { checkedCoreTensor, copyToWire, newCounters } from './tensors.js';
import { modelFailure, type FailureScope } from './failures.js';
import { JsWorker, errorOf, type WorkerStarted } from './worker-client.js';
import type { OutputCheck } from '../output-check.js';

/**
 * How often a running batch's requests are checked for cancellation: one timer per batch instead of an
 * 'abort' listener per request, which costs more than a small request; cancellation needs to reach the
 * model soon, not instantly.
 */
const CANCEL_POLL_MS = 10;

export interface JsInstanceOptions {
  readonly spec: InstanceSpec;
  readonly modelName: string;
  /** workerData for this instance's workers (its facts filled in). */
  readonly init: JsWorkerInit;
  readonly options: JavascriptOptions;
  readonly decoupled: boolean;
  /** Output datatypes the config declares, checked against what the model sends. */
  readonly outputTypes: ReadonlyMap<string, DataType>;
  readonly log: Logger;
  readonly serverApi: ServerApi | undefined;
  /** Told when close() begins (the model forgets the instance). */
  readonly onClose?: (instance: JsInstance) => void;
  /** The model version's folders and failure log: what the model throws becomes a located error. */
  readonly failures: Omit<FailureScope, 'id'> & { readonly version: number };
  /** Checks the output names the model sends against its config (output-check.ts). */
  readonly outputCheck?: OutputCheck;
}

interface Batch {
  readonly id: number;
  readonly worker: JsWorker;
  pending: number;
  /** The model's execute() returned (or threw) for this batch. */
  returned: boolean;
  /** Settles execute(): when the model's execute() returned, and (default mode) every request ended. */
  readonly resolve: () => void;
  timer: NodeJS.Timeout | undefined;
  cancelPoll: NodeJS.Timeout | undefined;
}

interface Inflight {
  readonly request: BackendRequest;
  readonly batch: Batch;
  cancelSent: boolean;
}

function modelParameters(p: Readonly<Record<string, ParameterValue>>): Record<string, ParameterValue> {
  let out: Record<string, ParameterValue> | undefined;
  for (const k in p) {
    if (isServerParameter(k)) continue;
    (out ??= {})[k] = p[k];
  }
  return out ?? {};
}

export class JsInstance implements InstanceHandle {
  readonly name: string;
  private worker: JsWorker | undefined;
  private bls: BlsBridge | undefined;
  private starting: Promise<JsWorker> | undefined;
  private closed = false;
  private nextRid = 1;
  private nextBatch = 1;
  private readonly inflight = new Map<number, Inflight>();
  private readonly batches = new Map<number, Batch>();
  private readonly counters = newCounters();
  private restarts = 0;
  /** The current worker's model defines isReady() (else a live worker is ready). */
  private definesIsReady = false;
  /** Acknowledgements of decoupled responses to post to each worker at the end of this turn. */
  private readonly acks = new Map<JsWorker, Map<number, number>>();
  private ackFlush: NodeJS.Immediate | undefined;
  /** Requests whose response queue was full: responses delivered meanwhile, acknowledged once it has room. */
  private readonly heldAcks = new Map<number, number>();
  /** The last metrics snapshot the worker answered with, kept for a busy worker (see customMetrics()). */
  private lastMetrics: { worker: JsWorker; families: MetricFamilySnapshot[] } | undefined;

  private readonly scope: FailureScope;

  private constructor(private readonly opts: JsInstanceOptions) {
    this.name = opts.spec.name;
    this.scope = {
      ...opts.failures,
      id: { model: opts.modelName, version: opts.failures.version, instance: opts.spec.name },
    };
  }

  /** Starts the worker and runs the model's initialize(); rejects with the model's error. */
  static async create(opts: JsInstanceOptions): Promise<JsInstance> {
    const instance = new JsInstance(opts);
    instance.adopt(await instance.startWorker());
    return instance;
  }

  /** The current worker's thread id (tests). */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** How many times a worker was replaced after a crash or a timeout. */
  get restartCount(): number {
    return this.restarts;
  }

  async execute(requests: readonly BackendRequest[]): Promise<void> {
    const live = requests.filter((r) => !r.sender.done);
    if (live.length === 0) return;
    let worker: JsWorker;
    try {
      worker = await this.ensureWorker();
    } catch (err) {
      const e = unavailable(
        `JavaScript model instance '${this.name}' is not available: ${NereidError.from(err).message}`,
      );
      for (const r of live) r.sender.fail(e);
      return;
    }
    const transfer: ArrayBuffer[] = [];
    const wire: WireRequest[] = [];
    for (const r of live) {
      const inputs = [];
      for (const t of r.inputs.values()) inputs.push(copyToWire(t, transfer, this.counters));
      wire.push({
        rid: this.nextRid++,
        id: r.id,
        correlationId: r.correlationId,
        flags: r.flags,
        parameters: modelParameters(r.parameters),
        inputs,
        outputs: [...r.requestedOutputs],
        batchSize: r.batchSize,
        cancelled: r.signal.aborted,
      });
    }
    await new Promise<void>((resolve) => {
      const batch: Batch = {
        id: this.nextBatch++,
        worker,
        pending: live.length,
        returned: false,
        resolve,
        timer: undefined,
        cancelPoll: undefined,
      };
      this.batches.set(batch.id, batch);
      live.forEach((request, i) => {
        this.inflight.set(wire[i].rid, { request, batch, cancelSent: request.signal.aborted });
      });
      const timeoutMs = this.opts.options.executionTimeoutMs;
      if (timeoutMs > 0) batch.timer = setTimeout(() => this.onTimeout(batch), timeoutMs);
      batch.cancelPoll = setTimeout(() => this.pollCancellation(batch), CANCEL_POLL_MS);
      worker.post({ kind: 'execute', batch: batch.id, requests: wire }, transfer);
    });
  }

  /**
   * Ends everything at once (an unload that waited too long): every request fails with `error`, the
   * worker is terminated (a busy loop included) and none replaces it; close() follows.
   */
  abort(error: NereidError): void {
    this.closed = true;
    const workers = new Set<JsWorker>([...this.batches.values()].map((b) => b.worker));
    if (this.worker) workers.add(this.worker);
    this.worker = undefined;
    this.bls?.abortAll();
    for (const w of workers) {
      this.failWorkerRequests(w, error);
      void w.terminate();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.opts.onClose?.(this);
    const worker = this.worker ?? (await this.starting?.catch(() => undefined));
    this.worker = undefined;
    this.bls?.abortAll();
    await worker?.finalizeAndStop(this.opts.options.initializeTimeoutMs);
    // Streams still open now have nobody left to answer them.
    if (worker) {
      this.failWorkerRequests(
        worker,
        unavailable(`JavaScript model instance '${this.name}' was closed before the request ended`),
      );
    }
  }

  /**
   * The model's isReady() (true when it has none, without asking the worker); false when the worker is
   * down or isReady() throws or does not answer in time (a worker busy in a synchronous execute() answers
   * only when it returns).
   */
  async isReady(timeoutMs = 5000): Promise<boolean> {
    const w = this.worker;
    if (!w?.alive) return false;
    if (!this.definesIsReady) return true;
    try {
      const a = await w.query('ready', timeoutMs);
      return a.what === 'ready' && a.ready;
    } catch {
      return false;
    }
  }

  /**
   * The model's custom metrics as its worker holds them (empty when the worker is down: a restarted
   * worker starts from zero). A worker that does not answer within `timeoutMs` — busy in a synchronous
   * execute() — is represented by its last answer, so its counters do not vanish from a scrape.
   */
  async customMetrics(timeoutMs = 5000): Promise<MetricFamilySnapshot[]> {
    const w = this.worker;
    if (!w?.alive) return [];
    try {
      const a = await w.query('metrics', timeoutMs);
      const families = a.what === 'metrics' ? a.families : [];
      this.lastMetrics = { worker: w, families };
      return families;
    } catch (err) {
      if (w.alive && this.lastMetrics?.worker === w) return this.lastMetrics.families;
      throw err;
    }
  }

  /** Bytes that crossed to and from the current worker, by how they crossed (tensors.ts). */
  async transferCounters(timeoutMs = 5000): Promise<TransferCounters> {
    const mine = { ...this.counters };
    const w = this.worker;
    if (!w?.alive) return mine;
    const a = await w.query('counters', timeoutMs);
    if (a.what !== 'counters') return mine;
    return {
      ...mine,
      outputBytesMoved: a.counters.outputBytesMoved,
      outputBytesCopied: a.counters.outputBytesCopied,
      outputBytesShared: a.counters.outputBytesShared,
    };
  }

  // --- worker lifecycle ---------------------------------------------------------------------------------

  private startWorker(): Promise<WorkerStarted> {
    return JsWorker.start(this.opts.init, {
      label: this.name,
      log: this.opts.log,
      timeoutMs: this.opts.options.initializeTimeoutMs,
      maxOldGenerationSizeMb: this.opts.options.maxOldGenerationSizeMb,
      describe: (e, phase) => modelFailure(e, this.scope, phase),
    });
  }

  private adopt(started: WorkerStarted): void {
    const worker = started.worker;
    this.worker = worker;
    this.definesIsReady = started.definesIsReady === true;
    this.lastMetrics = undefined;
    const bls = new BlsBridge(
      this.opts.serverApi,
      (m, t) => worker.post(m, t),
      this.opts.log,
      this.name,
      this.opts.modelName,
    );
    this.bls = bls;
    worker.onMessage = (msg) => this.onMessage(bls, msg);
    worker.onExitOnce((unexpected) => this.onWorkerExit(worker, bls, unexpected));
  }

  private async ensureWorker(): Promise<JsWorker> {
    if (this.closed) throw unavailable(`instance '${this.name}' is closed`);
    if (this.worker?.alive) return this.worker;
    this.worker = undefined;
    this.restart();
    const worker = await this.starting!;
    if (this.closed) throw unavailable(`instance '${this.name}' is closed`);
    return worker;
  }

  /** Starts a replacement worker unless one is on its way. */
  private restart(): void {
    if (this.starting || this.closed) return;
    this.restarts++;
    const starting = this.startWorker().then(
      async (started) => {
        if (this.closed) {
          await started.worker.terminate();
          throw unavailable(`instance '${this.name}' is closed`);
        }
        this.adopt(started);
        return started.worker;
      },
      (err: unknown) => {
        this.opts.log.error(
          `failed to restart the worker of '${this.name}' (the next batch tries again): ${NereidError.from(err).message}`,
        );
        throw err;
      },
    );
    this.starting = starting;
    const clear = (): void => {
      if (this.starting === starting) this.starting = undefined;
    };
    starting.then(clear, clear);
  }

  /** Fails whatever `worker` still held, and forgets its batches. */
  private failWorkerRequests(worker: JsWorker, error: NereidError): void {
    for (const [rid, f] of this.inflight) {
      if (f.batch.worker !== worker) continue;
      if (!f.request.sender.done) f.request.sender.fail(error);
      this.inflight.delete(rid);
    }
    for (const b of this.batches.values()) {
      if (b.worker !== worker) continue;
      b.pending = 0;
      b.returned = true;
      this.settle(b);
    }
  }

  private onWorkerExit(worker: JsWorker, bls: BlsBridge, unexpected: boolean): void {
    bls.abortAll();
    if (this.worker === worker) this.worker = undefined;
    if (!unexpected) return;
    const reason = worker.describeExit();
    this.failWorkerRequests(
      worker,
      internal(
        `JavaScript model instance '${this.name}' failed: its worker thread exited unexpectedly (${reason})`,
      ),
    );
    if (this.closed) return;
    this.opts.log.error(
      `the worker of JavaScript model instance '${this.name}' exited (${reason}); restarting it`,
    );
    this.restart();
  }

  private onTimeout(batch: Batch): void {
    if (!this.batches.has(batch.id)) return;
    if (this.heldBack(batch)) {
      // A request of the batch waits for a slow reader (back-pressure): the model is not stuck.
      batch.timer?.refresh();
      return;
    }
    const ms = this.opts.options.executionTimeoutMs;
    const worker = batch.worker;
    if (batch.returned) {
      this.failStalledStreams(batch, ms);
      return;
    }
    this.opts.log.error(
      `JavaScript model instance '${this.name}' made no progress for ${ms} ms (execution_timeout_ms); restarting its worker`,
    );
    if (this.worker === worker) this.worker = undefined;
    this.failWorkerRequests(
      worker,
      unavailable(
        `JavaScript model instance '${this.name}' made no progress for ${ms} ms (execution_timeout_ms); its worker was restarted`,
      ),
    );
    void worker.terminate();
    this.restart();
  }

  /**
   * A decoupled batch whose model returned and whose open streams sent nothing for `ms`: the worker went on
   * serving (or would be caught by a later batch's timer), so only these requests fail; the model sees them
   * cancelled and their senders closed.
   */
  private failStalledStreams(batch: Batch, ms: number): void {
    this.opts.log.error(
      `JavaScript model instance '${this.name}': ${batch.pending} response stream(s) sent nothing for ${ms} ms after execute() returned (execution_timeout_ms); failing them`,
    );
    for (const [rid, f] of this.inflight) {
      if (f.batch !== batch) continue;
      this.inflight.delete(rid);
      if (!f.request.sender.done) {
        f.request.sender.fail(
          unavailable(
            `JavaScript model instance '${this.name}' sent nothing for request '${f.request.id}' for ${ms} ms after execute() returned (execution_timeout_ms)`,
          ),
        );
      }
      if (batch.worker.alive) batch.worker.post({ kind: 'drop', rid });
    }
    batch.pending = 0;
    this.settle(batch);
  }

  private pollCancellation(batch: Batch): void {
    if (!this.batches.has(batch.id)) return;
    for (const [rid, f] of this.inflight) {
      if (f.batch !== batch || f.cancelSent || !f.request.signal.aborted) continue;
      f.cancelSent = true;
      batch.worker.post({ kind: 'cancel', rid });
    }
    batch.cancelPoll = setTimeout(() => this.pollCancellation(batch), CANCEL_POLL_MS);
  }

  private settle(batch: Batch): void {
    if (!batch.returned) return;
    // A decoupled model's instance is free once its execute() returned; its streams may go on.
    if (this.opts.decoupled) batch.resolve();
    if (batch.pending > 0) return;
    clearTimeout(batch.timer);
    clearTimeout(batch.cancelPoll);
    this.batches.delete(batch.id);
    batch.resolve();
  }

  // --- messages from the worker ---------------------------------------------------------------------------

  private onMessage(bls: BlsBridge, msg: JsFromWorker): void {
    switch (msg.kind) {
      case 'response':
        this.onResponse(msg.response);
        break;
      case 'executed':
        this.onExecuted(msg.batch, msg.responses, msg.error);
        break;
      case 'bls':
        bls.start(msg.call, msg.request);
        break;
      case 'bls-cancel':
        bls.cancel(msg.call);
        break;
      default:
        break;
    }
  }

  private onExecuted(id: number, responses: WireResponse[] | undefined, error: WireError | undefined): void {
    const batch = this.batches.get(id);
    if (responses) for (const r of responses) this.onResponse(r);
    if (!batch) return;
    if (error) {
      const e = error.phase ? modelFailure(error, this.scope, 'execute') : errorOf(error);
      for (const [rid, f] of this.inflight) {
        if (f.batch !== batch) continue;
        if (!f.request.sender.done) f.request.sender.fail(e);
        this.inflight.delete(rid);
        batch.pending--;
      }
    }
    batch.returned = true;
    // Open streams get a whole execution_timeout_ms from here.
    batch.timer?.refresh();
    this.settle(batch);
  }

  private onResponse(r: WireResponse): void {
    const f = this.inflight.get(r.rid);
    if (!f) return;
    const batch = f.batch;
    const sender = f.request.sender;
    batch.timer?.refresh();
    const end = (): void => {
      this.inflight.delete(r.rid);
      batch.pending--;
      this.settle(batch);
    };
    if (f.request.signal.aborted) {
      // The client is gone: nothing more reaches it, and the model's stop (its final flag, or an error)
      // ends the request as cancelled, as the built-in backends end theirs.
      if (r.final || r.error) {
        sender.fail(cancelled('request cancelled'));
        end();
      }
      return;
    }
    if (r.error) {
      sender.fail(errorOf(r.error));
      end();
      return;
    }
    let outputs: Tensor[];
    try {
      outputs = r.outputs.map((t) => this.checkOutput(t));
    } catch (err) {
      sender.fail(NereidError.from(err));
      end();
      return;
    }
    const mistake = this.opts.outputCheck?.check(outputs, r.undeclared, f.request.requestedOutputs);
    if (mistake) {
      if (!sender.done) sender.fail(mistake);
      end();
      return;
    }
    if (!sender.done)
      sender.send(outputs, r.parameters ? { final: r.final, parameters: r.parameters } : { final: r.final });
    if (r.final || sender.done) end();
    else if (this.opts.decoupled) this.acknowledge(batch.worker, r.rid, sender);
  }

  /**
   * Back-pressure (issue 33): the worker's sender stays at most RESPONSE_WINDOW responses ahead of what
   * was acknowledged. A response that reached a queue with room is acknowledged at the end of this turn
   * (one message for all of them); once the queue is full (`sender.full`), acknowledgements wait for
   * `sender.whenWritable()`, so a model awaiting its sender's whenWritable() waits for the reader.
   */
  private acknowledge(worker: JsWorker, rid: number, sender: ResponseSender): void {
    const held = this.heldAcks.get(rid);
    if (held !== undefined) {
      this.heldAcks.set(rid, held + 1);
      return;
    }
    if (sender.full === true && sender.whenWritable !== undefined) {
      this.heldAcks.set(rid, 1);
      void sender.whenWritable().then(() => {
        const n = this.heldAcks.get(rid) ?? 0;
        this.heldAcks.delete(rid);
        this.queueAck(worker, rid, n);
      });
      return;
    }
    this.queueAck(worker, rid, 1);
  }

  private queueAck(worker: JsWorker, rid: number, n: number): void {
    if (n <= 0 || !worker.alive) return;
    let forWorker = this.acks.get(worker);
    if (forWorker === undefined) {
      forWorker = new Map();
      this.acks.set(worker, forWorker);
    }
    forWorker.set(rid, (forWorker.get(rid) ?? 0) + n);
    this.ackFlush ??= setImmediate(() => {
      this.ackFlush = undefined;
      for (const [w, m] of this.acks) {
        if (w.alive) w.post({ kind: 'taken', rids: [...m.keys()], counts: [...m.values()] });
      }
      this.acks.clear();
    });
  }

  /** A request of the batch is waiting for room in its response queue. */
  private heldBack(batch: Batch): boolean {
    if (this.heldAcks.size === 0) return false;
    for (const rid of this.heldAcks.keys()) if (this.inflight.get(rid)?.batch === batch) return true;
    return false;
  }

  private checkOutput(w: unknown): Tensor {
    const t = checkedCoreTensor(w, `output of JavaScript model '${this.opts.modelName}'`);
    const expected = this.opts.outputTypes.get(t.name);
    if (expected !== undefined && expected !== t.datatype) {
      throw internal(
        `JavaScript model '${this.opts.modelName}' sent output '${t.name}' as ${t.datatype}, but its config declares ${expected}`,
      );
    }
    return t;
  }
}
