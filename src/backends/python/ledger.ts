/**
 * The batch ledger of one Python instance: which batches and requests its stubs hold, in what order
 * batches go out, and when each execute() settles. It owns no process and no timer but the cancellation
 * poll; the supervisor (supervisor.ts) arms execution timeouts on the batch the ledger says is running,
 * and whoever reads the stub's answers ends requests here.
 *
 * - Turns: execute() calls are numbered in call order and send their batches in that order (the contract
 *   for pipelined instances), though preparing one may wait (a stub being restarted, inputs written to
 *   /dev/shm) while a later one is ready at once.
 * - Settling: a default-mode batch settles when the stub reported the model's execute returned
 *   (EXECUTE_DONE) and every request of it has ended; a decoupled model's instance is free once execute
 *   returned, its streams may go on. Triton counts a batch the stub answered for as an execution, also
 *   when execute raised.
 * - Cancellation: a request whose AbortSignal fired is reported to its stub with a CANCEL frame
 *   (request.is_cancelled() in Python) within CANCEL_POLL_MS; so is one the host ended before the stub's
 *   final response (failed, or its client's stream ended), whose sends then no longer wait for credit
 *   (credit.ts).
 */
import type { BackendRequest, ExecuteResult } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import { MessageType, type ResponseIn } from './protocol.js';
import type { StubProcess } from './stub-process.js';

/** One request's flow control (credit.ts keeps it). */
export interface Flow {
  /** Responses taken into the request's queue since the last grant of credit. */
  owed: number;
  /** While the queue is full: the responses that arrived since, in order (undefined: not full). */
  parked: (readonly [ResponseIn, Tensor[] | NereidError])[] | undefined;
}

/** One request a stub holds, by its rid. */
export interface Inflight {
  readonly request: BackendRequest;
  readonly batch: Batch;
  /** The stub has been told this request was cancelled. */
  cancelSent: boolean;
  /** Its flow control (a decoupled model's request, once it sent a response: credit.ts). */
  flow: Flow | undefined;
}

export interface Batch {
  readonly id: number;
  /** The batch's requests, for the phase timings reported when the stub answers. */
  readonly requests: readonly BackendRequest[];
  /** process.hrtime.bigint() when execute() was called, and when the batch was sent to the stub. */
  readonly execStart: bigint;
  readonly sentAt: bigint;
  /** The stub the batch was sent to. */
  readonly stub: StubProcess;
  /** Requests of the batch that have not ended. */
  pending: number;
  /** EXECUTE_DONE arrived: the model's execute returned or raised. */
  pythonReturned: boolean;
  /** Settles execute(). */
  readonly resolve: (result: ExecuteResult) => void;
  /** The execution timeout (supervisor.ts), armed when the stub starts the batch; cleared on settling. */
  timer: NodeJS.Timeout | undefined;
  /** Frees the batch's space in the host->stub file (once every request of it has ended). */
  readonly unpin: () => void;
}

/** What a batch needs to be opened: its requests with the rids they were sent under, and its hold on shm. */
export interface OpenBatch {
  readonly stub: StubProcess;
  readonly requests: readonly BackendRequest[];
  readonly rids: readonly number[];
  readonly execStart: bigint;
  readonly unpin: () => void;
  readonly resolve: (result: ExecuteResult) => void;
}

/**
 * How often a running batch's requests are checked for cancellation. Polling instead of one 'abort'
 * listener per request: a listener costs more than a whole small request on a busy AbortSignal, and
 * cancellation only needs to reach request.is_cancelled() soon, not instantly.
 */
const CANCEL_POLL_MS = 10;

export class BatchLedger {
  private nextRid = 1;
  private nextBatch = 1;
  private readonly inflight = new Map<number, Inflight>();
  private readonly batches = new Map<number, Batch>();
  /** Polls open batches' requests for cancellation while there are any (see CANCEL_POLL_MS). */
  private cancelPoll: NodeJS.Timeout | undefined;
  /** execute() calls numbered in call order, the next to send its batch, and later ones ready first. */
  private nextTurn = 0;
  private turnToSend = 0;
  private readonly laterTurns = new Map<number, () => void>();

  constructor(private readonly decoupled: boolean) {}

  /** A new request number on this instance's stubs. */
  takeRid(): number {
    return this.nextRid++;
  }

  /** The turn of an execute() call; it must end with inTurn() (to send, or to give up). */
  takeTurn(): number {
    return this.nextTurn++;
  }

