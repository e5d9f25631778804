/**
 * Reads a stub's responses (RESPONSE frames, and the default-mode responses inside EXECUTE_DONE) into
 * tensors, strictly in arrival order, and hands each to its sink. One path for every response: in the
 * turn the frame arrived while outputs are inline and nothing earlier is still being read; after a
 * /dev/shm read otherwise, with the frames that arrive meanwhile queued behind it (a later frame, say a
 * request's final response, must not overtake an earlier one). The /dev/shm ranges read are handed back
 * to the stub (FREE) once the frame is done.
 *
 * A slow client's stream is held back per request (credit.ts), not here: the stub's socket carries
 * every request of the stub. It stops being read only while a long queue of frames waits for /dev/shm
 * reads, or for a stream whose stub sent past its credit while the stream is full (backPressure());
 * frames already read wait undecoded, and the stub's next send blocks in the kernel once the socket
 * buffer is full.
 */
import type { ResponseSender } from '../../backend-api/backend.js';
import { NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { MessageType, type ResponseIn } from './protocol.js';
import type { StubProcess } from './stub-process.js';
import { readInlineTensors, readTensors, type FreedRanges } from './tensors.js';

/** Frames waiting for a /dev/shm read before the stub's socket is no longer read. */
const MAX_CHAINED_FRAMES = 64;

export interface ResponseReaderSink {
  /** A response is about to be read (its request made progress). */
  arriving(r: ResponseIn): void;
  /** Its outputs, or why they could not be read. */
  deliver(r: ResponseIn, outputs: Tensor[] | NereidError): void;
}

/** One frame's responses being read. */
interface Job {
  readonly stub: StubProcess;
  readonly responses: readonly ResponseIn[];
  readonly blob: Buffer;
  readonly freed: FreedRanges;
  /** Called once every response was delivered, with the time spent reading outputs (if `timed`). */
  readonly then: ((readingNs: number) => void) | undefined;
  readonly timed: boolean;
  readingNs: number;
}

/** Nanoseconds from `a` to `b` (0 if the clock reads otherwise). */
export function nsBetween(a: bigint, b: bigint): number {
  return b > a ? Number(b - a) : 0;
}

export class ResponseReader {
  private chain: Promise<void> = Promise.resolve();
  /** Frames waiting in the chain: while there are any, later frames queue behind them. */
  private queued = 0;
  /** Why each stub's socket is not being read (full response queues, a long frame chain). */
  private readonly holds = new Map<StubProcess, Set<object>>();
  /** The hold key of a long frame chain. */
  private readonly chainHold = {};

  constructor(
    private readonly sink: ResponseReaderSink,
    private readonly name: string,
    private readonly log: Logger,
  ) {}

  /**
   * Reads one frame's responses in order; `then` runs after the last was delivered, with the time spent
   * reading outputs (the compute_output phase).
   */
  read(
    stub: StubProcess,
    responses: readonly ResponseIn[],
    blob: Buffer,
    then?: (readingNs: number) => void,
  ): void {
    const job: Job = { stub, responses, blob, freed: [], then, timed: then !== undefined, readingNs: 0 };
    if (this.queued > 0) {
      this.enqueue(stub, () => this.readFrom(job, 0));
      return;
    }
    const reading = this.readFrom(job, 0);
    if (reading !== undefined) this.enqueue(stub, () => reading);
  }

  /** Stop reading the stub until the request's queue has room (a stub that ignores its credit). */
  backPressure(stub: StubProcess, sender: ResponseSender): void {
    if (sender.whenWritable === undefined || this.holds.get(stub)?.has(sender) === true) return;
    this.hold(stub, sender);
    void sender.whenWritable().then(() => this.release(stub, sender));
  }

  /** Reads responses from `from` on; a promise when one of them waits for /dev/shm (the rest follow it). */
  private readFrom(job: Job, from: number): Promise<void> | undefined {
    for (let i = from; i < job.responses.length; i++) {
      const r = job.responses[i];
      this.sink.arriving(r);
      const start = job.timed ? process.hrtime.bigint() : 0n;
      let outputs: Tensor[] | undefined;
      try {
        outputs = readInlineTensors(r.outputs, job.blob);
      } catch (err) {
        this.sink.deliver(r, NereidError.from(err));
        continue;
      }
      if (outputs === undefined) return this.readShared(job, i, start);
      if (job.timed) job.readingNs += nsBetween(start, process.hrtime.bigint());
      this.sink.deliver(r, outputs);
    }
    if (job.freed.length > 0) job.stub.send(MessageType.Free, { ranges: job.freed });
    job.then?.(job.readingNs);
    return undefined;
  }

  /** Response `i`, whose outputs lie (partly) in /dev/shm, then the rest of the frame. */
  private async readShared(job: Job, i: number, start: bigint): Promise<void> {
    const r = job.responses[i];
    let outputs: Tensor[] | NereidError;
    try {
      outputs = await readTensors(r.outputs, job.blob, job.stub.files?.fromStub, job.freed);
      if (job.timed) job.readingNs += nsBetween(start, process.hrtime.bigint());
    } catch (err) {
      outputs = NereidError.from(err);
    }
    this.sink.deliver(r, outputs);
    await this.readFrom(job, i + 1);
  }

  private enqueue(stub: StubProcess, task: () => Promise<void> | undefined): void {
    this.queued++;
    if (this.queued >= MAX_CHAINED_FRAMES) this.hold(stub, this.chainHold);
    this.chain = this.chain
      .then(task)
      .catch((err: unknown) => {
        this.log.error(`instance '${this.name}': ${NereidError.from(err).message}`);
      })
      .finally(() => {
        this.queued--;
        if (this.queued < MAX_CHAINED_FRAMES / 2) this.release(stub, this.chainHold);
      });
  }

  /** Stops reading `stub` for `key` (several keys may hold it; reading resumes when none does). */
  private hold(stub: StubProcess, key: object): void {
    let keys = this.holds.get(stub);
    if (keys === undefined) {
      keys = new Set();
      this.holds.set(stub, keys);
    }
    keys.add(key);
    stub.pauseReading();
  }

  private release(stub: StubProcess, key: object): void {
    const keys = this.holds.get(stub);
    if (keys === undefined || !keys.delete(key)) return;
    if (keys.size > 0) return;
    this.holds.delete(stub);
    stub.resumeReading();
  }
}
