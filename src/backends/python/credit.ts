/**
 * Per-request flow control between the host and a decoupled model's stub (issue 33). One stub serves
 * every request of its instance over one socket, so back-pressure cannot be applied there: a host that
 * stopped reading the socket for one slow client stalled every other request of the stub. Instead each
 * request has a window of credit: the stub may send RESPONSE_WINDOW responses for it, and its
 * response_sender.send waits (that request's thread only) once they are spent, until the host grants
 * more with a CREDIT frame. The socket itself is always read.
 *
 * The host grants a request's credit back as its responses go into the request's queue of undelivered
 * responses (`--max-undelivered-responses`), GRANT_AT at a time, in one CREDIT frame per request at the
 * end of the event loop's turn (setImmediate) rather than at once: the stub writes a short stream's
 * responses in a burst that the host reads in one turn, and a stream that ended within it (its final
 * response came) is owed nothing. A CREDIT frame sent at once went out alone after the burst and woke a
 * stub already waiting for its next EXECUTE, for credit it would never use (issue 29: on vt_stream16,
 * 0.3-1.3 more writev on the host and 0.2-0.5 more recvfrom on the stub per request, perf stat).
 *
 * A response that leaves the queue full (`sender.full`) stops the grants, and the responses the stub
 * had credit for that arrive meanwhile are parked here in order, until the queue has room
 * (`sender.whenWritable()`); they are handed on then, and the credit follows. So a request whose client
 * reads nothing holds at most its queue's bound plus the window, and its model waits in send. A stream
 * that ended meanwhile (its client left, it failed) is cancelled on the stub instead (ledger.ts), which
 * ends the wait.
 *
 * A stub that sends past its credit (it has no business to) is read no further while the stream is
 * full (response-reader.ts, the socket-wide hold), so memory stays bounded whatever it does.
 */
import type { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type { BatchLedger, Flow, Inflight } from './ledger.js';
import { MessageType, type ResponseIn } from './protocol.js';

/** Responses a request may have sent and not been granted back (the stub's initial credit, INIT). */
export const RESPONSE_WINDOW = 32;
/**
 * Responses past its credit a request may send from the stub's asyncio thread (an `async def execute`
 * calling response_sender.send), where waiting for credit would stall every other coroutine of the stub:
 * the stub sends them anyway, up to this many, and fails the send beyond (python/nereid_stub/runtime.py).
 * They are parked here like the window's (INIT's response_overdraft).
 */
export const RESPONSE_OVERDRAFT = 256;
/** Credit is granted back this many responses at a time (one CREDIT frame per GRANT_AT responses). */
const GRANT_AT = RESPONSE_WINDOW / 4;

type Arrived = readonly [ResponseIn, Tensor[] | NereidError];

export class ResponseFlows {
  /** Requests owed a grant in this turn of the event loop, granted by flush(). */
  private readonly owing = new Map<number, Inflight>();
  private flushing: NodeJS.Immediate | undefined;

  /**
   * `hand`: gives one response to its request (the instance's delivery); `overflow`: the stub sent past
   * the request's credit while its queue is full (stop reading the stub until the queue has room).
   */
  constructor(
    private readonly ledger: BatchLedger,
    private readonly hand: (r: ResponseIn, outputs: Tensor[] | NereidError) => void,
    private readonly overflow: (f: Inflight) => void,
  ) {}

  /** A response the stub sent, in arrival order. */
  arrived(r: ResponseIn, outputs: Tensor[] | NereidError): void {
    const f = this.ledger.request(r.rid);
    const parked = f?.flow?.parked;
    if (f !== undefined && parked !== undefined) {
      parked.push([r, outputs]);
      // The window's responses, the overdraft and a final one fit; more means the stub ignored its credit.
      if (parked.length > RESPONSE_WINDOW + RESPONSE_OVERDRAFT + 1) this.overflow(f);
      return;
    }
    this.hand(r, outputs);
    if (f !== undefined) this.took(r.rid, f);
  }

  /**
   * A response of `f` went into its queue: owe its credit back, or stop granting while the queue is full
   * (then the list later responses are parked in is returned).
   */
  private took(rid: number, f: Inflight): Arrived[] | undefined {
    const sender = f.request.sender;
    // Ended (its final response, a failure): nothing more to grant.
    if (this.ledger.request(rid) !== f || sender.done) return undefined;
    const flow = (f.flow ??= { owed: 0, parked: undefined });
    flow.owed++;
    if (sender.full === true && sender.whenWritable !== undefined) {
      const parked: Arrived[] = (flow.parked = []);
      void sender.whenWritable().then(() => this.unpark(rid, f, flow));
      return parked;
    }
    if (flow.owed >= GRANT_AT) this.grant(rid, f);
    return undefined;
  }

  /** The queue has room (or the request ended): hand the parked responses on, then grant what they used. */
  private unpark(rid: number, f: Inflight, flow: Flow): void {
    const parked = flow.parked ?? [];
    flow.parked = undefined;
    for (let i = 0; i < parked.length; i++) {
      const [r, outputs] = parked[i];
      this.hand(r, outputs);
      const again = this.took(rid, f);
      if (again !== undefined) {
        // Full again: the rest waits for the next room.
        again.push(...parked.slice(i + 1));
        return;
      }
    }
    if (this.ledger.request(rid) !== f) return;
    // Its stream ended while it waited (the client left, the stream was failed): the model stops.
    if (f.request.sender.done) this.ledger.cancel(rid, f);
    else if (flow.owed > 0) this.grant(rid, f);
  }

  /** Owes `f` a grant of what it is owed then, sent at the end of this turn (see the top of the file). */
  private grant(rid: number, f: Inflight): void {
    this.owing.set(rid, f);
    this.flushing ??= setImmediate(this.flush);
  }

  /**
   * Sends each owed request its credit, unless it ended meanwhile (nothing to grant). Credit is only ever
   * owed for responses that went into the queue, so what the stub may send unasked stays within the
   * window also when the queue filled since. A request whose stream ended without its final response
   * (the client left, the stream was failed) is cancelled on the stub instead, which ends a wait for
   * credit there.
   */
  private readonly flush = (): void => {
    this.flushing = undefined;
    for (const [rid, f] of this.owing) {
      const flow = f.flow;
      if (this.ledger.request(rid) !== f || flow === undefined) continue;
      if (f.request.sender.done) {
        this.ledger.cancel(rid, f);
        continue;
      }
      if (flow.owed === 0) continue;
      f.batch.stub.send(MessageType.Credit, { rid, n: flow.owed });
      flow.owed = 0;
    }
    this.owing.clear();
  };
}