  /** Runs `send` once every execute() called before this one has sent its batch or given up. */
  inTurn(turn: number, send: () => void): void {
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

  /**
   * Nothing in the host->stub file is read any more: no batch is open and no other execute() is between
   * its call and its send (preparing, or prepared and waiting for its turn).
   */
  get quiet(): boolean {
    return this.batches.size === 0 && this.nextTurn - this.turnToSend === 1;
  }

  /** Some batch or request is still held by a stub. */
  get holdsAny(): boolean {
    return this.inflight.size > 0 || this.batches.size > 0;
  }

  request(rid: number): Inflight | undefined {
    return this.inflight.get(rid);
  }

  batch(id: number): Batch | undefined {
    return this.batches.get(id);
  }

  /** Registers a batch being sent to its stub now. */
  open(b: OpenBatch): Batch {
    const batch: Batch = {
      id: this.nextBatch++,
      requests: b.requests,
      execStart: b.execStart,
      sentAt: process.hrtime.bigint(),
      stub: b.stub,
      pending: b.requests.length,
      pythonReturned: false,
      resolve: b.resolve,
      timer: undefined,
      unpin: b.unpin,
    };
    this.batches.set(batch.id, batch);
    b.requests.forEach((request, i) => {
      this.inflight.set(b.rids[i], { request, batch, cancelSent: request.signal.aborted, flow: undefined });
    });
    // One poll for all of the instance's open batches, not a timer per batch.
    this.cancelPoll ??= setTimeout(() => this.pollCancellation(), CANCEL_POLL_MS);
    return batch;
  }

  /** The batch the stub runs now: the oldest whose execute has not returned (stubs run them in order). */
  running(): Batch | undefined {
    for (const b of this.batches.values()) if (!b.pythonReturned) return b;
    return undefined;
  }

  /** The open requests of `batch`, by rid. */
  *requestsOf(batch: Batch): IterableIterator<[number, Inflight]> {
    for (const entry of this.inflight) if (entry[1].batch === batch) yield entry;
  }

  /** The request has ended (its final response, an error, a reschedule). */
  finish(rid: number, f: Inflight): void {
    if (!this.inflight.delete(rid)) return;
    f.batch.pending--;
    this.settle(f.batch, false);
  }

  /** Fails the request (unless it already ended) and ends it; the stub is told it was cancelled. */
  fail(rid: number, f: Inflight, error: NereidError): void {
    if (!f.request.sender.done) f.request.sender.fail(error);
    this.cancel(rid, f);
    this.finish(rid, f);
  }

  /**
   * Tells the stub (once) that the request is cancelled: request.is_cancelled() turns true, and its
   * sends stop waiting for credit (whatever it sends now is dropped here).
   */
  cancel(rid: number, f: Inflight): void {
    if (f.cancelSent) return;
    f.cancelSent = true;
    if (f.batch.stub.alive) f.batch.stub.send(MessageType.Cancel, { rid });
  }

  /** Some request on `stub` has responses held back because its queue is full (credit.ts). */
  heldBack(stub: StubProcess): boolean {
    for (const f of this.inflight.values())
      if (f.batch.stub === stub && f.flow?.parked !== undefined) return true;
    return false;
  }

  /** Fails every open request of `batch`. */
  failBatch(batch: Batch, error: NereidError): void {
    for (const [rid, f] of this.requestsOf(batch)) this.fail(rid, f, error);
  }

  /** EXECUTE_DONE arrived for the batch: the model's execute returned or raised. */
  returned(batch: Batch): void {
    batch.pythonReturned = true;
    this.settle(batch, false);
  }

  /** Fails every request this instance (or only `stub`) still holds and settles those batches. */
  failAll(error: NereidError, stub?: StubProcess): void {
    for (const [rid, f] of this.inflight) if (!stub || f.batch.stub === stub) this.fail(rid, f, error);
    for (const b of [...this.batches.values()]) if (!stub || b.stub === stub) this.settle(b, true);
  }

  /** Settles the batch now, whatever is still open in it (its streams were failed). */
  close(batch: Batch): void {
    this.settle(batch, true);
  }

  private settle(batch: Batch, force: boolean): void {
    // Triton reports a batch's statistics once the stub answered for it, whatever execute did.
    const result: ExecuteResult = { executed: batch.pythonReturned };
    // A decoupled model's instance is free once its execute returned; its streams may go on.
    if (batch.pythonReturned && this.decoupled) batch.resolve(result);
    if (!force && !(batch.pythonReturned && batch.pending <= 0)) return;
    if (!this.batches.delete(batch.id)) return;
    // The cancellation poll is left to lapse by itself: re-arming it for every batch costs more.
    clearTimeout(batch.timer);
    batch.unpin();
    batch.resolve(result);
  }

  private pollCancellation(): void {
    this.cancelPoll = undefined;
    if (this.batches.size === 0) return;
    for (const [rid, f] of this.inflight) if (f.request.signal.aborted) this.cancel(rid, f);
    this.cancelPoll = setTimeout(() => this.pollCancellation(), CANCEL_POLL_MS);
  }
}
