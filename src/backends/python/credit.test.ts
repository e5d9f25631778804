// Per-request credit (credit.ts) with a real ledger and a stand-in for the stub's socket that records the
// frames the host sends: credit is granted at the end of the event loop's turn, one CREDIT frame per
// request for everything it is owed, never to a stream that ended within the turn (issue 29: a short
// stream's burst cost the host a writev and the stub a wake-up per request); a stream that ended without
// its final response is cancelled instead; credit follows only what went into the queue.
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { BackendRequest, ResponseSender, SendOptions } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import { ResponseFlows, RESPONSE_WINDOW } from './credit.js';
import { BatchLedger } from './ledger.js';
import { MessageType, type ResponseIn } from './protocol.js';
import type { StubProcess } from './stub-process.js';

/** Credit is granted back this many responses at a time (credit.ts GRANT_AT). */
const GRANT_AT = RESPONSE_WINDOW / 4;

/** The frames the host wrote to the stub, as [type, message]. */
type Sent = [number, unknown][];

/** A response queue that holds `cap` responses until take() (full at the cap, whenWritable waits). */
class Queue implements ResponseSender {
  readonly taken: boolean[] = [];
  queued = 0;
  done = false;
  private room: (() => void) | undefined;
  constructor(private readonly cap = Infinity) {}
  get full(): boolean {
    return !this.done && this.queued >= this.cap;
  }
  whenWritable(): Promise<void> {
    return this.full ? new Promise((resolve) => (this.room = resolve)) : Promise.resolve();
  }
  send(_outputs: readonly Tensor[], options: SendOptions): void {
    this.queued++;
    this.taken.push(options.final);
    if (options.final) this.done = true;
  }
  fail(_error: NereidError): void {
    this.done = true;
  }
  /** The reader took everything queued. */
  take(): void {
    this.queued = 0;
    this.room?.();
    this.room = undefined;
  }
}

function setup(sender: Queue): { flows: ResponseFlows; sent: Sent; rid: number; ledger: BatchLedger } {
  const sent: Sent = [];
  const stub = {
    alive: true,
    send: (type: number, message: unknown) => sent.push([type, message]),
  } as unknown as StubProcess;
  const ledger = new BatchLedger(true);
  const rid = ledger.takeRid();
  const request = { id: 'r', signal: new AbortController().signal, sender } as unknown as BackendRequest;
  ledger.open({ stub, requests: [request], rids: [rid], execStart: 0n, unpin: () => {}, resolve: () => {} });
  // The instance's delivery (instance.ts hand()): into the queue, a final response ends the request.
  const flows = new ResponseFlows(
    ledger,
    (r) => {
      const f = ledger.request(r.rid);
      if (f === undefined || f.request.sender.done) return;
      f.request.sender.send([], { final: r.final });
      if (r.final) ledger.finish(r.rid, f);
    },
    () => assert.fail('the stub never sends past its credit here'),
  );
  return { flows, sent, rid, ledger };
}

function response(rid: number, final = false): ResponseIn {
  return { rid, final, outputs: [], parameters: '', error: undefined, undeclared: undefined };
}

const credits = (sent: Sent): unknown[] => sent.filter(([t]) => t === MessageType.Credit).map(([, m]) => m);

describe('per-request credit of a decoupled Python model', () => {
  it('grants a stream that ends within the turn its responses arrived in nothing', async () => {
    const queue = new Queue();
    const { flows, sent, rid, ledger } = setup(queue);
    // vt_stream16: sixteen responses and the final flag, read in one turn.
    for (let i = 0; i < 16; i++) flows.arrived(response(rid), []);
    flows.arrived(response(rid, true), []);
    await nextTurn();
    await nextTurn();
    assert.equal(queue.taken.length, 17, 'every response was handed on');
    assert.equal(ledger.request(rid), undefined, 'the request ended');
    assert.deepEqual(sent, [], 'no frame went to the stub');
  });

  it('grants a live stream everything it is owed in one CREDIT frame at the end of the turn', async () => {
    const queue = new Queue();
    const { flows, sent, rid } = setup(queue);
    for (let i = 0; i < 3 * GRANT_AT; i++) flows.arrived(response(rid), []);
    assert.deepEqual(sent, [], 'nothing is sent within the turn');
    await nextTurn();
    assert.deepEqual(credits(sent), [{ rid, n: 3 * GRANT_AT }]);

    // Fewer than GRANT_AT in a later turn: owed, not granted yet; GRANT_AT more: granted together.
    for (let i = 0; i < GRANT_AT - 1; i++) flows.arrived(response(rid), []);
    await nextTurn();
    assert.equal(credits(sent).length, 1);
    for (let i = 0; i < GRANT_AT; i++) flows.arrived(response(rid), []);
    await nextTurn();
    assert.deepEqual(credits(sent), [
      { rid, n: 3 * GRANT_AT },
      { rid, n: 2 * GRANT_AT - 1 },
    ]);
  });

  it('cancels on the stub a stream that ended without its final response while it was owed credit', async () => {
    const queue = new Queue();
    const { flows, sent, rid } = setup(queue);
    for (let i = 0; i < GRANT_AT; i++) flows.arrived(response(rid), []);
    // The stream fails within the turn (--response-idle-timeout, the client left).
    queue.fail({} as NereidError);
    await nextTurn();
    assert.deepEqual(sent, [[MessageType.Cancel, { rid }]], 'a CANCEL, no CREDIT');
  });

  it('grants nothing while the reader takes nothing, and only what went into the queue as it reads', async () => {
    const queue = new Queue(GRANT_AT / 2);
    const { flows, sent, rid } = setup(queue);
    const granted = (): number => credits(sent).reduce<number>((n, m) => n + (m as { n: number }).n, 0);
    // The stub spends its whole window; the queue takes up to its bound, the rest is parked.
    for (let i = 0; i < RESPONSE_WINDOW; i++) flows.arrived(response(rid), []);
    await nextTurn();
    await nextTurn();
    assert.equal(queue.taken.length, GRANT_AT / 2, 'the queue took up to its bound');
    assert.equal(granted(), 0, 'no credit while the reader takes nothing');

    // The reader takes the queue now and then: the parked responses go in, in order, and the credit
    // granted never passes what went into the queue.
    for (let takes = 0; granted() < RESPONSE_WINDOW; takes++) {
      assert.ok(takes < 4 * RESPONSE_WINDOW, `the window comes back (granted ${granted()})`);
      queue.take();
      await nextTurn();
      await nextTurn();
      assert.ok(granted() <= queue.taken.length, `granted ${granted()} of ${queue.taken.length} queued`);
    }
    assert.equal(queue.taken.length, RESPONSE_WINDOW, 'every parked response was handed on');
    assert.equal(granted(), RESPONSE_WINDOW);
  });
});
