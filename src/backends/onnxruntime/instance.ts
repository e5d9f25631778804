/**
 * One ONNX Runtime model instance: a worker thread with its own session, fed whole batches (or, with
 * `execution_thread: "event_loop"`, a session on the event loop itself, see options.ts). For a
 * batching model the requests of a batch are joined along dim 0, run once, and the outputs cut back per
 * request; otherwise each request runs on its own. A worker that dies fails the batch it was running and
 * is replaced before the next one.
 *
 * Copies (main thread): each input is copied exactly once into an ArrayBuffer this instance owns — the
 * batch concatenation itself, or for a lone request a plain copy — and that buffer is transferred to the
 * worker. On the event loop a lone request's input that fills its own ArrayBuffer is not copied at all
 * (nothing is transferred; onnxruntime reads it during the run). The core's input Buffers are never transferred: the contract leaves them owned by the core
 * (an ensemble may hand the same tensor to two models, a cache may keep it), and transferring would
 * detach them under its feet; most of them are also slices of a larger body buffer, which could not be
 * transferred without taking the rest of the body along. Outputs come back as the worker's transferred
 * ArrayBuffers and reach the core as views: no copy on the way out.
 */
import type { InferenceSession } from 'onnxruntime-node';
import type { BackendRequest, InstanceHandle } from '../../backend-api/backend.js';
import { NereidError, internal } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { concatBatch, splitBatch } from '../batching.js';
import type { ExecutionThread } from './options.js';
import type { RunResult, OrtWireTensor, OrtWorkerInit } from './protocol.js';
import { checkStringTensor } from './strings.js';
import { OrtWorker } from './worker-client.js';

export interface InstanceOptions {
  readonly name: string;
  readonly maxBatchSize: number;
  readonly init: OrtWorkerInit;
  readonly log: Logger;
  /** 'worker' unless the model asks for the event loop. */
  readonly thread?: ExecutionThread;
}

/**
 * An event-loop run longer than this is reported (once per instance): nothing else was served meanwhile,
 * so the model is probably not small enough for `execution_thread: "event_loop"`.
 */
const SLOW_EVENT_LOOP_RUN_MS = 5;

/**
 * session.ts, loaded on the main thread only for models that run there (it loads onnxruntime-node), once
 * for the model's load and all its instances.
 */
type SessionModule = typeof import('./session.js');
let sessionModule: Promise<SessionModule> | undefined;
export const loadSessionModule = (): Promise<SessionModule> => (sessionModule ??= import('./session.js'));

/** A Buffer's bytes in a fresh ArrayBuffer of exactly that size (the one input copy, see header). */
function ownedCopy(data: Buffer): ArrayBuffer {
  // allocUnsafeSlow: outside Node's pool, so the ArrayBuffer is exactly these bytes; all of them are written.
  const copy = Buffer.allocUnsafeSlow(data.length);
  data.copy(copy);
  return copy.buffer;
}

/**
 * `usable`: the tensor's whole ArrayBuffer may go on the wire as it is — it was allocated by this instance
 * (a batch concatenation) and may be moved, or the run stays on this thread (event loop), where nothing is
 * transferred and onnxruntime only reads the bytes during the run.
 */
function toWire(t: Tensor, usable: boolean): OrtWireTensor {
  const ab = t.data.buffer;
  const whole =
    usable && ab instanceof ArrayBuffer && t.data.byteOffset === 0 && t.data.length === ab.byteLength;
  return {
    name: t.name,
    datatype: t.datatype,
    shape: [...t.shape],
    data: whole ? ab : ownedCopy(t.data),
  };
}

/** Fails a request whose BYTES inputs ORT could not carry intact, before it can spoil a whole batch. */
function acceptsStrings(r: BackendRequest): boolean {
  for (const t of r.inputs.values()) {
    if (t.datatype !== 'BYTES') continue;
    try {
      checkStringTensor(t.name, t.data);
    } catch (err) {
      r.sender.fail(NereidError.from(err, 'INVALID_ARG'));
      return false;
    }
  }
  return true;
}

/** Nanoseconds from `a` to `b` (0 if the clock reads otherwise). */
function nsBetween(a: bigint, b: bigint): number {
  return b > a ? Number(b - a) : 0;
}

function fromWire(w: OrtWireTensor): Tensor {
  return { name: w.name, datatype: w.datatype, shape: w.shape, data: Buffer.from(w.data) };
}

export class OrtInstance implements InstanceHandle {
  readonly name: string;
  readonly thread: ExecutionThread;
  private worker: OrtWorker | undefined;
  /** The event-loop session (thread 'event_loop' only). */
  private session: Promise<InferenceSession> | undefined;
  /** The event-loop session once it is open (dropped on close). */
  private opened: { session: InferenceSession; m: SessionModule } | undefined;
  private closed = false;
  private warnedSlowRun = false;

  /**
   * Takes over `worker` or `session` (already opened with the same init, on the matching thread), or
   * opens its own on the first batch.
   */
  constructor(
    private readonly opts: InstanceOptions,
    handover?: OrtWorker | InferenceSession,
  ) {
    this.name = opts.name;
    this.thread = opts.thread ?? 'worker';
    if (handover instanceof OrtWorker) this.adopt(handover);
    else if (handover) this.session = Promise.resolve(handover);
  }

  /** Starts the worker (or opens the event-loop session) now rather than on the first batch. */
  async start(): Promise<void> {
    if (this.thread === 'event_loop') await this.ensureSession();
    else await this.ensureWorker();
  }

  async execute(requests: readonly BackendRequest[]): Promise<void> {
    const live = requests.filter((r) => !r.sender.done && acceptsStrings(r));
    if (live.length === 0) return;
    if (this.opts.maxBatchSize > 0) {
      await this.runGroup(live);
    } else {
      // Without a batch dimension there is nothing to join along: one run per request.
      for (const r of live) {
        if (!r.sender.done) await this.runGroup([r]);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
    const session = this.session;
    this.session = undefined;
    this.opened = undefined;
    // The contract calls close() only after the last execute() settled, so no run is in flight.
    if (session) await (await session.catch(() => undefined))?.release();
  }

  /**
   * Test hook: the worker thread dies in the middle of the next batch (after its run, before its answer).
   * That batch fails; the one after gets a new worker.
   */
  async crashNextBatchForTesting(): Promise<void> {
    (await this.ensureWorker()).crashNextRunForTesting();
  }

  private adopt(worker: OrtWorker): void {
    this.worker = worker;
    worker.onExitOnce((unexpected) => {
      if (this.worker === worker) this.worker = undefined;
      if (unexpected) {
        this.opts.log.error(
          `onnxruntime worker of instance '${this.name}' died; starting a new one for the next batch`,
        );
      }
    });
  }

  private ensureSession(): Promise<InferenceSession> {
    if (this.closed) return Promise.reject(internal(`instance '${this.name}' is closed`));
    if (!this.session) {
      const opening = loadSessionModule().then((m) => m.openSession(this.opts.init));
      // A failed open is retried by the next batch rather than remembered.
      opening.catch(() => {
        if (this.session === opening) this.session = undefined;
      });
      this.session = opening;
    }
    return this.session;
  }

  /** One run on this instance's session, wherever it lives. The feeds are not to be used afterwards. */
  private async run(feeds: OrtWireTensor[], fetches: string[]): Promise<RunResult> {
    if (this.thread === 'event_loop') {
      // Once open, the session and its module are kept at hand: no promises to wait for on each run.
      const { session, m } = (this.opened ??= await this.openForRuns());
      const started = performance.now();
      try {
        return await m.runSession(session, feeds, fetches);
      } finally {
        this.noteEventLoopRun(performance.now() - started);
      }
    }
    return (await this.ensureWorker()).run(feeds, fetches);
  }

  private async openForRuns(): Promise<{ session: InferenceSession; m: SessionModule }> {
    const [session, m] = await Promise.all([this.ensureSession(), loadSessionModule()]);
    return { session, m };
  }

  private noteEventLoopRun(ms: number): void {
    if (ms <= SLOW_EVENT_LOOP_RUN_MS || this.warnedSlowRun) return;
    this.warnedSlowRun = true;
    this.opts.log.warn(
      `instance '${this.name}': an onnxruntime run took ${ms.toFixed(1)} ms on the event loop, which served ` +
        `nothing else meanwhile; execution_thread "event_loop" is meant for models whose runs take ` +
        `microseconds (reported once per instance)`,
    );
  }

  private async ensureWorker(): Promise<OrtWorker> {
    if (this.closed) throw internal(`instance '${this.name}' is closed`);
    if (this.worker?.alive) return this.worker;
    const worker = await OrtWorker.start(this.opts.init, this.name);
    if (this.closed) {
      await worker.terminate();
      throw internal(`instance '${this.name}' is closed`);
    }
    this.adopt(worker);
    return worker;
  }

  /**
   * One run for `requests`, timed as Triton's onnxruntime backend reports it: compute_input from here to
   * the start of onnxruntime's run (joining and copying the inputs, the hop to the worker, making ORT
   * tensors), compute_infer the run itself, compute_output from its end until every request's outputs are
   * cut out and ready to send (reading ORT's outputs, the hop back, splitting the batch). The core adds
   * the time it spends in send().
   */
  private async runGroup(requests: readonly BackendRequest[]): Promise<void> {
    const execStart = process.hrtime.bigint();
    try {
      const fetches = new Set<string>();
      for (const r of requests) for (const o of r.requestedOutputs) fetches.add(o);
      if (fetches.size === 0) {
        for (const r of requests) r.sender.send([], { final: true });
        return;
      }
      const feeds = this.buildFeeds(requests);
      const run = await this.run(feeds, [...fetches]);
      const perRequest = this.cutOutputs(requests, run.outputs.map(fromWire));
      const outputEnd = process.hrtime.bigint();
      const timings = {
        computeInputNs: nsBetween(execStart, run.runStart),
        computeInferNs: nsBetween(run.runStart, run.runEnd),
        computeOutputNs: nsBetween(run.runEnd, outputEnd),
      };
      requests.forEach((r, i) => {
        if (r.sender.done) return;
        r.reportTiming?.(timings);
        r.sender.send(perRequest[i], { final: true });
      });
    } catch (err) {
      const e = NereidError.from(err);
      for (const r of requests) if (!r.sender.done) r.sender.fail(e);
    }
  }

  private buildFeeds(requests: readonly BackendRequest[]): OrtWireTensor[] {
    const first = requests[0];
    if (requests.length === 1) {
      const lend = this.thread === 'event_loop';
      return [...first.inputs.values()].map((t) => toWire(t, lend));
    }
    return [...first.inputs.keys()].map((name) => {
      const parts = requests.map((r) => {
        const t = r.inputs.get(name);
        if (!t)
          throw internal(`request '${r.id}' lacks input '${name}' that other requests of its batch carry`);
        return t;
      });
      return toWire(concatBatch(parts), true);
    });
  }

  /** Each request's outputs: the batch's outputs cut along dim 0, only those it asked for. */
  private cutOutputs(requests: readonly BackendRequest[], outputs: readonly Tensor[]): Tensor[][] {
    if (requests.length === 1) {
      const r = requests[0];
      return [outputs.filter((o) => r.requestedOutputs.has(o.name))];
    }
    const sizes = requests.map((r) => r.batchSize);
    const pieces = outputs.map((o) => splitBatch(o, sizes));
    return requests.map((r, i) => pieces.map((p) => p[i]).filter((t) => r.requestedOutputs.has(t.name)));
  }
}
